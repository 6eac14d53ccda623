"""Config of the sandbox: each container's limits, the backend and its Docker policy
(:mod:`orchestrator.sandbox`; its :class:`~orchestrator.sandbox.Limits` take their defaults
from here)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from orchestrator.settings.base import ComponentConfig
from orchestrator.settings.sizes import disk_bytes

# the least memory Docker gives a container
_MIN_MEMORY = 6 << 20


class SandboxConfig(ComponentConfig):
    """The limits of every container and the backend that runs them."""

    cpus: float = Field(2.0, gt=0, description="CPUs per instance container.")
    memory: str = Field("6g", description="Memory limit per instance container.")
    pids_limit: int = Field(2048, ge=1, description="Max processes per instance container.")
    exec_output_limit: int = Field(
        1_000_000, ge=1, description="Bytes of stdout/stderr kept per exec; the rest is cut."
    )
    disk_limit: str = Field(
        "10g",
        description="Disk budget per participant and grading container (bytes, or 200m, 10g; "
        "0 for none): past it the container is stopped and the instance ends with disk_limit.",
    )
    disk_poll: float = Field(
        1.0,
        gt=0,
        description="Slowest poll of a container's disk use, seconds (faster near the budget).",
    )
    backend: Literal["docker", "local"] = Field(
        "docker",
        description="docker: one container per sandbox (the product). local: host "
        "directories and processes with no isolation at all, for tests and development only.",
    )
    docker_policy: Literal["full", "restricted"] = Field(
        "full",
        description="full: the whole Docker API (environment images cached by commit, the "
        "network switched by disconnect). restricted: what Amber's Docker gateway allows: no "
        "commit, build, import, image listing or network connect/disconnect; set-up runs per "
        "instance and its files are copied into containers created without a network.",
    )

    @field_validator("disk_limit")
    @classmethod
    def _disk_limit_is_a_size(cls, value: str) -> str:
        disk_bytes(value)
        return value

    @field_validator("memory")
    @classmethod
    def _memory_is_a_size(cls, value: str) -> str:
        if (disk_bytes(value) or 0) < _MIN_MEMORY:
            raise ValueError(f"not a memory size of 6m or more: {value!r} (e.g. 6g, 512m)")
        return value.strip()

    def disk_bytes(self) -> int | None:
        """The disk budget in bytes, or None for no budget."""
        return disk_bytes(self.disk_limit)
