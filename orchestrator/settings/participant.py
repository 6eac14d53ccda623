"""Config of the participant's limits (phase 5, :mod:`orchestrator.participant`; its
``ParticipantLimits`` take their defaults from here)."""

from __future__ import annotations

from pydantic import Field

from orchestrator.settings.base import ComponentConfig


class ParticipantConfig(ComponentConfig):
    """The participant's limits (phase 5)."""

    max_tool_calls: int = Field(250, ge=1, description="Tool calls per instance.")
    tool_timeout: float = Field(180, gt=0, description="Seconds per tool call.")
    instance_timeout: float = Field(
        3600, gt=0, description="Seconds for the participant per instance."
    )
    participant_timeout: float = Field(
        900, gt=0, description="Seconds to wait for one reply from the participant."
    )
    max_reply_bytes: int = Field(
        20_000_000,
        ge=1,
        description="Bytes read from the participant per reply (its final answer included); "
        "past it the instance ends with participant_protocol.",
    )
