"""From the command's options to a ``CaptionJob``: which model, which prompt, which runner.

``--model`` is a trained adapter (a ``*.adapter`` folder, a ``.ckpt`` saved by train.py beside its
adapter, or a run folder: its best adapter), any local VLM (hub id or folder), or, with ``--base-url``,
the model name a server knows. An adapter brings its own prompt file (the one it was trained with),
its base model, its frame count, its token budget and its decoding: beam width, and the closed answer set
(``answer_set.json`` beside the adapter, ``egohorizon.llm.answer_set``) when it was trained with
``model.generation.answer_set=train``, so the job decodes as validation and test did. Options given
explicitly win (``--no-answer-set`` decodes freely).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from egohorizon.errors import ConfigError
from egohorizon.pipelines.caption.job import CaptionJob
from egohorizon.pipelines.caption.settings import CaptionSettings

log = logging.getLogger(__name__)

DEFAULT_FRAMES = 8
DEFAULT_MAX_NEW_TOKENS = 256


@dataclass
class ModelChoice:
    model: str
    base_url: str | None = None
    adapter: Path | None = None
    adapter_meta: dict[str, Any] = field(default_factory=dict)
    answer_set: Any = None  # the egohorizon.llm.answer_set.AnswerSet decoded within (use_answer_set)


def _looks_like_adapter(path: Path) -> bool:
    return path.suffix == ".ckpt" or (path / "adapter_config.json").is_file() or (path / "checkpoints").is_dir()


# How to train an adapter for each job that loads one (what the refusal of another task's adapter says).
TRAIN_HINT = {"caption": "train.py experiment=caption_...", "abstract": "train.py task=abstract experiment=abstract_..."}


def choose_model(model: str, base_url: str | None = None, task: str | None = None) -> ModelChoice:
    """``task``: the job's task; an adapter trained for another one is refused before anything loads
    (a forecast adapter's prompt file lacks the caption prompt's fields: it failed in a DataLoader
    worker, naming missing prompt values)."""
    if base_url:
        return ModelChoice(model=model, base_url=base_url)
    path = Path(model).expanduser()
    if path.exists() and _looks_like_adapter(path):
        # checkpoints.py is the one torch-free reader of adapters and run folders
        from egohorizon.checkpoints import read_adapter_meta, resolve_adapter

        adapter = resolve_adapter(str(path)).resolve()
        choice = ModelChoice(model=model, adapter=adapter, adapter_meta=read_adapter_meta(adapter))
        if task is not None:
            require_task(choice, task)
        return choice
    return ModelChoice(model=model)


def adapter_task(adapter: Path, meta: dict[str, Any]) -> str | None:
    """The task an adapter was trained for: its ``egohorizon_adapter.json`` says (``task``, adapters
    saved since issue 22), else its run's ``config.yaml`` (``eval_task``), else the name of the prompt
    it was trained with (``forecast``, ``forecast_visual``, ``caption``, ...); None when none tells."""
    if meta.get("task"):
        return str(meta["task"])
    # checkpoints.py is the one torch-free reader of adapters and run folders
    from egohorizon.checkpoints import recorded_task

    try:
        task = recorded_task(adapter)
    except Exception:  # noqa: BLE001 (a damaged config.yaml: the prompt name still tells)
        task = None
    if task:
        return task
    name = str((meta.get("prompt") or {}).get("name") or "")
    return next((t for t in ("forecast", "caption", "abstract", "qa", "hands") if name.startswith(t)), None)


def require_task(choice: ModelChoice, task: str) -> None:
    trained = adapter_task(choice.adapter, choice.adapter_meta)
    if trained is None or trained == task:
        return
    given = Path(choice.model).expanduser().resolve()
    where = f"{choice.model}" if given == choice.adapter else f"in {choice.model} ({choice.adapter})"
    article = "an" if task[0] in "aeiou" else "a"
    raise ConfigError(f"--model: the adapter {where} was trained for the {trained} task; {task} needs {article} "
                      f"{task} adapter ({TRAIN_HINT.get(task, f'train.py task={task}')})")


def use_answer_set(choice: ModelChoice, wanted: bool | None):
    """The answer set to decode within (None: free text), read from beside the adapter (and kept in
    ``choice.answer_set``); ``wanted`` None: as the adapter was scored."""
    from egohorizon.llm.answer_set import ANSWER_SET_FILE, read_answer_set

    trained_with = (choice.adapter_meta.get("generation") or {}).get("answer_set") == "train"
    if wanted is False or (wanted is None and not trained_with):
        return None
    if choice.adapter is None:
        raise ConfigError("--answer-set: only a trained adapter brings an answer set (answer_set.json)")
    choice.answer_set = read_answer_set(choice.adapter)  # ConfigError naming the file when it is corrupt
    if choice.answer_set is None:
        raise ConfigError(
            f"{choice.adapter / ANSWER_SET_FILE}: missing. The adapter was validated decoding within its training "
            "windows' answers (model.generation.answer_set=train); write the file with `egohorizon caption "
            f"answer-set {choice.adapter}` (docs/captioning.md), or pass --no-answer-set to decode freely")
    return choice.answer_set


def beam_width(choice: ModelChoice, num_beams: int | None, temperature: float) -> int:
    """``num_beams`` if given, else the adapter's beam width when it decoded by beam search."""
    if num_beams is not None:
        if num_beams < 1:
            raise ConfigError(f"--num-beams: expected at least 1, got {num_beams}")
        return num_beams
    generation = choice.adapter_meta.get("generation") or {}
    if temperature > 0 or generation.get("strategy") != "beam":
        return 1
    return int(generation.get("num_beams") or generation.get("num_candidates") or 1)


