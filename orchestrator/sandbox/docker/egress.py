"""A Docker sandbox on an internal network with one way out: a proxy container of its own.

:func:`proxied_network` creates an *internal* network (no route out, no outside DNS), starts a
proxy container (a script the caller gives, run with ``python3`` of the sandbox's image, as
``nobody``, read-only, all capabilities dropped) on that network and the bridge, moves the
sandbox onto the internal network and yields the proxy's address there. The sandbox, the
proxy and the network carry the sandbox's labels (housekeeping finds the containers by run);
all are removed afterwards. Used by the reinstall
(:mod:`orchestrator.grading.reinstall.egress`).
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Iterator, Sequence

from docker.models.containers import Container

from orchestrator.sandbox.docker.container import DockerSandbox
from orchestrator.sandbox.docker.runtime import _ENGINE_ERRORS
from orchestrator.sandbox.errors import SandboxError, Unsupported

_READY_WAIT = 30.0


@contextlib.contextmanager
def proxied_network(sandbox: DockerSandbox, script: str, args: Sequence[str]) -> Iterator[str]:
    """``sandbox`` on an internal network beside a proxy running ``python3 -c script *args``
    (which prints ``ready`` once it listens); yields the proxy's IP address on that network.
    Raises :class:`Unsupported` under the restricted Docker policy (no network changes) or
    when the engine refuses to create the network."""
    if sandbox.restricted:
        raise Unsupported("the restricted Docker policy allows no network changes")
    client, container = sandbox.client, sandbox.container
    name = f"{sandbox.name[:40]}-egress-{secrets.token_hex(3)}"
    labels = dict(container.labels)
    try:
        network = client.networks.create(name, driver="bridge", internal=True, labels=labels)
    except _ENGINE_ERRORS as exc:
        raise Unsupported(f"the engine creates no internal network: {exc}") from exc
    try:
        proxy = client.containers.run(
            sandbox.image, ["python3", "-c", script, *args],
            name=name, detach=True, labels=labels, user="nobody", network="bridge",
            read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges"],
            mem_limit="256m", pids_limit=64, working_dir="/",
        )  # fmt: skip
        try:
            network.connect(proxy)
            sandbox.leave_none()
            network.connect(container)
            address = _address(proxy, name)
            _wait_ready(proxy)
            yield address
        finally:
            with contextlib.suppress(*_ENGINE_ERRORS):
                network.disconnect(container, force=True)
            with contextlib.suppress(*_ENGINE_ERRORS):
                proxy.remove(force=True)
    except _ENGINE_ERRORS as exc:
        raise SandboxError(f"the proxied network of {sandbox.name} failed: {exc}") from exc
    finally:
        with contextlib.suppress(*_ENGINE_ERRORS):
            network.remove()


def _address(proxy: Container, network: str) -> str:
    proxy.reload()
    networks = proxy.attrs["NetworkSettings"]["Networks"]
    address = str((networks.get(network) or {}).get("IPAddress") or "")
    if not address:
        raise SandboxError(f"the proxy has no address on {network}")
    return address


def _wait_ready(proxy: Container) -> None:
    """Until the proxy prints ``ready`` (it listens), or it ended or took too long."""
    deadline = time.monotonic() + _READY_WAIT
    while time.monotonic() < deadline:
        logs = proxy.logs().decode("utf-8", "replace")
        if "ready" in logs.split():
            return
        proxy.reload()
        if proxy.status not in ("created", "running"):
            raise SandboxError(f"the proxy ended: {logs[-500:]}")
        time.sleep(0.2)
    raise SandboxError("the proxy did not start")
