"""Phase 5: dispatch to the participant. :func:`dispatch` hands an instance to a
:class:`~.protocol.Participant` (an A2A agent or a predictions file). The A2A client
(:mod:`.client`, with the ``swe-sandbox`` protocol of :mod:`.wire`) answers the agent's tool
calls with the sandbox tools (:mod:`orchestrator.tools.tools_host`). The reference
participants, programs that talk to us over A2A, are a front end
(:mod:`orchestrator.frontends.reference_participants`)."""

from __future__ import annotations

from orchestrator.models import Instance
from orchestrator.participant.client import ParticipantOutcome
from orchestrator.participant.protocol import Participant, Workspace


async def dispatch(
    participant: Participant, instance: Instance, workspace: Workspace
) -> ParticipantOutcome:
    """Phase 5: the participant works on ``instance`` in ``workspace`` until it answers or
    a limit ends its work. Never raises: a failure is an outcome with a reason."""
    return await participant.solve(instance, workspace)
