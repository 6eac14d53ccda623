"""The one factory of participants: :func:`open_participant` makes the
:class:`~orchestrator.participant.protocol.Participant` a user names (an A2A URL, a reference
participant started for the run, or a predictions file), checked before any instance
starts."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from orchestrator.errors import UserError
from orchestrator.participant.predictions import Predictions
from orchestrator.participant.protocol import (
    A2AParticipant,
    Participant,
    PredictionsParticipant,
)
from orchestrator.settings import Settings


@contextlib.contextmanager
def open_participant(
    spec: str | None,
    settings: Settings,
    *,
    script: Path | None = None,
    predictions: Predictions | None = None,
) -> Iterator[Participant]:
    """The participant of a run, for the run's duration: ``predictions`` when given, else
    ``spec``: an A2A URL, or a reference participant's name (its server runs until the
    ``with`` ends)."""
    if predictions is not None:
        yield PredictionsParticipant(predictions=predictions)
        return
    spec = spec or ""
    if spec.startswith(("http://", "https://")):
        yield A2AParticipant(url=spec)
        return
    from orchestrator.frontends.reference_participants import make_participant, running

    check_participant_spec(spec, settings, script)
    reference = make_participant(spec, dataset=settings.dataset.dataset, script=script)
    with running(reference, host=reference_host(settings)) as url:
        yield A2AParticipant(url=url)


def check_participant_spec(spec: str, settings: Settings, script: Path | None) -> None:
    """A URL, or a reference participant whose requirements are met (before any run starts)."""
    from orchestrator.frontends.reference_participants import KINDS

    if spec.startswith(("http://", "https://")):
        return
    if spec not in KINDS:
        raise UserError(
            f"{spec!r} is neither a URL nor a reference participant.",
            f"pass an http(s) URL or one of: {', '.join(KINDS)}.",
        )
    if spec == "scripted" and script is None:
        raise UserError("The scripted participant needs a script.", "pass --script FILE.")
    if spec == "claude" and not (
        settings.setup_agent.anthropic_key() or os.environ.get("ANTHROPIC_API_KEY")
    ):
        raise UserError(
            "The claude participant needs an Anthropic API key.",
            "set ANTHROPIC_API_KEY (or SWE_GREEN_ANTHROPIC_API_KEY), or pick another participant.",
        )


def reference_host(settings: Settings) -> str:
    """Where a reference participant listens: loopback, or on a Ray cluster the address of
    this host that the other nodes reach."""
    address = settings.run.ray_address or ""
    if not address or address.split("://")[-1].startswith(("127.", "localhost")):
        return "127.0.0.1"
    from ray.util import get_node_ip_address

    return get_node_ip_address()
