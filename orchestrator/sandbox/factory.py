"""One place that turns settings into a sandbox backend (as SWE-ReX's ``get_deployment``
turns a config into a deployment): the CLI, the server, the run driver and Ray nodes call
:func:`backend_from`, and no other module imports a backend's ``connect``."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from orchestrator.sandbox.protocol import SandboxBackend

if TYPE_CHECKING:
    from orchestrator.settings import SandboxConfig, Settings


def backend_from(settings: Settings | SandboxConfig, *, timeout: float = 60) -> SandboxBackend:
    """The backend ``settings`` name: ``local`` (the host, no isolation: tests and
    development), ``docker`` under the ``full`` or ``restricted`` policy (``docker_policy``).

    Raises :class:`.errors.BackendUnavailable` when the Docker engine does not answer.
    """
    sandbox = cast("SandboxConfig", getattr(settings, "sandbox", settings))
    if sandbox.backend == "local":
        from orchestrator.sandbox.local import LocalBackend

        return LocalBackend()
    from orchestrator.sandbox.docker.backend import connect

    return connect(timeout, restricted=sandbox.docker_policy == "restricted")
