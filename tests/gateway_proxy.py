"""A recording proxy in front of the Docker socket that refuses what Amber's Docker gateway does.

The policy is the gateway's ``handle`` (RDI-Foundation/amber, ``runtime/docker-gateway/src/
lib.rs`` at 4a03039f), transcribed in :func:`rule`: default deny; ping, version and info
pass; images only by inspect (``GET /images/{name}/json``, a name may hold ``/``) and pull
(``POST /images/create`` with ``fromImage`` and no ``fromSrc``); the list and prune endpoints
get the owner's label filters; creates get the owner's labels (a container create that names
another container, a network or a volume must own it); container, exec, network and volume
endpoints need a resource the caller created; network connect/disconnect are refused
outright. Anything else (``/commit``, ``/build``, ``GET /images/json``, ``DELETE
/images/...``, ``GET /networks/bridge`` since nobody owns it) answers 403 with the gateway's
JSON error. A version prefix (``/v1.41/...``) is ignored as the gateway ignores it.

Every request is recorded (:class:`Call`): method, path, query, the rule, the status sent.
Requests run one per upstream connection (``Connection: close``); an upgrade (exec/attach
hijack) is forwarded and then both directions are copied byte for byte.
"""

from __future__ import annotations

import http.client
import json
import re
import select
import socket
import socketserver
import threading
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit

DOCKER_SOCKET = "/var/run/docker.sock"
COMPONENT, PROJECT = "swe-green", "swe-green-test"
OWNER_LABELS = {
    "amber.component": COMPONENT,
    "amber.project": PROJECT,
    "com.docker.compose.project": PROJECT,
}
BUILTIN_NETWORK_MODES = {"default", "bridge", "host", "none", "private"}
BUILTIN_NETWORKS = {"default", "bridge", "host", "private"}

# the rules of the gateway's handle(), in its order
FORWARD = "forward"
LABEL_FILTER = "label_filter"  # list/prune: the owner's labels added to the filters
CREATE = "create"  # network/volume create: the owner's labels injected
CREATE_CONTAINER = "create_container"  # labels injected, references must be owned
CONTAINER = "container"  # the container must be the caller's
EXEC = "exec"  # the exec's container must be the caller's
NETWORK = "network"
VOLUME = "volume"
REFUSE = "refuse"


def split_version(path: str) -> list[str]:
    """The path's segments without a leading API version (``v1.41``; the gateway takes
    ``v`` then two dot-separated runs of digits, possibly empty)."""
    segs = [s for s in path.split("/") if s]
    if segs and re.fullmatch(r"v\d*\.\d*", segs[0]):
        return segs[1:]
    return segs


def rule(method: str, path: str, query: str = "") -> str:  # noqa: C901, PLR0911 a rule table
    """What the gateway does with a request (before any ownership check)."""
    segs = split_version(path)
    n = len(segs)
    if method == "GET" and n == 1 and segs[0] in ("_ping", "version", "info"):
        return FORWARD
    if method == "GET" and n >= 3 and segs[0] == "images" and segs[-1] == "json":
        return FORWARD
    if method == "POST" and segs == ["images", "create"]:
        keys = {k for k, _ in parse_qsl(query, keep_blank_values=True)}
        return FORWARD if "fromImage" in keys and "fromSrc" not in keys else REFUSE
    if (
        method == "GET" and segs in (["containers", "json"], ["events"], ["networks"], ["volumes"])
    ) or (
        method == "POST"
        and n == 2
        and segs[0] in ("containers", "networks", "volumes")
        and segs[1] == "prune"
    ):
        return LABEL_FILTER
    if method == "POST" and segs == ["containers", "create"]:
        return CREATE_CONTAINER
    if method == "POST" and segs in (["networks", "create"], ["volumes", "create"]):
        return CREATE
    if method == "POST" and n == 3 and segs[0] == "containers" and segs[2] == "exec":
        return CONTAINER
    if n >= 2 and segs[0] == "exec":
        return EXEC
    if n >= 2 and segs[0] == "containers" and segs[1] not in ("create", "json", "prune"):
        return CONTAINER
    if n >= 2 and segs[0] == "networks" and segs[1] not in ("create", "prune"):
        if n >= 3 and segs[2] in ("connect", "disconnect"):
            return REFUSE
        return NETWORK
    if n >= 2 and segs[0] == "volumes" and segs[1] not in ("create", "prune"):
        return VOLUME
    return REFUSE


