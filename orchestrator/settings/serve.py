"""Config of the green agent's server (``swe-green serve``,
:mod:`orchestrator.frontends.server`)."""

from __future__ import annotations

from pydantic import Field

from orchestrator.settings.base import ComponentConfig
from orchestrator.settings.housekeeping import KeepPolicy


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
