"""The transcript of a participant's work: ``transcript.jsonl``, one JSON object per event."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import IO, Any

_TRANSCRIPT_STRING_CAP = 20_000


class Transcript:
    """``transcript.jsonl``: one JSON object per event, long strings capped."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = path.open("a", encoding="utf-8")
        self._start = time.monotonic()

    def write(self, event: str, **fields: Any) -> None:
        record = {
            "event": event,
            "t": round(time.monotonic() - self._start, 3),
            "time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
            **_capped(fields),
        }
        self._file.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _capped(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _TRANSCRIPT_STRING_CAP:
        cut = len(value) - _TRANSCRIPT_STRING_CAP
        return value[:_TRANSCRIPT_STRING_CAP] + f"\n[... {cut} more characters not shown ...]"
    if isinstance(value, dict):
        return {k: _capped(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_capped(v) for v in value]
    return value
