"""Starting a run: its id, its directory and ``config.json``; one way for every front end.

The CLI (``run``, ``validate``, ``demo``) and the A2A server start runs the same way: a run id
``<kind>-<UTC timestamp>-<8 hex>`` (unique, safe for paths and container labels), a run
directory under ``runs_dir`` unless one is given, and a ``config.json`` holding the run id,
where the run came from, the participant's id, the instances and the effective settings
(secrets left out), the host and swe-green's version, plus what the front end needs to
resume or explain the run. The data directory notes the run directory
(:mod:`orchestrator.housekeeping.run_index`): the user's own runs, found by their id.
"""

from __future__ import annotations

import datetime as dt
import socket
import uuid
from pathlib import Path
from typing import Any

from orchestrator.context.run_context import RunContext
from orchestrator.context.run_dir import RunDir
from orchestrator.housekeeping.run_index import record_run_dir
from orchestrator.sandbox import SandboxBackend
from orchestrator.settings import Settings


def new_run_id(kind: str) -> str:
    """``<kind>-<UTC timestamp>-<8 hex>``, e.g. ``a2a-20260101-120000-1a2b3c4d``."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{kind}-{stamp}-{uuid.uuid4().hex[:8]}"


def product_version() -> str:
    """swe-green's installed version, "?" when it is not installed as a package."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("swe-green")
    except PackageNotFoundError:
        return "?"


def start_run(
    settings: Settings,
    backend: SandboxBackend,
    *,
    kind: str,
    run_id: str | None = None,
    run_dir: Path | None = None,
    config: dict[str, Any] | None = None,
) -> RunContext:
    """The context of a new (or, with ``run_id``/``run_dir``, resumed) run; ``config``
    (``None``: none is written) goes to ``config.json`` with the run id and the settings."""
    run_id = run_id or new_run_id(kind)
    ctx = RunContext(
        settings, backend, run_id, RunDir(run_dir or settings.storage.runs_dir / run_id)
    )
    if config is not None:
        record_run_dir(settings.storage.data_dir, run_id, ctx.run_dir.path)
        settings_record = settings.flat(secrets=False)
        ctx.run_dir.write_config(
            {
                "run_id": run_id,
                **config,
                "host": socket.gethostname(),
                "version": product_version(),
                "settings": settings_record,
            }  # fmt: skip
        )
    return ctx
