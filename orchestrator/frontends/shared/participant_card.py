"""Whether a participant can be evaluated at all: its agent card answers 2xx with a JSON
object. ``swe-green run`` refuses a participant that fails this before any instance (exit 2);
``serve`` fails the assessment with the same reason, before any environment is built."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

import httpx

from orchestrator.participant.transport import (
    HostNotAllowed,
    allow_list_hook,
    host_allowed,
    tls_context,
)

CARD_PATH = "/.well-known/agent-card.json"
CARD_TIMEOUT = 15.0


class CardUnusable(Exception):
    """The participant's agent card cannot be used; the message says why."""


class CardOffAllowList(CardUnusable):
    """Reading the card led to a host off the allow-list of participant hosts, or the card
    names an interface on one: ``host`` is that host."""

    def __init__(self, message: str, host: str) -> None:
        super().__init__(message)
        self.host = host


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


def interface_urls(card: dict[str, Any]) -> list[str]:
    """Every URL a card names for talking to its agent (A2A 1.0 ``supportedInterfaces``, 0.3
    ``url`` and ``additionalInterfaces``)."""
    urls = [card.get("url")]
    for key in ("supportedInterfaces", "supported_interfaces", "additionalInterfaces"):
        entries = card.get(key)
        if isinstance(entries, list):
            urls += [entry.get("url") for entry in entries if isinstance(entry, dict)]
    return [url for url in urls if isinstance(url, str)]


async def read_card(
    url: str, timeout: float = CARD_TIMEOUT, allowed_hosts: Sequence[str] = ()
) -> dict[str, Any]:
    """The participant's agent card; CardUnusable when it does not answer or is no card, or
    (with ``allowed_hosts``) when reading it leads to another host (a redirect) or it names
    an interface on another host."""
    hooks = {"request": [allow_list_hook(allowed_hosts)]}
    try:
        async with httpx.AsyncClient(
            timeout=timeout, verify=tls_context(), event_hooks=hooks
        ) as http:
            response = await http.get(card_url(url))
    except HostNotAllowed as exc:
        raise CardOffAllowList(
            f"Reading the participant's agent card leads elsewhere: {exc}.",
            exc.request.url.host,
        ) from None
    except httpx.HTTPError as exc:
        raise unreachable(url, exc) from None
    card = judge_card(url, response.status_code, response.content)
    for named in interface_urls(card):
        if not host_allowed(named, allowed_hosts):
            raise CardOffAllowList(
                f"The participant's agent card names the interface {named[:200]}, whose host "
                f"is not on the green agent's allow-list of participant hosts "
                f"({', '.join(allowed_hosts)}).",
                urlparse(named).hostname or named[:200],
            )
    return card


def check_card_sync(url: str, timeout: float = CARD_TIMEOUT) -> dict[str, Any]:
    """:func:`read_card` for synchronous callers (the CLI)."""
    try:
        response = httpx.get(card_url(url), timeout=timeout, verify=tls_context())
    except httpx.HTTPError as exc:
        raise unreachable(url, exc) from None
    return judge_card(url, response.status_code, response.content)
