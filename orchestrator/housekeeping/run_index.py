"""Which runs are this user's: every run started with a data directory notes its run
directory there (``<data_dir>/run-dirs/<run id>``), and the run directories under
``runs_dir`` are too. ``inspect`` looks in these before another user's containers, and finds
a run directory by its run id wherever ``--output`` (or the nightly job) put it."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.atomic import atomic_write_text
from orchestrator.housekeeping.names import NOT_NAME

RUN_DIRS = "run-dirs"
CONFIG = "config.json"
SCAN_DEPTH = 3  # <runs_dir>/nightly/shard-1-of-5/<date>T<time>/config.json


def record_run_dir(data_dir: Path, run_id: str, run_dir: Path) -> None:
    """Note that run ``run_id`` of this data directory writes to ``run_dir`` (best effort:
    a read-only cache is fine)."""
    try:
        atomic_write_text(
            Path(data_dir) / RUN_DIRS / NOT_NAME.sub("_", run_id), str(Path(run_dir).resolve())
        )
    except OSError:
        pass


def _run_id_of(run_dir: Path) -> str:
    try:
        data = json.loads((run_dir / CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(data.get("run_id") or "") if isinstance(data, dict) else ""


def own_run_dirs(data_dir: Path, runs_dir: Path) -> dict[str, Path]:
    """This user's runs that still have their directory: run id → run directory."""
    found: dict[str, Path] = {}
    base = Path(runs_dir)
    for depth in range(1, SCAN_DEPTH + 1):
        for config in sorted(base.glob("/".join(["*"] * depth) + "/" + CONFIG)):
            run_id = _run_id_of(config.parent)
            if run_id:
                found.setdefault(run_id, config.parent)
    index = Path(data_dir) / RUN_DIRS
    for note in sorted(index.glob("*")) if index.is_dir() else []:
        try:
            run_dir = Path(note.read_text(encoding="utf-8").strip())
        except OSError:
            continue
        run_id = _run_id_of(run_dir)
        if run_id:
            found.setdefault(run_id, run_dir)
    return found
