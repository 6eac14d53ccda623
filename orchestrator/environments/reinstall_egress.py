"""The network of a reinstall: the package index, and no other host.

A reinstall runs the patch's build code (:mod:`.reinstall`); with the container on the bridge
it could fetch anything (the upstream fix, say). Instead, :func:`index_only_network` puts the
container on an *internal* Docker network of its own (no route out, no outside DNS) and starts
beside it a proxy container, on that network and the bridge, that lets through only ``CONNECT``
to the index's hosts on port 443 (:mod:`.reinstall_proxy`). The install gets the proxy in its
environment (``PIP_PROXY``, ``HTTPS_PROXY``); a build step that ignores it reaches nothing,
one that uses it reaches the index alone. The network and the proxy are removed afterwards.

The index's hosts: PyPI's (:data:`INDEX_HOSTS`) and those of the index URLs pip is
configured with in the container (:func:`index_hosts`).

Without a Docker engine it can drive (another sandbox kind, or the restricted Docker policy,
which allows no network changes) there is no such network: the caller runs the install
offline (:class:`NoEgress`).
"""

from __future__ import annotations

import contextlib
import re
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from docker.errors import DockerException
from docker.models.containers import Container

from orchestrator.sandbox import Sandbox, SandboxError

INDEX_HOSTS = ("pypi.org", "files.pythonhosted.org")
PROXY_PORT = 3128
_PROXY_SOURCE = (Path(__file__).parent / "reinstall_proxy.py").read_text()
_PIP_CONFIG = (
    "source /opt/swe/activate.sh >/dev/null 2>&1; python -m pip config list 2>/dev/null; "
    "env | grep -E '^PIP_(INDEX_URL|EXTRA_INDEX_URL)=' || true"
)
_URL = re.compile(r"https?://[^\s'\"]+")
_READY_WAIT = 30.0


class NoEgress(Exception):
    """The sandbox cannot be given an index-only network (see the module doc)."""


def index_hosts(pip_config: str) -> list[str]:
    """PyPI's hosts and those of the ``https`` index URLs in ``pip_config`` (the output of
    ``pip config list`` and the ``PIP_*INDEX_URL`` variables)."""
    hosts = list(INDEX_HOSTS)
    for line in pip_config.splitlines():
        if "index-url" not in line.lower() and "index_url" not in line.lower():
            continue
        for url in _URL.findall(line):
            parts = urlsplit(url)
            if parts.scheme == "https" and parts.hostname and parts.hostname not in hosts:
                hosts.append(parts.hostname)
    return hosts


@contextlib.contextmanager
def index_only_network(sandbox: Sandbox) -> Iterator[dict[str, str]]:
    """The sandbox on an internal network with the index proxy; yields the install's proxy
    environment. Raises :class:`NoEgress` when the sandbox cannot have one."""
    client = getattr(sandbox, "client", None)
    container = getattr(sandbox, "container", None)
    if client is None or container is None or getattr(sandbox, "restricted", False):
        raise NoEgress("no Docker network control for this sandbox")
    config = sandbox.exec(["bash", "-c", _PIP_CONFIG], timeout=60).stdout
    hosts = index_hosts(config)
    name = f"{sandbox.name[:40]}-egress-{secrets.token_hex(3)}"
    labels = dict(container.labels)
    try:
        network = client.networks.create(name, driver="bridge", internal=True, labels=labels)
    except DockerException as exc:
        raise NoEgress(f"cannot create a network: {exc}") from exc
    try:
        proxy = client.containers.run(
            getattr(sandbox, "image", "") or container.image.id,
            ["python3", "-c", _PROXY_SOURCE, ",".join(hosts), str(PROXY_PORT)],
            name=name, detach=True, labels=labels, user="nobody", network="bridge",
            read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges"],
            mem_limit="256m", pids_limit=64, working_dir="/",
        )  # fmt: skip
        try:
            network.connect(proxy)
            network.connect(container)
            address = _address(proxy, name)
            _wait_ready(proxy)
            url = f"http://{address}:{PROXY_PORT}"
            yield {
                "PIP_PROXY": url, "HTTPS_PROXY": url, "https_proxy": url,
                "HTTP_PROXY": url, "http_proxy": url, "NO_PROXY": "", "no_proxy": "",
            }  # fmt: skip
        finally:
            with contextlib.suppress(Exception):
                network.disconnect(container, force=True)
            with contextlib.suppress(Exception):
                proxy.remove(force=True)
    finally:
        with contextlib.suppress(Exception):
            network.remove()


def _address(proxy: Container, network: str) -> str:
    proxy.reload()
    networks = proxy.attrs["NetworkSettings"]["Networks"]
    address = str((networks.get(network) or {}).get("IPAddress") or "")
    if not address:
        raise SandboxError(f"the reinstall's index proxy has no address on {network}")
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
            raise SandboxError(f"the reinstall's index proxy ended: {logs[-500:]}")
        time.sleep(0.2)
    raise SandboxError("the reinstall's index proxy did not start")
