"""Who may use the green agent, and how much of the host: the host's instance slots shared
by every assessment, the allow-list of participant hosts, and the bearer token."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import re
from collections.abc import AsyncIterator

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

# the card's path for clients older than A2A 0.3 (0.3 and 1.x read agent-card.json)
LEGACY_CARD_PATH = "/.well-known/agent.json"
CARD_PATHS = ("/.well-known/agent-card.json", LEGACY_CARD_PATH)


class HostSlots:
    """The host's instance slots, shared by every assessment of this server.

    Each instance holds one slot from its start to its result; an assessment whose instances
    wait for one is queued (and says so). ``capacity`` is the server's ``concurrency``.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.in_use = 0
        self.waiting = 0
        self._semaphore: asyncio.Semaphore | None = None

    @property
    def busy(self) -> bool:
        return self.in_use + self.waiting >= self.capacity

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.capacity)
        self.waiting += 1
        try:
            await self._semaphore.acquire()
        finally:
            self.waiting -= 1
        self.in_use += 1
        try:
            yield
        finally:
            self.in_use -= 1
            self._semaphore.release()


def split_hosts(value: str | None) -> list[str]:
    return [part for part in re.split(r"[,\s]+", value or "") if part]


class BearerAuth:
    """ASGI middleware: every request but the agent card needs ``Authorization: Bearer
    <token>``; others get 401 with a JSON body saying so."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (
            scope["method"] in ("GET", "HEAD") and scope["path"] in CARD_PATHS
        ):
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization", b"")
        if hmac.compare_digest(given, self.expected):
            await self.app(scope, receive, send)
            return
        response = JSONResponse(
            {
                "error": "unauthorized",
                "message": "This green agent needs 'Authorization: Bearer <token>' "
                "(its agent card declares the 'bearer' scheme).",
            },
            status_code=401,
            headers={"WWW-Authenticate": 'Bearer realm="swe-green"'},
        )
        await response(scope, receive, send)
