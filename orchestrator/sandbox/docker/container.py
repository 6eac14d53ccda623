"""One sandbox as one Docker container (:class:`DockerSandbox`)."""

from __future__ import annotations

import posixpath
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, cast

import docker
import requests
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.models.containers import Container

from orchestrator.sandbox.archives import file_archive, only_file, tree_archive
from orchestrator.sandbox.disk import DiskWatcher
from orchestrator.sandbox.docker.exec import exec_result, stream_exec
from orchestrator.sandbox.docker.runtime import _ENGINE_ERRORS, _disk_watcher, _run_container
from orchestrator.sandbox.errors import (
    DiskLimitExceeded,
    FileMissing,
    FileTooLarge,
    ImageMissing,
    SandboxError,
    Unsupported,
)
from orchestrator.sandbox.file_snapshot import capture, restore
from orchestrator.sandbox.models import (
    LABEL_INSTANCE,
    LABEL_KIND,
    LABEL_RUN,
    LABEL_TOOL,
    ExecResult,
    Limits,
    SandboxSpec,
    Snapshot,
)

# how long a removal that another caller started may take before ours gives up
REMOVAL_WAIT = 60.0


def remove_container(container: Container, wait: float = REMOVAL_WAIT) -> bool:
    """Force-remove ``container`` and its anonymous volumes; False when it was already gone.
    When another caller's removal of it is in progress (the engine answers 409), wait until
    it is gone: two clean-ups of one container (a run's and a cancel's) both end removed."""
    try:
        container.remove(force=True, v=True)
    except NotFound:
        return False
    except APIError as exc:
        if exc.status_code != 409 or "in progress" not in str(exc):
            raise
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                container.reload()
            except NotFound:
                return True
            time.sleep(0.2)
        raise
    return True


