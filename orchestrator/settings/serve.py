"""Config of the green agent's server (``swe-green serve``,
:mod:`orchestrator.frontends.server.green_agent`)."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from orchestrator.settings.base import ComponentConfig
from orchestrator.settings.housekeeping import KeepPolicy

# the request's config keys that can spend more of the operator's resources than its own
# settings (longer timeouts, more tool calls, a set-up that calls the paid LLM API, validation
# the operator turned off); see orchestrator.frontends.server.request_policy
REQUESTER_OVERRIDES = (
    "setup_strategy", "instance_timeout", "tool_timeout", "test_timeout", "participant_timeout",
    "max_tool_calls", "validate", "wider_tests",
)  # fmt: skip


def split_keys(value: str | None) -> list[str]:
    """The names of a comma- or space-separated list."""
    return [part for part in re.split(r"[,\s]+", value or "") if part]


class ServeConfig(ComponentConfig):
    """The green agent (`swe-green serve`)."""

    serve_token: str | None = Field(
        None,
        description="serve: require 'Authorization: Bearer <token>' on A2A calls (card stays "
        "public); off when unset.",
    )
    serve_allowed_hosts: str = Field(
        "",
        description="serve: participant hosts allowed, comma-separated globs "
        "(e.g. '127.0.0.1,*.internal'); empty = any host.",
    )
    serve_insecure: bool = Field(
        False,
        description="serve: allow a non-loopback address without a token or an allow-list "
        "(anyone reaching the port may start assessments and make the agent fetch any URL).",
    )
    serve_keep_containers: KeepPolicy = Field(
        "never", description="serve: which participant containers stay (keep_containers)."
    )
    serve_max_kept_containers: int = Field(
        10, ge=0, description="serve: kept containers of assessments, at most; oldest go first."
    )
    serve_stop_timeout: float = Field(
        120.0,
        gt=0,
        le=3600,
        description="serve: seconds a stop (SIGTERM, Ctrl-C) waits for the assessments in "
        "progress to be canceled and their containers removed; what is left then is reaped "
        "at the next start.",
    )
    serve_allowed_overrides: str = Field(
        "",
        description="serve: request config keys allowed to ask for more than this server's "
        "own settings (comma-separated, among " + ", ".join(REQUESTER_OVERRIDES) + "; "
        "setup_strategy llm/auto calls a paid LLM API); empty = none: such a request is "
        "rejected.",
    )

    @field_validator("serve_allowed_overrides")
    @classmethod
    def _known_keys(cls, value: str) -> str:
        unknown = [key for key in split_keys(value) if key not in REQUESTER_OVERRIDES]
        if unknown:
            raise ValueError(
                f"unknown key(s) {', '.join(unknown)}; choose among "
                + ", ".join(REQUESTER_OVERRIDES)
            )
        return value
