"""The CLI's checks of a participant before any instance starts (its agent card answers),
and the name a run's leaderboard row gives it."""

from __future__ import annotations

from orchestrator.errors import UserError

# the reference participants, in the words of every command's help
PARTICIPANT_KINDS = "gold, empty, scripted (with --script), claude (needs ANTHROPIC_API_KEY)"


def check_card(url: str) -> None:
    """Fail before any instance when the participant's agent card does not answer 2xx with a
    JSON object."""
    from orchestrator.frontends.shared.participant_card import CardUnusable, check_card_sync

    try:
        check_card_sync(url)
    except CardUnusable as exc:
        raise UserError(str(exc), "start the participant, or check --participant.") from None


def participant_name(spec: str) -> str:
    return spec if not spec.startswith("http") else spec.rstrip("/").rsplit("/", 1)[-1] or spec
