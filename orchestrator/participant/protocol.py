"""Phase 5's component: a :class:`Participant` is whatever solves an instance.

- :class:`A2AParticipant`: an agent served over A2A (a URL), working in its own container
  through the sandbox tools (the reference participants are such servers, started for a run);
- :class:`PredictionsParticipant`: a predictions file; it answers each instance with its
  patch and works in no container.

:func:`orchestrator.frontends.cli.participant_factory.open_participant` makes one from what
a user names. A participant travels with each instance's job (to a Ray worker too): both
kinds are pydantic models, and :meth:`Participant.for_instance` cuts one to what a single
instance needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from orchestrator.models import Instance
from orchestrator.participant.client import ParticipantLimits, ParticipantOutcome, run_participant
from orchestrator.participant.endings import EndedBy
from orchestrator.participant.predictions import Predictions
from orchestrator.tools.tools_host import ToolRunner


class Workspace(BaseModel):
    """What phase 5 gives a participant: the tools of its container (None: it has none), its
    limits, and where its transcript goes."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    tools: ToolRunner | None
    limits: ParticipantLimits
    transcript: Path


@runtime_checkable
class Participant(Protocol):
    """Solves instances: phase 5's other side."""

    @property
    def works_in_container(self) -> bool:
        """Whether it needs a container of the instance and its tools (else phase 5 starts
        none, and grading's container is the only one)."""
        ...

    def for_instance(self, instance_id: str) -> Participant:
        """What one instance's job carries (a predictions file: that instance's patch only)."""
        ...

    async def solve(self, instance: Instance, workspace: Workspace) -> ParticipantOutcome:
        """Work on ``instance``; never raises: a failure is an outcome with a reason."""
        ...


class A2AParticipant(BaseModel):
    """An agent at an A2A URL (protocol ``swe-sandbox`` v1, :mod:`.client`)."""

    model_config = ConfigDict(frozen=True)

    url: str
    # globs: no request goes to another host (the card's interface URL, a redirect)
    allowed_hosts: tuple[str, ...] = ()

    @property
    def works_in_container(self) -> bool:
        return True

    def for_instance(self, instance_id: str) -> A2AParticipant:
        return self

    async def solve(self, instance: Instance, workspace: Workspace) -> ParticipantOutcome:
        assert workspace.tools is not None, "an A2A participant works with the sandbox tools"
        return await run_participant(
            self.url, instance, workspace.tools, workspace.limits, workspace.transcript,
            allowed_hosts=self.allowed_hosts,
        )  # fmt: skip


class PredictionsParticipant(BaseModel):
    """A predictions file: each instance's patch as the file gives it (none: an empty one)."""

    model_config = ConfigDict(frozen=True)

    predictions: Predictions

    @property
    def works_in_container(self) -> bool:
        return False

    def for_instance(self, instance_id: str) -> PredictionsParticipant:
        return PredictionsParticipant(predictions=self.predictions.only(instance_id))

    async def solve(self, instance: Instance, workspace: Workspace) -> ParticipantOutcome:
        patch = self.predictions.patches.get(instance.instance_id) or ""
        return ParticipantOutcome(
            patch=patch, ended_by=EndedBy.ANSWER, participant_name=self.predictions.model
        )
