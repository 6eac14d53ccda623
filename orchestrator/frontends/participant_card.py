"""Whether a participant can be evaluated at all: its agent card answers 2xx with a JSON
object. ``swe-green run`` refuses a participant that fails this before any instance (exit 2);
``serve`` fails the assessment with the same reason, before any environment is built."""

from __future__ import annotations

import json
from typing import Any

import httpx

from orchestrator.participant.transport import tls_context

CARD_PATH = "/.well-known/agent-card.json"
CARD_TIMEOUT = 15.0


class CardUnusable(Exception):
    """The participant's agent card cannot be used; the message says why."""


def card_url(url: str) -> str:
    return url.rstrip("/") + CARD_PATH


def judge_card(url: str, status_code: int, body: bytes) -> dict[str, Any]:
    """The card, parsed; CardUnusable when it is not a 2xx answer holding a JSON object."""
    card = card_url(url)
    if not 200 <= status_code < 300:
        raise CardUnusable(f"The participant's agent card {card} answers HTTP {status_code}.")
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise CardUnusable(f"The participant's agent card {card} is not a JSON object.")
    return parsed


def unreachable(url: str, exc: Exception) -> CardUnusable:
    return CardUnusable(f"The participant at {url} does not answer ({type(exc).__name__}: {exc}).")


async def read_card(url: str, timeout: float = CARD_TIMEOUT) -> dict[str, Any]:
    """The participant's agent card; CardUnusable when it does not answer or is no card."""
    try:
        async with httpx.AsyncClient(timeout=timeout, verify=tls_context()) as http:
            response = await http.get(card_url(url))
    except httpx.HTTPError as exc:
        raise unreachable(url, exc) from None
    return judge_card(url, response.status_code, response.content)


def check_card_sync(url: str, timeout: float = CARD_TIMEOUT) -> dict[str, Any]:
    """:func:`read_card` for synchronous callers (the CLI)."""
    try:
        response = httpx.get(card_url(url), timeout=timeout, verify=tls_context())
    except httpx.HTTPError as exc:
        raise unreachable(url, exc) from None
    return judge_card(url, response.status_code, response.content)
