"""The egress proxy of a reinstall: HTTP ``CONNECT`` to the package index's hosts, port 443,
and nothing else (:mod:`.egress` runs it in a container of its own).

A script, run as ``python3 proxy.py HOST[,HOST...] [PORT]``; standard library
only, for any Python 3.8+ (it runs on the instance image's system Python). It prints
``ready`` once it listens. Every request that is not ``CONNECT <allowed host>:443`` gets
``403`` and is closed; the proxy resolves the host itself, so the client needs no DNS.
"""

from __future__ import annotations

import asyncio
import sys

FORBIDDEN = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
ESTABLISHED = b"HTTP/1.1 200 Connection established\r\n\r\n"


def allowed_target(request_line: str, hosts: frozenset[str]) -> tuple[str, int] | None:
    """``(host, 443)`` when ``request_line`` is a CONNECT to one of ``hosts`` on 443."""
    parts = request_line.split()
    if len(parts) != 3 or parts[0] != "CONNECT":
        return None
    host, _, port = parts[1].rpartition(":")
    host = host.lower().rstrip(".")
    if host not in hosts or port != "443":
        return None
    return host, 443


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


async def _handle(
    hosts: frozenset[str], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=30)
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        target = allowed_target(line, hosts)
        if target is None:
            print("refused", line[:200], flush=True)
            writer.write(FORBIDDEN)
            await writer.drain()
            writer.close()
            return
        upstream_reader, upstream_writer = await asyncio.wait_for(
            asyncio.open_connection(*target), timeout=30
        )
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):  # noqa: UP041 (3.8-3.10: not the builtin)
        writer.close()
        return
    writer.write(ESTABLISHED)
    await writer.drain()
    await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))


async def _serve(hosts: frozenset[str], port: int) -> None:
    server = await asyncio.start_server(
        lambda r, w: _handle(hosts, r, w), host="0.0.0.0", port=port
    )
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    allowed = frozenset(h.strip().lower() for h in sys.argv[1].split(",") if h.strip())
    asyncio.run(_serve(allowed, int(sys.argv[2]) if len(sys.argv) > 2 else 3128))