class DockerSandbox:
    """A running container of this tool. Create with :meth:`start` or :meth:`attach`."""

    def __init__(
        self,
        client: docker.DockerClient,
        container: Container,
        limits: Limits,
        *,
        spec: SandboxSpec | None = None,
        image: str = "",
        restricted: bool = False,
    ) -> None:
        self.client = client
        self.container = container
        self.limits = limits
        self.disk_watcher: DiskWatcher | None = None
        self.image = image or str((container.attrs.get("Config") or {}).get("Image") or "")
        self.spec = spec
        # under the restricted Docker policy the network is fixed at creation: switching it
        # moves the files into a new container (see set_network)
        self.network = spec.network if spec is not None and restricted else True
        self.restricted = restricted

    # ---------------------------------------------------------------- lifecycle
    @classmethod
    def start(
        cls,
        client: docker.DockerClient,
        image: str,
        spec: SandboxSpec | None = None,
        *,
        restricted: bool = False,
        files: Snapshot | None = None,
        **fields: Any,
    ) -> DockerSandbox:
        """Start a container from ``image`` that idles until it is told what to do; ``spec``
        or its ``fields`` say how.

        ``restricted``: within what Amber's Docker gateway allows, so no network
        inspect/connect/disconnect: the container is created with the bridge network or
        none. ``files``: a :class:`Snapshot` of ``image`` whose files are laid over it before
        the disk watcher starts (its budget counts from there).
        """
        spec = spec or SandboxSpec(**{k: v for k, v in fields.items() if v is not None})
        try:
            client.images.get(image)
        except ImageNotFound:
            raise ImageMissing(
                f"Docker image {image} does not exist.",
                "build the base images with `swe-green images build`.",
            ) from None
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"could not start a container from {image}: {exc}") from exc
        container = _run_container(client, image, spec)
        sandbox = cls(client, container, spec.limits, spec=spec, image=image, restricted=restricted)
        try:
            if files is not None:
                restore(sandbox, files)
            if spec.limits.disk is not None:
                watcher = _disk_watcher(client, _str(container.id), spec.limits)
                if files is not None and files.archive is not None:
                    watcher.baseline = watcher.layer_size() or 0
                sandbox.disk_watcher = watcher.start()
        except SandboxError:
            sandbox.remove()
            raise
        return sandbox

    @classmethod
    def attach(
        cls, client: docker.DockerClient, container_id: str, limits: Limits | None = None
    ) -> DockerSandbox:
        """A Sandbox for an existing container (by id or name)."""
        try:
            return cls(client, client.containers.get(container_id), limits or Limits())
        except NotFound:
            raise SandboxError(f"container {container_id} does not exist") from None

    @property
    def id(self) -> str:
        return _str(self.container.id)

    @property
    def name(self) -> str:
        return _str(self.container.name)

    def labels(self) -> dict[str, str]:
        return dict(self.container.labels)

    def set_network(self, enabled: bool) -> None:
        """Connect the container to the default bridge, or leave it with loopback only.

        Restricted (no network connect/disconnect): a container whose network must change is
        replaced by a new one with that network, its files moved over (:meth:`_move`)."""
        if self.restricted:
            if enabled != self.network:
                self._move(enabled)
            return
        try:
            networks = self._networks()
            if enabled and "bridge" not in networks:
                self.leave_none(networks)
                self.client.api.connect_container_to_network(self.id, "bridge")
            elif not enabled and "bridge" in networks:
                self.client.api.disconnect_container_from_network(self.id, "bridge", force=True)
        except _ENGINE_ERRORS as exc:
            raise self._error("switch the network", exc) from exc

    def _networks(self) -> dict[str, Any]:
        self.container.reload()
        return dict(self.container.attrs["NetworkSettings"]["Networks"] or {})

    def leave_none(self, networks: dict[str, Any] | None = None) -> None:
        """Leave the private ``none`` network a container without the network starts on (the
        engine connects no other network beside it); with no network left it has loopback only,
        as with ``none``."""
        if "none" in (networks if networks is not None else self._networks()):
            self.client.api.disconnect_container_from_network(self.id, "none", force=True)

    def _move(self, network: bool) -> None:
        """Replace the container by one with ``network`` holding the same files (changes over
        the image); the processes end, the name stays."""
        name = self.name
        spec = self.spec or SandboxSpec(run_id="")
        with tempfile.TemporaryDirectory(prefix="swe-green-move-") as tmp:
            files = capture(self, name, Path(tmp))
            moved = DockerSandbox.start(
                self.client, self.image,
                spec.model_copy(update={"network": network, "name": f"{name[:54]}-moving"}),
                restricted=True, files=files,
            )  # fmt: skip
        self.remove()
        try:
            moved.container.rename(name)
            moved.container.reload()
        except _ENGINE_ERRORS as exc:
            raise self._error("rename the moved container", exc) from exc
        self.container, self.disk_watcher = moved.container, moved.disk_watcher
        self.network = network

    def changes(self) -> list[dict[str, object]]:
        """The engine's list of the container's changes over its image (path, kind)."""
        try:
            return list(self.client.api.diff(self.id) or [])
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"cannot list the changes of container {self.name}: {exc}") from exc

    def snapshot(self, repository: str, tag: str, labels: Mapping[str, str] | None = None) -> str:
        """Commit the container's file system to ``repository:tag``; returns the image id."""
        if self.restricted:
            raise Unsupported("the restricted Docker policy allows no commits")
        inherited = {
            k: v for k, v in self.container.labels.items() if k in (LABEL_RUN, LABEL_INSTANCE)
        }
        conf_labels = {LABEL_TOOL: "1", LABEL_KIND: "snapshot", **inherited, **(labels or {})}
        try:
            image = self.container.commit(
                repository=repository, tag=tag, conf={"Labels": conf_labels}
            )
        except _ENGINE_ERRORS as exc:
            raise self._error("snapshot", exc) from exc
        return _str(image.id)

    @property
    def disk_exceeded(self) -> bool:
        """Whether the container went over its disk budget (and was stopped for it)."""
        return self.disk_watcher is not None and self.disk_watcher.exceeded

    def check_disk(self) -> None:
        """Raise :class:`DiskLimitExceeded` when the container went over its disk budget."""
        if self.disk_watcher is not None and self.disk_watcher.exceeded:
            raise DiskLimitExceeded(f"container {self._label()}: {self.disk_watcher.message()}")

    def kill_processes(self) -> None:
        """Stop every process in the container, then start it again, idle, files kept.

        A kill of the container's init ends every process of its PID namespace, whatever
        they do (a fork bomb, a process of another user, a loop rewriting files), where an
        ``exec`` of ``kill`` could not even start once the process limit is reached. The
        network stays as it was.
        """
        self.check_disk()
        try:
            self.container.reload()
            if self.container.status == "running":
                self.container.kill()
            self.container.start()
        except _ENGINE_ERRORS as exc:
            raise self._error("stop the processes", exc) from exc

    def stop(self, timeout: int = 2) -> None:
        """Stop the container and keep it (``swe-green inspect``); the disk watcher ends."""
        if self.disk_watcher is not None:
            self.disk_watcher.stop()
        try:
            self.container.stop(timeout=timeout)
        except NotFound:
            pass
        except _ENGINE_ERRORS as exc:
            raise self._error("stop", exc) from exc

    def remove(self) -> None:
        """Stop and delete the container (and its anonymous volumes); a no-op when gone."""
        if self.disk_watcher is not None:
            self.disk_watcher.stop()
        try:
            remove_container(self.container)
        except _ENGINE_ERRORS as exc:
            raise self._error("remove", exc) from exc

    def exists(self) -> bool:
        try:
            self.container.reload()
        except NotFound:
            return False
        except _ENGINE_ERRORS:
            return False
        return True

    def is_running(self) -> bool:
        try:
            self.container.reload()
        except NotFound:
            return False
        return self.container.status == "running"

    # ---------------------------------------------------------------- exec
    def exec(
        self, cmd: str | Sequence[str], *, timeout: float = 60, workdir: str | None = None,
        env: Mapping[str, str] | None = None, user: str = "",
    ) -> ExecResult:  # fmt: skip
        """Run ``cmd`` (argv list, or a string for ``bash -c``) and wait at most ``timeout`` s.

        On timeout the command's whole process group gets SIGTERM, then SIGKILL two seconds
        later; the container stays usable. Output beyond the output limit is cut with a marker.
        """
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        if any("\x00" in part for part in argv):
            raise SandboxError("the command contains a NUL byte, which no process can receive")
        self.check_disk()
        api, container_id = self.client.api, _str(self.container.id)
        started = time.monotonic()
        stream = stream_exec(
            api, container_id, argv, timeout=timeout, workdir=workdir, env=env, user=user,
            output_limit=self.limits.output_limit, fail=self._error,
        )  # fmt: skip
        duration = time.monotonic() - started
        self.check_disk()  # the watcher stopped the container under this command
        return exec_result(
            api, container_id, stream, duration=duration, timeout=timeout,
            label=self._label(), fail=self._error,
        )  # fmt: skip

    # ---------------------------------------------------------------- files
    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Write ``data`` to ``path`` in the container (parents created), byte for byte."""
        self._put_archive(posixpath.dirname(path) or "/", file_archive(path, data, mode))

    def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        """The bytes of the file at ``path`` in the container; over ``max_bytes`` (the size
        the archive API states before the data) none is read."""
        try:
            stream, stat = self.container.get_archive(path)
            size = int((stat or {}).get("size") or 0)
            if max_bytes is not None and size > max_bytes:
                stream.close()  # type: ignore[attr-defined]
                raise FileTooLarge(f"{path} holds {size} bytes, over {max_bytes}", size)
            raw = b"".join(stream)
        except NotFound:
            raise FileMissing(f"no file {path} in container {self.name}") from None
        except _ENGINE_ERRORS as exc:
            raise self._error("read a file", exc) from exc
        return only_file(raw, f"{path} in container {self.name}")

    def put_dir(self, host_dir: Path, container_dir: str) -> None:
        """Copy the contents of ``host_dir`` into ``container_dir`` (created if missing)."""
        target = container_dir.rstrip("/")
        with tempfile.TemporaryFile() as spool:
            archive = tree_archive(str(host_dir), posixpath.basename(target), spool)
            self._put_archive(posixpath.dirname(target) or "/", archive)

    def get_archive(self, path: str, out: IO[bytes]) -> None:
        """Write the archive API's tar of ``path`` (a file or a directory) to ``out``."""
        try:
            stream, _ = self.container.get_archive(path)
            for chunk in stream:
                out.write(chunk)
        except NotFound:
            raise SandboxError(f"no {path} in container {self.name}") from None
        except _ENGINE_ERRORS as exc:
            raise self._error("read files", exc) from exc

    def put_archive(self, directory: str, tar: bytes | IO[bytes]) -> None:
        """Unpack a tar (as :meth:`get_archive` gives) into ``directory`` (created if missing)."""
        self._put_archive(directory, tar)

    def _put_archive(self, directory: str, tar_bytes: bytes | IO[bytes]) -> None:
        """Extract ``tar_bytes`` into ``directory``, created first only when it is missing
        (an ``exec`` of ``mkdir`` costs as much as the copy itself)."""
        start = tar_bytes.tell() if not isinstance(tar_bytes, bytes) else 0
        try:
            try:
                if self.container.put_archive(directory, tar_bytes):
                    return
            except (NotFound, requests.exceptions.ConnectionError):
                # no such directory (or no container: mkdir says which); a proxy in front of
                # the engine (Amber's gateway) may drop the connection instead of relaying
                # the 404 that came before the whole archive was sent
                pass
            mk = self.container.exec_run(["mkdir", "-p", directory])
            if mk.exit_code != 0:
                detail = cast(bytes, mk.output).decode(errors="replace").strip()  # not streamed
                raise SandboxError(f"cannot create {directory}: {detail}")
            if not isinstance(tar_bytes, bytes):
                tar_bytes.seek(start)
            self.container.put_archive(directory, tar_bytes)
        except _ENGINE_ERRORS as exc:
            raise self._error("write files", exc) from exc

    # ---------------------------------------------------------------- errors
    def _error(self, action: str, exc: Exception) -> SandboxError:
        if self.disk_exceeded:
            assert self.disk_watcher is not None
            return DiskLimitExceeded(
                f"cannot {action} in container {self._label()}: {self.disk_watcher.message()}"
            )
        if isinstance(exc, NotFound):
            return SandboxError(f"cannot {action}: container {self._label()} no longer exists")
        if isinstance(exc, requests.exceptions.RequestException | OSError) or (
            isinstance(exc, DockerException) and not isinstance(exc, APIError)
        ):
            return SandboxError(
                f"cannot {action} in container {self._label()}: the Docker daemon went away "
                f"({str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__})"
            )
        return SandboxError(f"cannot {action} in container {self._label()}: {exc}")

    def _label(self) -> str:
        """The container's name for a message, else its short id: both from the engine's
        answer the model holds (no call to the engine, which may be the thing that failed)."""
        return self.container.name or _str(self.container.id)[:12]


def _str(value: str | None) -> str:
    """A container's or image's id or name: docker's stubs allow None, the engine always sets
    them on a model it returned."""
    return cast(str, value)
