"""``egohorizon export-adapter RUN_DIR``: a run's checkpoint as a plain PEFT adapter folder."""

from __future__ import annotations

import argparse

from egohorizon.commands._args import out_dir


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export-adapter", help="convert a run's checkpoint (Lightning or DeepSpeed ZeRO) to a PEFT adapter",
        description="Convert a training run's checkpoint into a plain PEFT adapter folder "
                    "(adapter_config.json, adapter_model.safetensors, tokenizer, prompt files, export.json) "
                    "that PeftModel.from_pretrained loads onto the base model and eval.py ckpt=... evaluates. "
                    "Reads Lightning .ckpt files and DeepSpeed ZeRO-2/3 checkpoint folders (consolidated with "
                    "DeepSpeed's zero_to_fp32). The model is rebuilt from <run>/config.yaml.")
    parser.add_argument("run_dir", nargs="?", default=None,
                        help="the run folder (holds config.yaml and checkpoints/); optional with --ckpt inside it")
    parser.add_argument("--ckpt", default=None,
                        help="the checkpoint (file or ZeRO folder; absolute or relative to the run folder); "
                             "default: what the run would resume from (the newer of checkpoints/last.ckpt "
                             "and hpc_ckpt_<n>.ckpt)")
    parser.add_argument("--out", type=out_dir, default=None,
                        help="adapter folder to write (default: <checkpoint>.adapter beside it); with --merge, "
                             "the merged model folder (default: <checkpoint>.merged beside it)")
    parser.add_argument("--merge", action="store_true",
                        help="also merge the adapter into its base (bfloat16) and write a full transformers "
                             "folder that vLLM serves as a model (adapters with vision-tower LoRA; "
                             "docs/scale-out.md); the adapter itself goes to <checkpoint>.adapter")
    parser.add_argument("--base", dest="base_path", default=None,
                        help="the base model (hub id or folder) when the one the checkpoint records has moved")
    parser.add_argument("--force", action="store_true",
                        help="replace an adapter (or merged) folder this command wrote from another checkpoint or "
                             "base (never a folder it did not write)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from egohorizon.checkpoints import default_export_dir, find_checkpoint, run_dir_of
    from egohorizon.errors import ConfigError
    from egohorizon.run.export import claim_export, export_run_adapter

    if args.run_dir is None and args.ckpt is None:
        raise ConfigError("export-adapter: give a run folder, or --ckpt")
    merged = None
    if args.merge:  # both folders are claimed before any model loads
        checkpoint_path = find_checkpoint(args.run_dir, args.ckpt)
        run_dir = Path(args.run_dir) if args.run_dir is not None else run_dir_of(checkpoint_path)
        adapter = default_export_dir(checkpoint_path)
        # The merged folder first: a refused --out leaves the run's adapter folder untouched.
        merged = claim_export(Path(args.out) if args.out else adapter.with_suffix(".merged"), checkpoint_path,
                              run_dir, args.base_path, args.force, merged_from=adapter)
        claim_export(adapter, checkpoint_path, run_dir, args.base_path, args.force)
    folder = export_run_adapter(args.run_dir, args.ckpt, None if args.merge else args.out, args.base_path,
                                force=args.force)
    info = json.loads((folder / "export.json").read_text())
    print(f"adapter: {folder}")
    print(f"from {info['kind']} checkpoint {info['checkpoint']} (global step {info['global_step']})")
    if merged is not None:
        from egohorizon.run.export import merge_adapter

        merge_adapter(folder, merged, args.base_path)
        print(f"merged model (bfloat16): {merged}")
    return 0
