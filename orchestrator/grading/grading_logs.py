"""The grading's log files under the instance's directory (``apply.log``, ``eval.sh``, ...),
by name, as :class:`~orchestrator.models.InstanceResult` lists them."""

from __future__ import annotations

from pathlib import Path

from orchestrator.atomic import atomic_write_text


class GradingLogs:
    """The grading's log files under ``log_dir`` (none when it is None), by name."""

    def __init__(self, log_dir: Path | None) -> None:
        self.log_dir = log_dir
        self.files: dict[str, str] = {}
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)

    def write(self, name: str, file: str, text: str) -> None:
        if self.log_dir is not None:
            atomic_write_text(self.log_dir / file, text, errors="replace")
            self.files[name] = str(self.log_dir / file)

    def note(self, name: str, file: str) -> None:
        """A file something else wrote."""
        if self.log_dir is not None:
            self.files[name] = str(self.log_dir / file)
