"""structlog set-up: console text on a terminal, JSON lines when asked."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(json_lines: bool = False, level: str = "INFO") -> None:
    """Configure structlog once for the process."""
    renderer: structlog.typing.Processor
    if json_lines:
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def get_logger(**bound: object) -> structlog.typing.FilteringBoundLogger:
    """A logger with ``bound`` values (e.g. run_id, instance_id) attached."""
    return structlog.get_logger().bind(**bound)
