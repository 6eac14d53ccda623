"""The sandbox interface: what the rest of the product may ask of a container and its engine.

A :class:`Sandbox` is one isolated machine with a file system: it runs commands with a
timeout and an output cap, moves files in and out byte for byte, switches its network on and
off, snapshots itself to an image, and is stopped (kept) or removed. A
:class:`SandboxBackend` starts sandboxes from images with limits and labels, finds them again
by label, and keeps one as a :class:`.models.Snapshot` for others to start from; its
:class:`ImageStore` holds the images. Backends: :mod:`.docker` (the Docker engine; the only
module of the product that imports ``docker``) and :mod:`.local` (the host itself, for tests
and development: no isolation). :mod:`.conformance` is the suite every backend passes
(``swe-green sandbox check``; the tests run it on each backend).

Errors are those of :mod:`.errors`, whatever the backend.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Protocol, runtime_checkable

from orchestrator.sandbox.models import (
    ContainerInfo,
    ExecResult,
    ImageInfo,
    Limits,
    SandboxSpec,
    Snapshot,
)


@runtime_checkable
class Sandbox(Protocol):
    """One running sandbox (a container)."""

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def image(self) -> str:
        """The image it started from."""
        ...

    @property
    def limits(self) -> Limits:
        """Its output cap, disk budget and the like (as started or attached)."""
        ...

    def labels(self) -> dict[str, str]: ...

    def exec(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: float = 60,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
        user: str = "",
    ) -> ExecResult:
        """Run ``cmd`` (argv, or a string for ``bash -c``); on timeout its process group is
        killed and the sandbox stays usable; output past the output limit is cut."""
        ...

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None: ...

    def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        """The file's bytes; :class:`FileMissing` when there is none, :class:`FileTooLarge`
        (nothing read) when it holds more than ``max_bytes``."""
        ...

    def put_dir(self, host_dir: Path, container_dir: str) -> None: ...

    def get_archive(self, path: str, out: IO[bytes]) -> None:
        """Write a tar of ``path`` (a file or a directory) to ``out``, to put into another
        sandbox."""
        ...

    def put_archive(self, directory: str, tar: bytes | IO[bytes]) -> None:
        """Unpack a tar (as :meth:`get_archive` gives) into ``directory``."""
        ...

    def changes(self) -> list[dict[str, object]]:
        """Its changes over its image: ``{"Path": ..., "Kind": 0 modified, 1 added, 2 deleted}``
        (what :mod:`.file_snapshot` carries into another sandbox without a commit)."""
        ...

    def set_network(self, enabled: bool) -> None: ...

    def snapshot(self, repository: str, tag: str, labels: Mapping[str, str] | None = None) -> str:
        """Commit the file system to ``repository:tag``; returns the image id."""
        ...

    def kill_processes(self) -> None:
        """Stop every process, files kept; the sandbox is usable again afterwards."""
        ...

    @property
    def disk_exceeded(self) -> bool: ...

    def check_disk(self) -> None: ...

    def stop(self, timeout: int = 2) -> None: ...

    def remove(self) -> None: ...

    def exists(self) -> bool: ...

    def is_running(self) -> bool: ...


class ImageStore(Protocol):
    """Where a backend's images live, apart from its sandboxes: listed and inspected, tagged,
    removed, pulled from and pushed to a registry, imported and built. What a store cannot do
    (the local backend has no images; Amber's Docker gateway refuses tags and pushes) raises
    :class:`.errors.Unsupported`."""

    def find(
        self, labels: Mapping[str, str] | None = None, reference: str | None = None
    ) -> list[ImageInfo]:
        """The images with all of ``labels`` (and of ``reference``, a name or repository)."""
        ...

    def exists(self, name: str) -> bool: ...

    def labels(self, name: str) -> dict[str, str]: ...

    def tag(self, name: str, repository: str, tag: str) -> None: ...

    def remove(self, image_id: str) -> bool:
        """Remove an image; False when a sandbox still uses it (it stays). Gone is fine."""
        ...

    def pull(self, reference: str) -> None:
        """Fetch ``reference`` from its registry."""
        ...

    def push(self, name: str, reference: str) -> None:
        """Upload the local image ``name`` to a registry as ``reference`` (tagged so for the
        upload only)."""
        ...

    def import_tarball(self, tar_path: Path, repository: str, tag: str, changes: list[str]) -> None:
        """An image from a root file system tarball (``docker import``)."""
        ...

    def build(
        self, context: Path, tag: str, buildargs: Mapping[str, str], labels: Mapping[str, str]
    ) -> Iterator[str]:
        """Build ``tag`` from a Dockerfile in ``context``; yields the build's log lines."""
        ...


class SandboxBackend(Protocol):
    """Where sandboxes come from: starts them (from an image or a snapshot it kept), keeps
    them as snapshots, finds them by label; its images are :attr:`images`."""

    name: str  # "docker", "local"

    @property
    def images(self) -> ImageStore: ...

    # whether it keeps a sandbox as an image (a commit); if not, :meth:`keep` packs its files
    # on the host (the restricted Docker policy)
    commits: bool

    def start(self, source: str | Snapshot, spec: SandboxSpec) -> Sandbox:
        """A sandbox from an image, or from a :class:`Snapshot` this backend returned, that
        idles until told what to do (see :class:`SandboxSpec`: labelled with the run, the
        instance and its role; without network, loopback only)."""
        ...

    def keep(
        self, sandbox: Sandbox, name: str, directory: Path,
        labels: Mapping[str, str] | None = None,
    ) -> Snapshot:  # fmt: skip
        """``sandbox`` kept for other sandboxes to start from, standing for the image ``name``:
        that image (a commit, with ``labels``) where the backend :attr:`commits`, else the
        files it changed, packed into a host file in ``directory``, over its image."""
        ...

    def attach(self, ref: str, limits: Limits | None = None) -> Sandbox:
        """The sandbox with this id or name."""
        ...

    def containers(self, labels: Mapping[str, str] | None = None) -> list[ContainerInfo]:
        """This tool's sandboxes (running or not) with all of ``labels``, newest first."""
        ...

    def all_containers(self) -> list[ContainerInfo]:
        """Every container of the engine, this tool's or not (to see which use an image)."""
        ...

    def name_taken(self, name: str) -> bool: ...

    def start_container(self, ref: str) -> None:
        """Start a stopped sandbox again (to inspect it)."""
        ...

    def stop_container(self, ref: str, timeout: int = 2) -> bool:
        """Stop a sandbox; False when it is gone."""
        ...

    def open_shell(self, ref: str, shell: str, workdir: str) -> int:
        """Run the interactive ``shell`` in the running sandbox ``ref``, starting in
        ``workdir``, on this process's stdin, stdout and stderr (with a terminal when stdin is
        one) until it exits; its exit code."""
        ...

    def remove_container(self, ref: str) -> bool:
        """Remove a sandbox; False when it is gone."""
        ...

    def cleanup(self, labels: Mapping[str, str]) -> list[str]:
        """Remove every sandbox with ``labels``; their names."""
        ...

    def remove_idle_networks(
        self, labels: Mapping[str, str], created_before: float, *, dry_run: bool = False
    ) -> list[str]:
        """Remove the networks with ``labels`` that no sandbox uses and that were created
        before ``created_before`` (epoch seconds; a network being set up has no sandbox for a
        moment); their names. What a process killed mid-reinstall leaves (the index-only
        network of the reinstall). A backend without networks has none."""
        ...
