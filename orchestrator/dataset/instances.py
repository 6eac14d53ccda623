"""Load SWE-bench instances (Hugging Face dataset or local files) and select a subset.

Sources, through the ``datasets`` library:

- a Hugging Face dataset name (the settings ``dataset`` and ``dataset_split``);
- a local ``.jsonl``, ``.json`` or ``.parquet`` file;
- a directory of such files (searched recursively; when some file names start with the split
  name, e.g. ``data/test-00000-of-00001.parquet``, only those are read, else all of them);
- a SWE-bench 5.x task repository, a directory or a git URL (:mod:`.task_repo`);
- an alias of SWE-bench 5.x's: ``verified``, ``full``, ``lite`` (:mod:`.task_repo`).

The split only picks files or the hub split; a single local file is read whole. Loaded lists
are cached per source within the process (keyed by the files' modification times).

Selection (:func:`select`): ``ids`` (exact instance ids), ``pattern`` (a shell-style
``fnmatch`` glob on ``instance_id``, e.g. ``django__*``), ``repo`` (``owner/name`` or just
``name``) are intersected; then ``count`` keeps the first N; then ``shard="i/n"`` (1-based,
``1 <= i <= n``) keeps the i-th of n contiguous, near-equal slices (sizes differ by at most
one), so the n shards partition exactly what the other fields selected. The result is always
in dataset order.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import difflib
import fnmatch
import functools
import os
import re
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationError, field_validator

from orchestrator.dataset.task_repo import (
    clone_task_repo,
    is_git_url,
    is_task_repo,
    load_task_rows,
    resolve_alias,
)
from orchestrator.errors import UserError
from orchestrator.models import Instance
from orchestrator.settings import DatasetConfig, Settings
from orchestrator.settings.base import default_of

# the split read when none is given: the setting's default
DEFAULT_SPLIT: str = default_of(DatasetConfig, "dataset_split")

_SUFFIX_BUILDER = {".jsonl": "json", ".json": "json", ".parquet": "parquet"}
_LOCAL_FIX = (
    "pass a local file with --dataset PATH (or SWE_GREEN_DATASET=PATH), e.g. "
    "swe-bench-verified.jsonl."
)


class Selection(BaseModel):
    """Which instances to run; shared by the CLI and the A2A request config."""

    model_config = ConfigDict(extra="forbid")

    ids: list[str] | None = Field(None, description="Exact instance ids (list or comma-separated).")
    pattern: str | None = Field(None, description="fnmatch glob on instance_id, e.g. 'django__*'.")
    repo: str | None = Field(None, description="Repository, 'owner/name' or 'name'.")
    count: PositiveInt | None = Field(None, description="Keep the first N selected instances.")
    shard: str | None = Field(None, description="'i/n': the i-th (1-based) of n slices.")
    created_after: str | None = Field(
        None, description="Only instances created after this time (ISO 8601, e.g. 2025-06-01)."
    )

    @field_validator("ids", mode="before")
    @classmethod
    def _split_ids(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part for part in re.split(r"[,\s]+", value) if part]
        return value

    @field_validator("created_after")
    @classmethod
    def _check_time(cls, value: str | None) -> str | None:
        return None if value is None else iso_time(value)

    @field_validator("shard")
    @classmethod
    def _check_shard(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_shard(value)
            except UserError as exc:
                raise ValueError(str(exc)) from None
        return value


def parse_shard(shard: str) -> tuple[int, int]:
    """``"i/n"`` -> ``(i, n)`` with 1 <= i <= n; a UserError otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", shard)
    if not match:
        raise UserError(f"Shard {shard!r} is not of the form i/n.", "write e.g. --shard 2/4.")
    index, total = int(match[1]), int(match[2])
    if total < 1 or not 1 <= index <= total:
        raise UserError(
            f"Shard {shard!r} is out of range.", "shards are 1-based: i/n with 1 <= i <= n."
        )
    return index, total


_LOAD_LOCK = threading.Lock()


def load_instances(source: str, split: str = DEFAULT_SPLIT) -> list[Instance]:
    """All instances of ``source`` (hub name or alias, file, directory, task repository or its
    git URL), in dataset order (a task repository's: by instance id)."""
    if not Path(source).expanduser().exists():
        source = resolve_alias(source)
    path = clone_task_repo(source) if is_git_url(source) else Path(source).expanduser()
    # `datasets` is not safe to call from two threads at once (its progress bars race)
    with _LOAD_LOCK:
        if path.is_dir() and is_task_repo(path):
            return list(_validate(load_task_rows(path, split)))
        if path.exists():
            files = _data_files(path, split)
            stamp = tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files)
            return list(_load_local(stamp, split))
        if _looks_like_path(source):
            raise UserError(f"Dataset file {source} does not exist.", "check the path.")
        return list(_load_hub(source, split))


