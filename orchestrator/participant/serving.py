"""Serve an A2A agent executor over JSON-RPC (A2A 1.0 and the 0.3 dialect) with uvicorn."""

from __future__ import annotations

import contextlib
import errno
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette

from orchestrator.errors import UserError


@dataclass
class CardInfo:
    """What an agent card says about an agent besides where it is."""

    name: str
    description: str
    skills: list[AgentSkill] = field(default_factory=list)
    streaming: bool = True


def agent_card(info: CardInfo, url: str) -> AgentCard:
    """A card with one JSON-RPC interface for A2A 1.0 and one for 0.3 at the same URL."""
    return AgentCard(
        name=info.name,
        description=info.description,
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", url=url, protocol_version="1.0"),
            AgentInterface(protocol_binding="JSONRPC", url=url, protocol_version="0.3"),
        ],
        capabilities=AgentCapabilities(streaming=info.streaming),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=info.skills
        or [
            AgentSkill(
                id="swe-sandbox",
                name="Resolve a repository issue",
                description="Works on an issue through the swe-sandbox tool protocol, v1.",
                tags=["swe-bench", "swe-sandbox", "coding"],
            )
        ],
    )


def build_app(executor: AgentExecutor, info: CardInfo, url: str) -> Starlette:
    """A Starlette app serving ``executor`` at ``url`` (its card at the well-known path)."""
    card = agent_card(info, url)
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
    ]
    return Starlette(routes=routes)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio enables TCP_NODELAY only then (else ~40 ms per turn)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``; a port in use or refused is a
    :class:`UserError` naming it and the fix."""
    try:
        return _bind(host, port)
    except OSError as exc:
        where = f"{host}:{port}"
        if exc.errno == errno.EADDRINUSE:
            raise UserError(
                f"Port {port} on {host} is in use (another server listens on {where}).",
                f"stop that server, or pass --port with a free port (e.g. --port {port + 1}).",
            ) from None
        if exc.errno == errno.EACCES:
            raise UserError(
                f"Listening on {where} is not permitted (ports below 1024 need privileges).",
                "pass --port with a port of 1024 or more.",
            ) from None
        if exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT) or isinstance(
            exc, socket.gaierror
        ):
            raise UserError(
                f"Cannot listen on {where}: {host} is not an address of this host.",
                "pass --host with one of its addresses (127.0.0.1, or 0.0.0.0 for all).",
            ) from None
        raise


class _Announcing(uvicorn.Server):
    """A uvicorn server that calls ``announce`` once it serves: its own handlers of SIGINT
    and SIGTERM are in place by then, so a signal sent on the announcement stops it."""

    def __init__(self, config: uvicorn.Config, announce: Callable[[], None] | None) -> None:
        super().__init__(config)
        self.announce = announce

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and self.announce is not None:
            self.announce()


def serve_on(
    app: Any, sock: socket.socket, started: Callable[[], None] | None = None, **options: Any
) -> None:
    """Serve ``app`` with uvicorn on the listening ``sock`` until interrupted; ``started`` is
    called once it serves."""
    config = uvicorn.Config(app, **{"log_level": "warning", **options})
    run_until_stopped(_Announcing(config, started), sock)


def _stop(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def run_until_stopped(server: uvicorn.Server, sock: socket.socket) -> None:
    """Run ``server`` on ``sock`` until Ctrl-C (SIGINT) or SIGTERM, after which it stops
    cleanly and this returns: a server stopped by either signal exits with status 0.

    uvicorn catches both signals for its graceful stop, then raises them again; SIGTERM's
    default action would then kill the process (status 143): here both end as Ctrl-C does."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _stop) if main else None
    try:
        with contextlib.suppress(KeyboardInterrupt):
            server.run(sockets=[sock])
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(
    executor: AgentExecutor,
    info: CardInfo,
    *,
    host: str = "127.0.0.1",
    port: int = 9019,
    card_url: str | None = None,
    listening: Callable[[], None] | None = None,
) -> None:
    """Serve until interrupted. ``card_url`` is the URL the card advertises (default: host:port).
    ``listening`` is called once it serves (a port in use: :class:`UserError`)."""
    sock = listen(host, port)
    app = build_app(executor, info, card_url or _url(host, port))
    serve_on(app, sock, started=listening)


@contextlib.contextmanager
def serve_in_thread(
    executor: AgentExecutor, info: CardInfo, *, host: str = "127.0.0.1", port: int = 0
) -> Iterator[str]:
    """Serve in a background thread of this process; yields the URL (a free port by default).

    The server stops when the ``with`` block ends.
    """
    with serve_asgi_in_thread(
        lambda url: build_app(executor, info, url), info.name, host=host, port=port
    ) as url:
        yield url


@contextlib.contextmanager
def serve_asgi_in_thread(
    make_app: Callable[[str], Any], name: str, *, host: str = "127.0.0.1", port: int = 0
) -> Iterator[str]:
    """Serve ``make_app(url)`` with uvicorn in a background thread; yields the URL."""
    sock = _bind(host, port)
    url = _url(host, sock.getsockname()[1])
    config = uvicorn.Config(make_app(url), log_level="warning", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"a2a-{name}", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the A2A server for {name} did not start")
            time.sleep(0.02)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
