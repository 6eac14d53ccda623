"""Logging: structlog events through one stdlib logger, so that where lines go can change
while a run is going (handlers are looked up when a line is written, not when a logger is
bound).

- Outside a run the lines go to stderr: console text, or JSON lines with ``--log-json``.
- During ``run``/``demo``/``validate`` (:func:`run_log`) they go to ``<run>/run.log`` as JSON
  lines, and to stderr only with ``-v``/``--log-json``: the terminal shows the progress.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import structlog

LOGGER_NAME = "swe_green"
RUN_LOG = "run.log"

_SHARED: list[structlog.typing.Processor] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.processors.TimeStamper(fmt="iso"),
]
_verbose = False  # echo a run's log lines to stderr too


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (rich's live display swaps it, so that
    lines print above the progress bar instead of through it)."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:  # the base class assigns it; ignored
        pass


def _formatter(json_lines: bool, colors: bool = False) -> logging.Formatter:
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if json_lines
        else structlog.dev.ConsoleRenderer(colors=colors)
    )
    return structlog.stdlib.ProcessorFormatter(
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
        foreign_pre_chain=_SHARED,
    )


def _logger() -> logging.Logger:
    return logging.getLogger(LOGGER_NAME)


def configure_logging(
    json_lines: bool = False,
    level: str = "INFO",
    file: TextIO | None = None,
    *,
    verbose: bool = False,
) -> None:
    """Configure the process's logging: lines at ``level`` and above go to ``file`` (default
    stderr) as console text, or JSON lines. ``verbose`` (or ``json_lines``) keeps them on
    stderr during a run too (see :func:`run_log`)."""
    global _verbose
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_SHARED,
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
        logger_factory=lambda *_: _logger(),
        cache_logger_on_first_use=False,
    )
    logger = _logger()
    logger.setLevel(logging.getLevelName(level.upper()))
    logger.propagate = False
    for handler in list(logger.handlers):
        if getattr(handler, "swe_green_console", False):
            logger.removeHandler(handler)
            handler.close()
    console: logging.Handler = logging.StreamHandler(file) if file else _StderrHandler()
    colors = file is None and sys.stderr.isatty() and not json_lines
    console.setFormatter(_formatter(json_lines, colors))
    console.swe_green_console = True  # type: ignore[attr-defined]
    logger.addHandler(console)
    _verbose = verbose or json_lines


@contextlib.contextmanager
def run_log(run_dir: str | Path) -> Iterator[Path]:
    """While the block runs, log lines go to ``<run_dir>/run.log`` (JSON lines, appended),
    and not to the console unless logging is verbose."""
    if not any(getattr(h, "swe_green_console", False) for h in _logger().handlers):
        configure_logging()
    path = Path(run_dir) / RUN_LOG
    path.parent.mkdir(parents=True, exist_ok=True)
    logger = _logger()
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(_formatter(json_lines=True))
    muted = [] if _verbose else [h for h in logger.handlers if getattr(h, "swe_green_console", 0)]
    for console in muted:
        logger.removeHandler(console)
    logger.addHandler(handler)
    try:
        yield path
    finally:
        logger.removeHandler(handler)
        handler.close()
        for console in muted:
            logger.addHandler(console)


def get_logger(**bound: object) -> structlog.typing.FilteringBoundLogger:
    """A logger with ``bound`` values (e.g. run_id, instance_id) attached."""
    return structlog.get_logger().bind(**bound)
