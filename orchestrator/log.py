"""structlog set-up: console text on a terminal, JSON lines when asked."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog


def configure_logging(
    json_lines: bool = False, level: str = "INFO", file: TextIO | None = None
) -> None:
    """Configure structlog for the process: to ``file`` (default stderr)."""
    renderer: structlog.typing.Processor
    if json_lines:
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=file is None and sys.stderr.isatty())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=file or sys.stderr),
        cache_logger_on_first_use=False,
    )


def get_logger(**bound: object) -> structlog.typing.FilteringBoundLogger:
    """A logger with ``bound`` values (e.g. run_id, instance_id) attached."""
    return structlog.get_logger().bind(**bound)
