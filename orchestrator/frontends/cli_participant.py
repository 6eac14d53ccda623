"""The CLI's checks of a participant before any instance starts (its agent card answers),
and the name a run's leaderboard row gives it."""

from __future__ import annotations

from orchestrator.errors import UserError


def check_card(url: str) -> None:
    """Fail before any instance when the participant's agent card does not answer 2xx with a
    JSON object."""
    import httpx

    from orchestrator.participant.transport import tls_context

    card = url.rstrip("/") + "/.well-known/agent-card.json"
    fix = "start the participant, or check --participant."
    try:
        response = httpx.get(card, timeout=15, verify=tls_context())
    except httpx.HTTPError as exc:
        raise UserError(
            f"The participant at {url} does not answer ({exc.__class__.__name__}: {exc}).", fix
        ) from None
    if not response.is_success:
        raise UserError(
            f"The participant's agent card {card} answers HTTP {response.status_code}.", fix
        )
    try:
        parsed = response.json()
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise UserError(f"The participant's agent card {card} is not a JSON object.", fix)


def participant_name(spec: str) -> str:
    return spec if not spec.startswith("http") else spec.rstrip("/").rsplit("/", 1)[-1] or spec
