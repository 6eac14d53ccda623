"""The run directory on disk.

Layout::

    <run>/config.json                      the run's configuration
    <run>/results.json                     the leaderboard file (DESIGN "Results")
    <run>/instances/<instance_id>/         one directory per instance:
        result.json                        its InstanceResult
        patch.diff, transcript.jsonl, test_output.txt, setup.log, ...
    <run>/swebench/                        the same results in the official harness's layout
                                           (orchestrator.run.official_layout)

Every file goes through :mod:`orchestrator.atomic`: a whole file atomically (a temporary file
in the same directory, then ``os.replace``), so a reader or a resumed run never sees half a
file; a log that grows while the run goes (``setup.log``) by appends, and the logs held open
for the whole run (``run.log``, ``transcript.jsonl``, the setup agent's log) line by line.
``tests/test_run_dir_writes.py`` holds the reviewed list of writers that do not go through it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from orchestrator.atomic import atomic_write_bytes, atomic_write_text, read_cached
from orchestrator.log import get_logger
from orchestrator.models import InstanceResult

CONFIG_FILE = "config.json"
LEADERBOARD_FILE = "results.json"
INSTANCES_DIR = "instances"
RESULT_FILE = "result.json"

_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def _check_name(kind: str, name: str) -> str:
    if not _SAFE_NAME.fullmatch(name) or ".." in name:
        raise ValueError(f"unsafe {kind} for a file name: {name!r}")
    return name


def relative_logs(instance_dir: Path, logs: dict[str, str]) -> dict[str, str]:
    """``logs`` with each path inside ``instance_dir`` relative to it. A relative path is one
    relative to the instance directory already, unless it names a file under it from the
    working directory (``runs/<run>/instances/<id>/apply.log``). Others are kept as given."""
    base = instance_dir.resolve()
    relative = {}
    for label, value in logs.items():
        candidate = Path(value)
        try:
            relative[label] = candidate.resolve().relative_to(base).as_posix()
        except (ValueError, OSError):
            relative[label] = value
    return relative


class RunDir:
    """A run's directory: configuration, per-instance results and logs, leaderboard file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    @property
    def config_path(self) -> Path:
        return self.path / CONFIG_FILE

    @property
    def leaderboard_path(self) -> Path:
        return self.path / LEADERBOARD_FILE

    def write_config(self, config: dict[str, Any]) -> Path:
        atomic_write_text(self.config_path, json.dumps(config, indent=2, default=str) + "\n")
        return self.config_path

    def read_config(self) -> dict[str, Any]:
        """The run's configuration; empty when none was written (or it cannot be read)."""
        return read_cached(self.config_path, json.loads, "run config") or {}

    def instance_dir(self, instance_id: str) -> Path:
        """The instance's directory (created). Raises ValueError for an unsafe id."""
        path = self.path / INSTANCES_DIR / _check_name("instance id", instance_id)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def result_path(self, instance_id: str) -> Path:
        return self.instance_dir(instance_id) / RESULT_FILE

    def write_result(self, result: InstanceResult) -> Path:
        """Write ``result.json``; its ``logs`` paths become relative to the instance
        directory (a path given relative to the working directory or absolute too)."""
        path = self.result_path(result.instance_id)
        logs = relative_logs(path.parent, result.logs)
        if logs != result.logs:
            result = result.model_copy(update={"logs": logs})
        atomic_write_text(path, result.model_dump_json(indent=2) + "\n")
        return path

    def write_text(self, instance_id: str, name: str, text: str) -> Path:
        """Write a file such as ``patch.diff`` into the instance's directory."""
        path = self.instance_dir(instance_id) / _check_name("file name", name)
        atomic_write_text(path, text)
        return path

    def write_under(self, relative: str, data: str | bytes) -> Path:
        """Write a file at ``relative`` (``/``-separated; no part empty, ``.`` or ``..``) under
        the run directory, such as the official layout's ``swebench/...`` files (whose names
        are the participant's id, as the official harness writes them)."""
        parts = relative.split("/")
        if any(part in ("", ".", "..") or "\0" in part for part in parts):
            raise ValueError(f"unsafe path under the run directory: {relative!r}")
        path = self.path.joinpath(*parts)
        if isinstance(data, str):
            atomic_write_text(path, data)
        else:
            atomic_write_bytes(path, data)
        return path

    def _result_files(self) -> list[Path]:
        return sorted((self.path / INSTANCES_DIR).glob(f"*/{RESULT_FILE}"))

    def load_results(self) -> list[InstanceResult]:
        """Every instance result, sorted by instance id; unreadable files are logged, skipped."""
        results = []
        for path in self._result_files():
            try:
                results.append(InstanceResult.model_validate_json(path.read_bytes()))
            except (OSError, ValidationError) as exc:
                get_logger().warning("unreadable instance result", path=str(path), error=str(exc))
        return sorted(results, key=lambda result: result.instance_id)

    def finished_ids(self) -> set[str]:
        """Ids of the instances that have a result (what a resumed run skips)."""
        return {result.instance_id for result in self.load_results()}
