"""``setup.log``: the setup agent's every turn, tool call and token count, as JSON lines."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.log import get_logger

LOG_NAME = "setup.log"
LOG_FIELD_LIMIT = 4_000


def cap(text: str, limit: int = LOG_FIELD_LIMIT) -> str:
    return text if len(text) <= limit else f"{text[:limit]}[... {len(text) - limit} more chars]"


def _cap_values(value: Any, limit: int = LOG_FIELD_LIMIT) -> Any:
    if isinstance(value, str):
        return cap(value, limit)
    if isinstance(value, dict):
        return {k: _cap_values(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_cap_values(v, limit) for v in value]
    return value


_QUIET_EVENTS = {"turn", "tool_call"}  # every turn: debug level on the console


class SetupLog:
    """``setup.log``: one JSON object per line with ``ts`` and ``event``; echoed to structlog."""

    def __init__(self, log_dir: Path, **bound: object) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.path = log_dir / LOG_NAME
        self._file = self.path.open("a", encoding="utf-8")
        self._logger = get_logger(component="setup_llm", **bound)

    def write(self, event: str, **fields: Any) -> None:
        record = {"ts": datetime.now(UTC).isoformat(), "event": event, **_cap_values(fields)}
        self._file.write(json.dumps(record, default=str) + "\n")
        self._file.flush()
        summary = {
            k: cap(v, 200) if isinstance(v, str) else v
            for k, v in fields.items()
            if not isinstance(v, list | dict) and k not in ("prompt", "output", "text")
        }
        level = "debug" if event in _QUIET_EVENTS else "info"
        getattr(self._logger, level)(f"setup_llm.{event}", **summary)

    def close(self) -> None:
        self._file.close()
