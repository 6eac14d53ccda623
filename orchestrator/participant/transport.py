"""HTTP for talking to a participant: at most ``max_reply_bytes`` read from any one reply, and
no request to a host outside the green agent's allow-list of participant hosts (the agent
card's interface URL and any redirect included)."""

from __future__ import annotations

import fnmatch
import functools
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from urllib.parse import urlparse

import httpx


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default TLS context, made once per process: every client made with its own
    loads the CA bundle again (about 0.1 s of CPU each)."""
    return httpx.create_ssl_context()


class ReplyTooLarge(Exception):
    """The participant sent more bytes in one reply than the green agent reads."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the participant's reply is larger than {limit} bytes, the most the green agent "
            "reads from one reply (setting max_reply_bytes)"
        )


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, limit: int) -> None:
        self.inner = inner
        self.limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        async for chunk in self.inner:
            read += len(chunk)
            if read > self.limit:
                raise ReplyTooLarge(self.limit)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class CappedTransport(httpx.AsyncBaseTransport):
    """An HTTP transport that reads at most ``limit`` bytes of any one response body.

    Bodies are read as streams, so a huge answer costs no more memory than the limit;
    compressed bodies are refused (their decoded size is what would count).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.inner = httpx.AsyncHTTPTransport(verify=tls_context())

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            await response.aclose()
            raise ReplyTooLarge(self.limit) from ValueError(f"compressed reply ({encoding})")
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_CappedStream(response.stream, self.limit),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


def host_allowed(url: str, patterns: Sequence[str]) -> bool:
    """Whether the URL's host matches one of ``patterns`` (globs; none = every host)."""
    if not patterns:
        return True
    host = (urlparse(url).hostname or "").lower()
    return any(fnmatch.fnmatchcase(host, pattern.lower()) for pattern in patterns)


class HostNotAllowed(httpx.RequestError):
    """A request to a host outside the allow-list of participant hosts (never sent)."""


def allow_list_hook(patterns: Sequence[str]) -> Callable[[httpx.Request], Awaitable[None]]:
    """An httpx ``request`` event hook that refuses every request (a redirect's too: httpx
    runs the hook for each request it sends) whose host is not on ``patterns``."""
    allowed = list(patterns)

    async def check(request: httpx.Request) -> None:
        if not host_allowed(str(request.url), allowed):
            raise HostNotAllowed(
                f"{request.url.host!r} is not on the green agent's allow-list of participant "
                f"hosts ({', '.join(allowed)})",
                request=request,
            )

    return check
