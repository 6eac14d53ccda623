"""The participant a CLI run talks to: an A2A URL, or a reference participant started for
the run; checked before any instance starts."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from orchestrator.errors import UserError
from orchestrator.settings import Settings

# the reference participants, in the words of every command's help
PARTICIPANT_KINDS = "gold, empty, scripted (with --script), claude (needs ANTHROPIC_API_KEY)"


@contextlib.contextmanager
def participant_url(spec: str, settings: Settings, script: Path | None = None) -> Iterator[str]:
    """A participant URL; a reference participant's name starts it for the run."""
    if spec.startswith(("http://", "https://")):
        yield spec
        return
    from orchestrator.participant.reference import make_participant, running

    check_participant_spec(spec, settings, script)
    participant = make_participant(spec, dataset=settings.dataset.dataset, script=script)
    with running(participant, host=reference_host(settings)) as url:
        yield url


def check_participant_spec(spec: str, settings: Settings, script: Path | None) -> None:
    """A URL, or a reference participant whose requirements are met (before any run starts)."""
    import os

    from orchestrator.participant.reference import KINDS

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


def check_card(url: str) -> None:
    """Fail before any instance when the participant's agent card does not answer 2xx with a
    JSON object."""
    from orchestrator.frontends.participant_card import CardUnusable, check_card_sync

    try:
        check_card_sync(url)
    except CardUnusable as exc:
        raise UserError(str(exc), "start the participant, or check --participant.") from None


def participant_name(spec: str) -> str:
    return spec if not spec.startswith("http") else spec.rstrip("/").rsplit("/", 1)[-1] or spec