@dataclass
class Call:
    method: str
    path: str
    query: str
    rule: str
    status: int = 0  # what the client got (403: refused by the policy or by ownership)
    refused: bool = False
    network_mode: str | None = None  # of a container create

    def endpoint(self) -> str:
        """``METHOD /path`` with ids and names replaced by ``{id}``/``{name}``."""
        segs = split_version(self.path)
        if len(segs) >= 2 and segs[0] in ("containers", "exec", "networks", "volumes"):
            if segs[1] not in ("create", "json", "prune"):
                segs[1] = "{id}"
        if segs and segs[0] == "images" and len(segs) >= 3:
            segs = ["images", "{name}", segs[-1]]
        return f"{self.method} /" + "/".join(segs)


class _Unix(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=60)
        self._path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self._path)


@dataclass
class GatewayProxy:
    """Serve on 127.0.0.1 (``url``: ``tcp://127.0.0.1:<port>``) until :meth:`close`."""

    upstream: str = DOCKER_SOCKET
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._serve(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._lock = threading.Lock()
        self._server = Server(("127.0.0.1", 0), Handler)
        self.url = f"tcp://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def refused(self) -> list[Call]:
        return [c for c in self.calls if c.refused]

    # ------------------------------------------------------------------ upstream helpers
    def _get(self, path: str) -> tuple[int, dict]:
        conn = _Unix(self.upstream)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            body = resp.read()
            return resp.status, (json.loads(body) if resp.status == 200 else {"raw": body})
        finally:
            conn.close()

    def _owned(self, kind: str, name: str) -> tuple[bool, int, bytes]:
        """(owned, upstream status, upstream body when it is not 200)."""
        path = {
            "container": f"/containers/{name}/json",
            "network": f"/networks/{name}",
            "volume": f"/volumes/{name}",
        }[kind]
        status, body = self._get(path)
        if status != 200:
            return False, status, body.get("raw", b"")
        labels = (
            (body.get("Config") or {}).get("Labels") if kind == "container" else body.get("Labels")
        )
        labels = labels or {}
        owned = (
            labels.get("amber.component") == COMPONENT and labels.get("amber.project") == PROJECT
        )
        return owned, 200, b""

    # ------------------------------------------------------------------ one connection
    def _serve(self, client: socket.socket) -> None:
        reader = client.makefile("rb")
        try:
            while True:
                head = _read_head(reader)
                if head is None:
                    return
                if not self._one(client, reader, head):
                    return
        except OSError:
            return
        finally:
            reader.close()
            client.close()

    def _one(self, client: socket.socket, reader, head: bytes) -> bool:  # noqa: ANN001
        """Handle one request; False when the client connection must close."""
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ", 2)
        headers = [
            (k.strip(), v.strip()) for k, v in (line.split(":", 1) for line in lines[1:] if line)
        ]
        get = {k.lower(): v for k, v in headers}
        parts = urlsplit(target)
        call = Call(method, parts.path, parts.query, rule(method, parts.path, parts.query))
        with self._lock:
            self.calls.append(call)
        chunked = "chunked" in get.get("transfer-encoding", "").lower()
        length = int(get.get("content-length", "0") or 0)
        upgrade = "upgrade" in get.get("connection", "").lower() or "upgrade" in get

        denial = self._authorize(call)
        body: bytes | None = None
        if denial is None and call.rule in (CREATE, CREATE_CONTAINER):
            body = _read_body(reader, chunked, length)
            body, denial = self._labelled_create(call, body)
        if denial is not None:
            if body is None:
                _read_body(reader, chunked, length)
            status, payload = denial
            call.status, call.refused = status, status == 403
            client.sendall(
                f"HTTP/1.1 {status} {http.client.responses.get(status, '')}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
            return True
        if call.rule == LABEL_FILTER:
            target = parts.path + "?" + _with_owner_filters(parts.query)
        up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        up.connect(self.upstream)
        try:
            drop = (
                {"connection", "content-length", "transfer-encoding"}
                if body is not None
                else {"connection"}
            )
            out = [f"{method} {target} {version}"]
            out += [f"{k}: {v}" for k, v in headers if k.lower() not in drop]
            if body is not None:
                out.append(f"Content-Length: {len(body)}")
            out.append(f"Connection: {get.get('connection', 'Upgrade') if upgrade else 'close'}")
            up.sendall(("\r\n".join(out) + "\r\n\r\n").encode("latin-1"))
            if body is not None:
                up.sendall(body)
            else:
                _copy_body(reader, up, chunked, length)
            resp_head, rest = _recv_head(up)
            if resp_head is None:
                return False
            resp_lines = resp_head.decode("latin-1").split("\r\n")
            call.status = int(resp_lines[0].split(" ", 2)[1])
            if call.status == 101:
                client.sendall(resp_head + rest)
                _pump(client, up)
                return False
            kept = [
                line
                for line in resp_lines[1:]
                if line and not line.lower().startswith("connection:")
            ]
            client.sendall(
                ("\r\n".join([resp_lines[0], *kept, "Connection: close"]) + "\r\n\r\n").encode(
                    "latin-1"
                )
                + rest
            )
            while chunk := up.recv(1 << 16):
                client.sendall(chunk)
            return False
        finally:
            up.close()

    def _authorize(self, call: Call) -> tuple[int, bytes] | None:
        """None to go on, or the (status, body) the gateway answers instead."""
        if call.rule == REFUSE:
            return 403, _error(
                f"endpoint {call.method} {call.path} is not allowed by gateway policy"
            )
        segs = split_version(call.path)
        kind_name = None
        if call.rule in (CONTAINER, NETWORK, VOLUME):
            kind_name = (call.rule, segs[1])
        elif call.rule == EXEC:
            status, body = self._get(f"/exec/{segs[1]}/json")
            if status != 200:
                return status, body.get("raw", b"")
            kind_name = ("container", body["ContainerID"])
        if kind_name is None:
            return None
        owned, status, raw = self._owned(*kind_name)
        if status != 200:
            return status, raw
        return None if owned else (403, _error(f"not authorized for this {kind_name[0]}"))

    def _labelled_create(self, call: Call, body: bytes) -> tuple[bytes, tuple[int, bytes] | None]:
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            return body, (400, _error("invalid JSON body"))
        if call.rule == CREATE_CONTAINER:
            call.network_mode = (request.get("HostConfig") or {}).get("NetworkMode") or "default"
            for kind, name in _create_references(request):
                owned, status, raw = self._owned(kind, name)
                if status != 200:
                    return body, (status, raw)
                if not owned:
                    return body, (403, _error(f"not authorized for this {kind}"))
        labels = request.setdefault("Labels", {}) or {}
        labels.update(OWNER_LABELS)
        request["Labels"] = labels
        return json.dumps(request).encode(), None


def _create_references(request: dict) -> list[tuple[str, str]]:
    """The containers, networks and volumes a container create names (as the gateway reads
    them: network mode, named-volume binds and mounts, volumes-from, links, pid/ipc mode,
    endpoint networks)."""
    refs: list[tuple[str, str]] = []
    host = request.get("HostConfig") or {}
    mode = (host.get("NetworkMode") or "").strip()
    if mode and mode.lower() not in BUILTIN_NETWORK_MODES:
        refs.append(
            ("container", mode[10:]) if mode.startswith("container:") else ("network", mode)
        )
    for bind in host.get("Binds") or []:
        source = bind.split(":", 1)[0].strip()
        if source and "/" not in source and source not in (".", ".."):
            refs.append(("volume", source))
    for mount in host.get("Mounts") or []:
        if (mount.get("Type") or "").lower() == "volume" and (mount.get("Source") or "").strip():
            refs.append(("volume", mount["Source"].strip()))
    for value in [*(host.get("VolumesFrom") or []), *(host.get("Links") or [])]:
        name = value.split(":", 1)[0].strip()
        if name:
            refs.append(("container", name))
    for value in (host.get("PidMode"), host.get("IpcMode")):
        if value and value.strip().startswith("container:") and value.strip()[10:].strip():
            refs.append(("container", value.strip()[10:].strip()))
    for network in (request.get("NetworkingConfig") or {}).get("EndpointsConfig") or {}:
        if network.strip() and network.strip().lower() not in BUILTIN_NETWORKS:
            refs.append(("network", network.strip()))
    return refs


def _with_owner_filters(query: str) -> str:
    pairs = parse_qsl(query, keep_blank_values=True)
    filters: dict = {}
    for key, value in pairs:
        if key == "filters":
            filters = json.loads(value)
    labels = filters.get("label") or {}
    if isinstance(labels, list):
        labels = {label: True for label in labels}
    elif isinstance(labels, str):
        labels = {labels: True}
    labels = {k: v for k, v in labels.items() if not k.startswith("com.docker.compose.project=")}
    labels.update({f"{k}={v}": True for k, v in OWNER_LABELS.items()})
    filters["label"] = labels
    pairs = [(k, v) for k, v in pairs if k != "filters"] + [("filters", json.dumps(filters))]
    return urlencode(pairs)


def _error(message: str) -> bytes:
    return json.dumps({"message": message}).encode()


def _read_head(reader) -> bytes | None:  # noqa: ANN001
    lines = []
    while True:
        line = reader.readline(65537)
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            return b"".join(lines) + b"\r\n" if lines else None
        lines.append(line)


def _read_body(reader, chunked: bool, length: int) -> bytes:  # noqa: ANN001
    if not chunked:
        return reader.read(length) if length else b""
    out = bytearray()
    while True:
        size = int(reader.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while reader.readline() not in (b"\r\n", b"\n", b""):
                pass
            return bytes(out)
        out += reader.read(size)
        reader.readline()


def _copy_body(reader, up: socket.socket, chunked: bool, length: int) -> None:  # noqa: ANN001
    """Forward a request body as it arrives (a chunked one as it came, chunk by chunk)."""
    if not chunked:
        left = length
        while left > 0:
            chunk = reader.read(min(left, 1 << 20))
            if not chunk:
                return
            up.sendall(chunk)
            left -= len(chunk)
        return
    while True:
        line = reader.readline()
        up.sendall(line)
        size = int(line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while True:
                trailer = reader.readline()
                up.sendall(trailer)
                if trailer in (b"\r\n", b"\n", b""):
                    return
        up.sendall(reader.read(size) + reader.readline())


def _recv_head(sock: socket.socket) -> tuple[bytes | None, bytes]:
    """A response head read from ``sock``, and the bytes that came after it."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = sock.recv(65536)
        if not data:
            return None, b""
        buf += data
    end = buf.index(b"\r\n\r\n") + 4
    return buf[:end], buf[end:]


def _pump(client: socket.socket, up: socket.socket) -> None:
    """After an upgrade (exec/attach hijack): bytes both ways until either side closes."""
    socks = [client, up]
    while True:
        ready, _, _ = select.select(socks, [], [], 3600)
        if not ready:
            return
        for sock in ready:
            data = sock.recv(65536)
            if not data:
                return
            (up if sock is client else client).sendall(data)
