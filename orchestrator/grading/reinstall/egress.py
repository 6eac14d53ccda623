"""The network of a reinstall: the package index, and no other host.

A reinstall runs the patch's build code (:mod:`.reinstall`); with the container on the bridge
it could fetch anything (the upstream fix, say). Instead, :func:`index_only_network` puts the
container on an *internal* Docker network of its own (no route out, no outside DNS) and starts
beside it a proxy container, on that network and the bridge, that lets through only ``CONNECT``
to the index's hosts on port 443 (:mod:`.proxy`, run by
:func:`orchestrator.sandbox.docker.egress.proxied_network`). The install gets the proxy in its
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
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from orchestrator.sandbox import Sandbox
from orchestrator.sandbox.docker import DockerSandbox
from orchestrator.sandbox.docker.egress import proxied_network
from orchestrator.sandbox.errors import Unsupported
from sandbox_tools.contract import ACTIVATE

INDEX_HOSTS = ("pypi.org", "files.pythonhosted.org")
PROXY_PORT = 3128
_PROXY_SOURCE = (Path(__file__).parent / "proxy.py").read_text()
_PIP_CONFIG = (
    f"source {ACTIVATE} >/dev/null 2>&1; python -m pip config list 2>/dev/null; "
    "env | grep -E '^PIP_(INDEX_URL|EXTRA_INDEX_URL)=' || true"
)
_URL = re.compile(r"https?://[^\s'\"]+")


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
    if not isinstance(sandbox, DockerSandbox):
        raise NoEgress(f"no network control for a {type(sandbox).__name__}")
    hosts = index_hosts(sandbox.exec(["bash", "-c", _PIP_CONFIG], timeout=60).stdout)
    stack = contextlib.ExitStack()
    try:
        args = [",".join(hosts), str(PROXY_PORT)]
        address = stack.enter_context(proxied_network(sandbox, _PROXY_SOURCE, args))
    except Unsupported as exc:
        raise NoEgress(str(exc)) from exc
    url = f"http://{address}:{PROXY_PORT}"
    with stack:
        yield {
            "PIP_PROXY": url, "HTTPS_PROXY": url, "https_proxy": url,
            "HTTP_PROXY": url, "http_proxy": url, "NO_PROXY": "", "no_proxy": "",
        }  # fmt: skip
