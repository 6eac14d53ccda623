"""Config of the run driver: instances at once, the log, Ray (:mod:`orchestrator.run`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from orchestrator.settings.base import ComponentConfig

# the default concurrency: one instance per core, and at most one per this much memory
GB_PER_INSTANCE = 6


class RunConfig(ComponentConfig):
    """A run: how many instances at once, where, and its log."""

    concurrency: int | None = Field(
        None,
        ge=1,
        description="Instances at once; unset: one per core, at most one per "
        f"{GB_PER_INSTANCE} GB of memory.",
    )
    log_json: bool = Field(False, description="Log JSON lines instead of console text.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        "INFO", description="Log level: DEBUG, INFO, WARNING, ERROR or CRITICAL."
    )
    ray_address: str | None = Field(
        None,
        description="Run each instance on a node of this Ray cluster (`auto`, `host:6379` or "
        "`ray://host:10001`); unset: on this host. Needs `pip install 'swe-green[ray]'`.",
    )
    ray_max_retries: int = Field(
        2, ge=0, description="Ray: times an instance is started again after its node died."
    )
    ray_slots_resource: str = Field(
        "sandbox_slots",
        min_length=1,
        description="Ray: the custom resource a Docker host offers, one unit per instance at "
        "once (`ray start --resources '{\"sandbox_slots\": 2}'`).",
    )

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value
