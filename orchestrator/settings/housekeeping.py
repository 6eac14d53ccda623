"""Config of housekeeping's kept containers: which participant and set-up containers stay for
inspection, and how many (:mod:`orchestrator.housekeeping.kept`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from orchestrator.settings.base import ComponentConfig

KeepPolicy = Literal["on_failure", "always", "never"]


class HousekeepingConfig(ComponentConfig):
    """Which containers stay (stopped) for inspection, and the caps on them."""

    keep_containers: KeepPolicy = Field(
        "on_failure",
        description="Which participant containers stay (stopped) for inspection; they keep "
        "what the participant wrote, at most the disk budget. on_failure keeps none for an "
        "empty patch (nothing to learn from).",
    )
    max_kept_per_run: int = Field(
        20, ge=0, description="Kept containers of one run, at most; past it none is kept."
    )
    max_kept_per_host: int = Field(
        100,
        ge=0,
        description="Kept containers on the engine, at most: the oldest of finished runs go "
        "first; when only those of runs in progress remain, none more is kept.",
    )
