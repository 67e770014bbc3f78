"""Each command declares what it writes (``declare_output``) and ``cli.main`` claims it through
``egohorizon.owned_output`` before the command's handler runs: a refusal comes before any model loads or any
file is read at length (issue 36). Only the standard library at module level (``--help`` stays fast).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass

# Settings that change how a command runs, not what it writes: a rerun with another value resumes.
RUN_ONLY = frozenset({"concurrency", "timeout", "workers", "progress", "retry_failed", "max_failures", "limit",
                      "shard_slice", "api_key_env", "batch_size", "device", "verbose", "as_json", "cache",
                      "allow_failed_days", "wandb_online", "wandb_project", "no_wandb", "cache_dir"})
_NOT_SETTINGS = frozenset({"handler", "owned", "command"})


@dataclass(frozen=True)
class Output:
    command: str  # "bench run": named in the marker and in messages
    dest: str = "out"  # the argument holding the folder or file written
    inputs: tuple[str, ...] = ()  # arguments naming input files or folders (one or a list each)
    kind: str = "folder"  # or "file"
    flag: str = "--force"  # the argument that lets the command replace its own output of other inputs
    lock_by: str | None = None  # an argument whose value gives parallel parts their own lock (a slice)
    run_only: frozenset[str] = RUN_ONLY
    legacy: tuple[str, ...] = ()  # files that show the command's output written before markers existed


def declare_output(parser: argparse.ArgumentParser, *, dest: str = "out", inputs: Iterable[str] = (),
                   kind: str = "folder", flag: str = "--force", add_flag: bool = True,
                   lock_by: str | None = None, run_only: Iterable[str] = (), legacy: Iterable[str] = ()) -> None:
    """Declares the folder (or file) ``parser``'s command writes; adds ``--force`` for a folder."""
    if kind == "folder" and add_flag:
        parser.add_argument(flag, dest=flag.lstrip("-").replace("-", "_"), action="store_true",
                            help="replace this command's own earlier output made from other inputs (never a "
                                 "folder it did not write)")
    parser.set_defaults(owned=Output(parser.prog.removeprefix("egohorizon "), dest, tuple(inputs), kind, flag,
                                     lock_by, RUN_ONLY | frozenset(run_only), tuple(legacy)))


def _paths(args: argparse.Namespace, names: Iterable[str]) -> list[str]:
    found: list[str] = []
    for name in names:
        value = getattr(args, name, None)
        values = value if isinstance(value, (list, tuple)) else [value]
        found += [str(v) for v in values if v not in (None, "")]
    return found


def claim_output(args: argparse.Namespace) -> None:
    """Claims the declared output of the parsed command (nothing when it declares none or is not given)."""
    spec: Output | None = getattr(args, "owned", None)
    out = getattr(args, spec.dest, None) if spec else None
    if spec is None or out is None:
        return
    from egohorizon.owned_output import check_output_file, claim_folder, describe_inputs

    option = "--" + spec.dest.replace("_", "-")
    roles = {name: _paths(args, [name]) for name in spec.inputs}
    inputs = [path for paths in roles.values() for path in paths]
    if spec.kind == "file":
        check_output_file(out, inputs, option)
        return
    force_dest = spec.flag.lstrip("-").replace("-", "_")
    skipped = _NOT_SETTINGS | spec.run_only | {spec.dest, force_dest, *spec.inputs}
    settings = {k: v for k, v in sorted(vars(args).items()) if k not in skipped}
    lock = str(getattr(args, spec.lock_by, None) or "").replace("/", "-of-") if spec.lock_by else ""
    claim_folder(out, spec.command, describe_inputs(settings, roles), input_paths=inputs,
                 force=bool(getattr(args, force_dest, False)), flag=spec.flag, option=option, lock_suffix=lock,
                 legacy=spec.legacy)