def official_source(source: str, split: str = DEFAULT_SPLIT) -> tuple[str, str | None]:
    """How the official harness names ``source``: (its dataset, its task repository or None).
    An alias as the alias (the harness resolves it to its own name), a local file (or a
    directory's one file) by its absolute path, a task repository (directory or git URL) as
    both; a hub name as given."""
    if not Path(source).expanduser().exists():
        resolved = resolve_alias(source)
        if resolved != source:
            return source.strip().lower(), None
        return source, (source if is_git_url(source) else None)
    path = Path(source).expanduser().resolve()
    if path.is_dir() and is_task_repo(path):
        return str(path), str(path)
    files = _data_files(path, split)
    return str(files[0] if len(files) == 1 else path), None


def select(
    instances: list[Instance],
    ids: Iterable[str] | None = None,
    pattern: str | None = None,
    repo: str | None = None,
    count: int | None = None,
    shard: str | None = None,
    created_after: str | None = None,
) -> list[Instance]:
    """Filter ``instances`` (see the module docstring for the semantics), in dataset order."""
    chosen = instances
    if created_after is not None:
        chosen = [i for i in chosen if created_later(i, created_after)]
    if ids is not None:
        wanted = set(ids)
        known = {i.instance_id for i in instances}
        unknown = sorted(wanted - known)
        if unknown:
            raise UserError(
                f"Unknown instance id(s): {', '.join(unknown)}.{_suggest(unknown, known)}",
                "check the ids against the dataset.",
            )
        chosen = [i for i in chosen if i.instance_id in wanted]
    if pattern is not None:
        if not any(fnmatch.fnmatchcase(i.instance_id, pattern) for i in instances):
            raise UserError(
                f"No instance id matches the pattern {pattern!r}.",
                "use a shell-style glob on instance_id, e.g. 'django__django-11*'.",
            )
        chosen = [i for i in chosen if fnmatch.fnmatchcase(i.instance_id, pattern)]
    if repo is not None:
        repos = sorted({i.repo for i in instances})
        if not any(_repo_matches(r, repo) for r in repos):
            raise UserError(
                f"No instance is from repository {repo!r}.", f"use one of: {', '.join(repos)}."
            )
        chosen = [i for i in chosen if _repo_matches(i.repo, repo)]
    if count is not None:
        if count < 1:
            raise UserError(f"Count {count} must be at least 1.", "pass a positive count.")
        chosen = chosen[:count]
    if shard is not None:
        index, total = parse_shard(shard)
        size, extra = divmod(len(chosen), total)
        start = (index - 1) * size + min(index - 1, extra)
        chosen = chosen[start : start + size + (1 if index <= extra else 0)]
    return list(chosen)


def resolve(settings: Settings, selection: Selection) -> list[Instance]:
    """The instances ``selection`` picks from the configured dataset (created after the
    setting ``created_after`` unless the selection names its own time)."""
    instances = load_instances(settings.dataset.dataset, settings.dataset.dataset_split)
    chosen = selection.model_dump()
    chosen["created_after"] = chosen["created_after"] or settings.dataset.created_after
    return select(instances, **chosen)