def caption_settings(choice: ModelChoice, *, prompt: str | None = None, frames_per_window: int | None = None,
                     crop: bool | None = None, max_new_tokens: int | None = None, temperature: float = 0.0,
                     seed: int = 0, jpeg_quality: int = 90, answer_set: bool | None = None,
                     num_beams: int | None = None) -> CaptionSettings:
    from egohorizon.prompts import load_prompt
    from egohorizon.prompts.caption import CAPTION_PROMPT_NAME

    meta = choice.adapter_meta
    if prompt is None and choice.adapter is not None:
        name = (meta.get("prompt") or {}).get("name", CAPTION_PROMPT_NAME)
        own = choice.adapter / f"{name}.txt"
        if not own.is_file():
            raise ConfigError(f"{choice.adapter}: the adapter's prompt file {own.name} is missing; pass --prompt")
        prompt = str(own)
    loaded = load_prompt(prompt or CAPTION_PROMPT_NAME)
    data = meta.get("data") or {}
    generation = meta.get("generation") or {}
    answers = use_answer_set(choice, answer_set)
    if frames_per_window is None:
        frames_per_window = data.get("frames_per_window") or DEFAULT_FRAMES
        if choice.adapter is not None and not data.get("frames_per_window"):
            log.warning("%s does not record the frames per window it was trained with (adapters saved before "
                        "they did); using %d: pass --frames-per-window to render windows as it saw them",
                        choice.adapter, frames_per_window)
    if frames_per_window < 1:
        raise ConfigError(f"--frames-per-window: expected at least 1, got {frames_per_window}")
    return CaptionSettings(
        prompt=loaded.path, prompt_name=loaded.name, prompt_version=loaded.version,
        frames_per_window=frames_per_window,
        with_crop=(data.get("crops") is not False) if crop is None else crop,
        max_new_tokens=max_new_tokens or generation.get("max_new_tokens") or DEFAULT_MAX_NEW_TOKENS,
        temperature=temperature, seed=seed, jpeg_quality=jpeg_quality,
        num_beams=beam_width(choice, num_beams, temperature),
        answer_set=answers.summary() if answers is not None else None)


def make_runner(choice: ModelChoice, *, api_key_env: str = "OPENAI_API_KEY", concurrency: int = 8,
                timeout: float = 120.0, retries: int = 3, batch_size: int = 8, workers: int = 1,
                device: str | None = None, dtype: str | None = None, base_model: str | None = None,
                answers=None):
    """The runner and its backend for ``choice``; ``answers``: the AnswerSet to decode within (local only)."""
    if choice.base_url:
        from egohorizon.llm.openai_http import OpenAIChatBackend
        from egohorizon.pipelines.caption.runners import HTTPRunner

        backend = OpenAIChatBackend(choice.base_url, choice.model, api_key_env=api_key_env, timeout=timeout,
                                    max_retries=retries, max_concurrency=concurrency)
        return HTTPRunner(backend, concurrency=concurrency)
    from egohorizon.llm.vision_local import LocalVLMBackend
    from egohorizon.pipelines.caption.runners import LocalRunner

    if choice.adapter is not None:
        backend = LocalVLMBackend(base_model, adapter=str(choice.adapter), device=device, dtype=dtype,
                                  batch_size=batch_size)
        backend.set_answer_set(answers.answers if answers is not None else None)
    else:
        backend = LocalVLMBackend(choice.model, device=device, dtype=dtype, batch_size=batch_size)
    return LocalRunner(backend, batch_size=batch_size, workers=workers)


def provenance(choice: ModelChoice, runner, settings: CaptionSettings) -> dict[str, Any]:
    """Written on every result line and every event: model id, adapter, prompt name and version, seed, and
    the digest of the answer set decoding was restricted to (None: free text), and a local model's weights
    dtype (None: a server), so a folder never mixes float32 and bfloat16 captions."""
    return {"model": runner.backend.model_id, "adapter": str(choice.adapter) if choice.adapter else None,
            "prompt": {"name": settings.prompt_name, "version": settings.prompt_version}, "seed": settings.seed,
            "answer_set": settings.answer_set["digest"] if settings.answer_set else None,
            "dtype": runner.backend.generation_record().get("dtype")}


def make_job(shards: str | Path, out: str | Path, model: str, *, base_url: str | None = None,
             shard_slice: tuple[int, int] | None = None, max_failures: float = 0.05, retry_failed: bool = False,
             progress: bool | None = None, settings: dict[str, Any] | None = None,
             runner: dict[str, Any] | None = None) -> CaptionJob:
    choice = choose_model(model, base_url, task="caption")
    chosen = caption_settings(choice, **(settings or {}))
    made = make_runner(choice, **(runner or {}), answers=choice.answer_set if chosen.answer_set else None)
    return CaptionJob(shards, out, made, chosen, provenance(choice, made, chosen), shard_slice=shard_slice,
                      max_failures=max_failures, retry_failed=retry_failed, progress=progress)
