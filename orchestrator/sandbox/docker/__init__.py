"""The Docker backend of the sandbox interface (:mod:`..protocol`): the only package of the
product that imports ``docker`` (one module per part: :mod:`.container`, :mod:`.runtime`,
:mod:`.backend`, :mod:`.images`).

:class:`DockerSandbox` starts a labelled, resource-limited container, runs commands in it with
a timeout that kills the whole process group, moves files in and out byte for byte, switches
the network on and off, snapshots itself to an image, and removes itself.
:class:`DockerBackend` starts them (from an image, or a snapshot it kept: a commit, or under
the restricted policy the changed files packed on the host), lists and removes containers by
label; its image store (:class:`.images.DockerImages`) lists, tags, pulls, pushes, imports and
builds images; :func:`connect` finds the engine.

Least privilege: every container starts with all capabilities dropped except
:data:`CAPABILITIES` (file ownership and modes, and switching users, which apt and some test
suites need), ``no-new-privileges``, and CPU, memory and process limits.

Disk budget (``Limits.disk``): the daemon enforces a size with ``storage_opt`` only on
overlay2 over XFS with project quotas. Everywhere else (ext4) a watcher thread measures the
container's writable layer (``du`` of the overlay2 upper directory when this process can read
it, else the API's ``SizeRw``), polling faster as the size nears the budget, and kills the
container once it is over (:mod:`.disk`). From then on every operation on the sandbox raises
:class:`DiskLimitExceeded`.
"""

from __future__ import annotations

from orchestrator.sandbox.docker.backend import DockerBackend, connect
from orchestrator.sandbox.docker.container import DockerSandbox
from orchestrator.sandbox.docker.runtime import CAPABILITIES, writable_layer_dir

__all__ = ["CAPABILITIES", "DockerBackend", "DockerSandbox", "connect", "writable_layer_dir"]
