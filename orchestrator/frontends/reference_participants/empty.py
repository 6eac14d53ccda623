"""A participant that changes nothing: it answers "no change" at once."""

from __future__ import annotations

from typing import Any

from orchestrator.frontends.reference_participants.base import (
    Incoming,
    ReferenceParticipant,
    Reply,
    TurnStyle,
)
from orchestrator.participant.serving import CardInfo


class EmptyParticipant(ReferenceParticipant):
    def __init__(self, turn_style: TurnStyle = "message") -> None:
        super().__init__()
        self.turn_style = turn_style
        self.info = CardInfo(
            name="empty-participant",
            description="Answers every swe-sandbox task with no change (a floor for scores).",
        )

    async def respond(self, state: dict[str, Any], incoming: Incoming) -> Reply:
        return Reply.answer("no change")