def iso_time(value: str) -> str:
    """``value`` when it is an ISO 8601 time (a ValueError naming it otherwise)."""
    try:
        _moment(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO 8601 time, e.g. 2025-06-01") from None
    return value


def _moment(text: str) -> dt.datetime:
    moment = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def created_later(instance: Instance, after: str) -> bool:
    """Whether ``instance`` was created after ``after`` (ISO 8601; a date is its midnight,
    UTC); an instance without a readable ``created_at`` is not."""
    try:
        return instance.created_at is not None and _moment(instance.created_at) > _moment(after)
    except ValueError:
        return False


def _looks_like_path(source: str) -> bool:
    """Not a hub name (``name`` or ``owner/name``): a missing local path."""
    return (
        Path(source).suffix.lower() in _SUFFIX_BUILDER
        or source.startswith((".", "/", "~"))
        or source.count("/") > 1
        or os.sep != "/"
        and os.sep in source
    )


def _repo_matches(repo: str, wanted: str) -> bool:
    return repo == wanted or repo.split("/")[-1] == wanted


def _suggest(unknown: list[str], known: set[str]) -> str:
    hints = []
    for name in unknown[:5]:
        close = difflib.get_close_matches(name, known, n=1)
        if close:
            hints.append(f"{name} -> {close[0]}")
    return f" Did you mean: {', '.join(hints)}?" if hints else ""


def _data_files(path: Path, split: str) -> list[Path]:
    if path.is_file():
        if path.suffix.lower() not in _SUFFIX_BUILDER:
            raise UserError(
                f"Dataset file {path} is not .jsonl, .json or .parquet.", "convert it or rename it."
            )
        if _is_empty(path):
            raise UserError(f"Dataset file {path} is empty.", _LOCAL_FIX)
        return [path.resolve()]
    # the directory's own files and those of its data/ (a Hugging Face snapshot's layout),
    # not the whole tree: a project directory with a venv is not a dataset
    files = sorted(
        p.resolve()
        for p in (*path.glob("*"), *path.glob("data/*"))
        if p.is_file() and p.suffix.lower() in _SUFFIX_BUILDER and not p.name.startswith(".")
        and not _is_empty(p)
    )  # fmt: skip
    if not files:
        raise UserError(f"Directory {path} holds no .jsonl, .json or .parquet file.", _LOCAL_FIX)
    in_split = [p for p in files if re.match(rf"{re.escape(split)}([-_.]|$)", p.name)]
    return in_split or files


def _is_empty(path: Path) -> bool:
    """A file with no data: no bytes, or (JSON lines/JSON) only white space."""
    try:
        if path.stat().st_size == 0:
            return True
        if path.suffix.lower() != ".parquet" and path.stat().st_size < 4096:
            return not path.read_text(errors="replace").strip()
    except OSError:
        return False
    return False


@functools.lru_cache(maxsize=16)
def _load_local(stamp: tuple[tuple[str, int, int], ...], split: str) -> tuple[Instance, ...]:
    import datasets

    by_builder: dict[str, list[str]] = {}
    for name, _, _ in stamp:
        by_builder.setdefault(_SUFFIX_BUILDER[Path(name).suffix.lower()], []).append(name)
    rows: list[dict[str, Any]] = []
    for builder, files in by_builder.items():
        try:
            with _quiet_datasets():
                ds = datasets.load_dataset(builder, data_files={split: files}, split=split)
        except Exception as exc:  # datasets raises many kinds; all mean "cannot read this file"
            raise UserError(
                f"Cannot read dataset file(s) {', '.join(files)}: {_one_line(exc)}",
                "check that each line/row is a SWE-bench instance object.",
            ) from exc
        rows.extend(ds.to_list())
    return _validate(rows)


@functools.lru_cache(maxsize=4)
def _load_hub(name: str, split: str) -> tuple[Instance, ...]:
    import datasets
    from huggingface_hub import constants

    if not constants.HF_HUB_OFFLINE and not _reachable(constants.ENDPOINT):
        raise UserError(
            f"Cannot load dataset {name!r}: the Hugging Face hub ({constants.ENDPOINT}) "
            "is not reachable.",
            _LOCAL_FIX,
        )
    try:
        with _quiet_datasets():
            ds = datasets.load_dataset(name, split=split)
    except Exception as exc:  # network, auth, missing dataset or split
        raise UserError(
            f"Cannot load dataset {name!r} split {split!r}: {_one_line(exc)}", _LOCAL_FIX
        ) from exc
    return _validate(ds.to_list())


def _reachable(endpoint: str) -> bool:
    import httpx

    try:
        httpx.head(endpoint, timeout=5.0)
    except (httpx.HTTPError, OSError):
        return False
    return True


@contextlib.contextmanager
def _quiet_datasets() -> Iterator[None]:
    """Silence the datasets progress bars for the duration of one load."""
    import datasets

    was_disabled = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            datasets.enable_progress_bars()


def _validate(rows: list[dict[str, Any]]) -> tuple[Instance, ...]:
    instances: list[Instance] = []
    seen: set[str] = set()
    for number, row in enumerate(rows, start=1):
        row = {
            k: v.isoformat() if isinstance(v, dt.datetime | dt.date) else v for k, v in row.items()
        }
        label = f"{number} ({row.get('instance_id') or 'no instance_id'})"
        try:
            instance = Instance.model_validate(row)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(part) for part in err["loc"]) or "?"
            raise UserError(
                f"Dataset row {label} is malformed: field {field!r}: {err['msg']}.",
                "fix that row or pass another dataset with SWE_GREEN_DATASET / --dataset.",
            ) from None
        if instance.instance_id in seen:
            raise UserError(
                f"Dataset row {label} repeats instance id {instance.instance_id}.",
                "remove the duplicate row.",
            )
        seen.add(instance.instance_id)
        instances.append(instance)
    return tuple(instances)


def _one_line(exc: BaseException) -> str:
    text = str(exc.__cause__ or exc) or type(exc).__name__
    return " ".join(text.split())[:300]
