"""The Docker backend of the sandbox interface (:mod:`.protocol`): the only module of the
product that imports ``docker``.

:class:`DockerSandbox` starts a labelled, resource-limited container, runs commands in it with
a timeout that kills the whole process group, moves files in and out byte for byte, switches
the network on and off, snapshots itself to an image, and removes itself.
:class:`DockerBackend` starts them, lists and removes containers and images by label, and
imports or builds images; :func:`connect` finds the engine.

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

import os
import posixpath
import socket
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import docker
import requests
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.models.containers import Container
from docker.models.images import Image
from docker.utils import parse_repository_tag
from docker.utils.socket import STDERR, STDOUT, frames_iter

from orchestrator.sandbox.archives import file_archive, only_file, tree_archive
from orchestrator.sandbox.disk import DiskWatcher
from orchestrator.sandbox.errors import (
    BackendUnavailable,
    DiskLimitExceeded,
    ImageMissing,
    NameTaken,
    SandboxError,
)
from orchestrator.sandbox.file_snapshot import capture, restore
from orchestrator.sandbox.models import (
    LABEL_INSTANCE,
    LABEL_KIND,
    LABEL_ROLE,
    LABEL_RUN,
    LABEL_TOOL,
    ContainerInfo,
    ExecResult,
    ImageInfo,
    Limits,
    OutputCap,
    SandboxSpec,
)

# capabilities every container keeps (all others are dropped): chown/chmod of any file, and
# switching users (apt's sandbox user, test suites that drop privileges)
CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETUID", "SETGID")
_ENGINE_ERRORS = (DockerException, requests.exceptions.RequestException)
# the host-side backstop fires this long after the in-container `timeout` should have
_BACKSTOP_GRACE = 10.0


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
        **fields: Any,
    ) -> DockerSandbox:
        """Start a container from ``image`` that idles until it is told what to do; ``spec``
        or its ``fields`` say how.

        ``restricted``: within what Amber's Docker gateway allows, so no network
        inspect/connect/disconnect: the container is created with the bridge network or
        none. ``spec.files``: a :class:`FileSnapshot` of ``image`` laid over it before the
        disk watcher starts (its budget counts from there).
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
        container = _run_container(client, image, spec, restricted)
        sandbox = cls(client, container, spec.limits, spec=spec, image=image, restricted=restricted)
        try:
            if spec.files is not None:
                restore(sandbox, spec.files)
            if spec.limits.disk is not None:
                watcher = _disk_watcher(client, container.id, spec.limits)
                watcher.baseline = (watcher.measure() or 0) if spec.files is not None else 0
                sandbox.disk_watcher = watcher.start()
            if not spec.network:
                sandbox.set_network(False)
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
        return self.container.id

    @property
    def name(self) -> str:
        return self.container.name

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
            self.container.reload()
            networks = self.container.attrs["NetworkSettings"]["Networks"] or {}
            bridge = self.client.networks.get("bridge")
            if enabled and "bridge" not in networks:
                bridge.connect(self.container)
            elif not enabled and "bridge" in networks:
                bridge.disconnect(self.container, force=True)
        except _ENGINE_ERRORS as exc:
            raise self._error("switch the network", exc) from exc

    def _move(self, network: bool) -> None:
        """Replace the container by one with ``network`` holding the same files (changes over
        the image); the processes end, the name stays."""
        name = self.name
        spec = self.spec or SandboxSpec(run_id="")
        with tempfile.TemporaryDirectory(prefix="swe-green-move-") as tmp:
            files = capture(self, name, Path(tmp))
            moved = DockerSandbox.start(
                self.client, self.image,
                spec.model_copy(update={"network": network, "files": files,
                                        "name": f"{name[:54]}-moving"}),
                restricted=True,
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
            return list(self.client.api.diff(self.container.id) or [])
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"cannot list the changes of container {self.name}: {exc}") from exc

    def snapshot(self, repository: str, tag: str, labels: Mapping[str, str] | None = None) -> str:
        """Commit the container's file system to ``repository:tag``; returns the image id."""
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
        return image.id

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
            self.container.remove(force=True, v=True)
        except NotFound:
            pass
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
        wrapped = ["timeout", "-k", "2", f"{max(timeout, 0.1):.1f}s", *argv]
        api = self.client.api
        started = time.monotonic()
        try:
            exec_id = api.exec_create(
                self.container.id,
                wrapped,
                workdir=workdir,
                environment=dict(env or {}),
                user=user,
            )["Id"]
            sock = api.exec_start(exec_id, socket=True)
        except _ENGINE_ERRORS as exc:
            raise self._error("exec", exc) from exc

        out, err, backstop_fired = self._collect(sock, timeout)
        duration = time.monotonic() - started
        self.check_disk()  # the watcher stopped the container under this command

        try:
            state = api.exec_inspect(exec_id)
        except _ENGINE_ERRORS as exc:
            raise self._error("exec", exc) from exc
        exit_code = state.get("ExitCode")
        if state.get("Running") and not backstop_fired:
            raise SandboxError(
                f"cannot exec in container {self._label()}: the output stream from the Docker "
                "daemon ended while the command was still running"
            )
        timed_out = backstop_fired or exit_code == 124 or (exit_code == 137 and duration >= timeout)
        oom = exit_code == 137 and not timed_out and self._oom_kills() > 0
        return ExecResult(
            exit_code=exit_code,
            stdout=out.text(),
            stderr=err.text(),
            duration=duration,
            timed_out=timed_out,
            truncated=bool(out.cut or err.cut),
            oom_killed=oom,
        )

    def _collect(self, sock: object, timeout: float) -> tuple[OutputCap, OutputCap, bool]:
        """stdout and stderr of an exec's stream (capped), and whether the host-side backstop
        had to close the stream (the in-container ``timeout`` did not end the command)."""
        out, err = OutputCap(self.limits.output_limit), OutputCap(self.limits.output_limit)
        backstop_fired = threading.Event()

        def backstop() -> None:
            backstop_fired.set()
            _close(sock)

        timer = threading.Timer(timeout + _BACKSTOP_GRACE, backstop)
        timer.daemon = True
        timer.start()
        try:
            for stream, data in frames_iter(sock, tty=False):
                if stream == STDERR:
                    err.add(data)
                elif stream == STDOUT:
                    out.add(data)
        except (OSError, ValueError) as exc:
            if not backstop_fired.is_set():
                raise self._error("exec", exc) from exc
        finally:
            timer.cancel()
            _close(sock)
        return out, err, backstop_fired.is_set()

    def _oom_kills(self) -> int:
        """The container's OOM-kill counter (cgroup v1 or v2)."""
        probe = (
            "cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control "
            "2>/dev/null | awk '$1==\"oom_kill\"{print $2}'"
        )
        try:
            api = self.client.api
            exec_id = api.exec_create(self.container.id, ["sh", "-c", probe])["Id"]
            text = api.exec_start(exec_id).decode(errors="replace").strip()
        except _ENGINE_ERRORS:
            return 0
        return int(text.split()[0]) if text.split() and text.split()[0].isdigit() else 0

    # ---------------------------------------------------------------- files
    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Write ``data`` to ``path`` in the container (parents created), byte for byte."""
        self._put_archive(posixpath.dirname(path) or "/", file_archive(path, data, mode))

    def read_file(self, path: str) -> bytes:
        """The bytes of the file at ``path`` in the container."""
        try:
            stream, _ = self.container.get_archive(path)
            raw = b"".join(stream)
        except NotFound:
            raise SandboxError(f"no file {path} in container {self.name}") from None
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
        try:
            mk = self.container.exec_run(["mkdir", "-p", directory])
            if mk.exit_code != 0:
                detail = mk.output.decode(errors="replace").strip()
                raise SandboxError(f"cannot create {directory}: {detail}")
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
        try:
            return self.container.name
        except Exception:  # noqa: BLE001 - a name is only for the message
            return self.container.id[:12]


def _run_container(
    client: docker.DockerClient, image: str, spec: SandboxSpec, restricted: bool
) -> Container:
    """The container of ``spec``: idle, labelled, limited, least privilege."""
    limits = spec.limits
    options = dict(
        command=["sleep", "infinity"],
        detach=True,
        init=True,
        name=spec.name,
        labels=spec.labels(),
        environment=dict(spec.env),
        working_dir=spec.workdir,
        nano_cpus=int(limits.cpus * 1e9),
        mem_limit=limits.memory,
        memswap_limit=limits.memory,
        pids_limit=limits.pids_limit,
        network_mode="none" if restricted and not spec.network else "bridge",
        cap_drop=["ALL"],
        cap_add=list(CAPABILITIES),
        security_opt=["no-new-privileges"],
    )
    quota = limits.disk is not None and _storage_opt_supported(client)
    try:
        try:
            # the quota sits a little above the budget so that the watcher, which gives
            # the clear `disk_limit` outcome, fires first; the quota is the backstop
            extra = {"storage_opt": {"size": str(int(limits.disk * 1.05))}} if quota else {}
            return client.containers.run(image, **options, **extra)  # type: ignore[arg-type]
        except APIError as exc:
            if not quota or not _is_storage_opt_error(exc):
                raise
            _STORAGE_OPT[_daemon_key(client)] = False
            return client.containers.run(image, **options)  # type: ignore[arg-type]
    except APIError as exc:
        if exc.status_code == 409:
            raise NameTaken(f"a container named {spec.name} exists already") from exc
        raise SandboxError(f"could not start a container from {image}: {exc}") from exc
    except _ENGINE_ERRORS as exc:
        raise SandboxError(f"could not start a container from {image}: {exc}") from exc


def _disk_watcher(client: docker.DockerClient, container_id: str, limits: Limits) -> DiskWatcher:
    """A watcher of the container's writable layer: ``du`` of its overlay2 upper directory
    when this process can read it, else the API's ``SizeRw``."""
    assert limits.disk is not None

    def reported_size() -> int | None:
        try:
            rows = client.api.containers(all=True, filters={"id": container_id}, size=True)
        except _ENGINE_ERRORS:
            return None
        return int(rows[0].get("SizeRw") or 0) if rows else None

    def kill() -> None:
        try:
            client.api.kill(container_id)
            client.api.wait(container_id, timeout=30)
        except _ENGINE_ERRORS:
            pass  # already stopped or gone

    return DiskWatcher(
        container_id[:12], limits.disk, limits.disk_poll,
        upper_dir=writable_layer_dir(client, container_id), reported_size=reported_size, kill=kill,
    )  # fmt: skip


def writable_layer_dir(client: docker.DockerClient, container_id: str) -> str | None:
    try:
        data = client.api.inspect_container(container_id)["GraphDriver"]["Data"]
        upper = (data or {}).get("UpperDir")
    except (*_ENGINE_ERRORS, KeyError, TypeError):
        return None
    return upper if upper and os.access(upper, os.R_OK | os.X_OK) else None


def _close(sock: object) -> None:
    for target in (getattr(sock, "_sock", None), sock):
        if target is None:
            continue
        try:
            if isinstance(target, socket.socket):
                target.shutdown(socket.SHUT_RDWR)
            target.close()  # type: ignore[attr-defined]
        except OSError:
            pass


# storage_opt support per daemon: unknown (missing), True, False
_STORAGE_OPT: dict[str, bool] = {}


def _daemon_key(client: docker.DockerClient) -> str:
    return str(getattr(client.api, "base_url", id(client)))


def _storage_opt_supported(client: docker.DockerClient) -> bool:
    """Whether the daemon can enforce a container size (overlay2 on XFS with project quotas).

    Decided from ``docker info`` (overlay2 on xfs); a start that the daemon still refuses
    (no ``pquota`` mount option) turns it off for the rest of the process.
    """
    key = _daemon_key(client)
    if key not in _STORAGE_OPT:
        try:
            info = client.info()
            status = dict(info.get("DriverStatus") or [])
            _STORAGE_OPT[key] = (
                info.get("Driver") == "overlay2"
                and status.get("Backing Filesystem", "").lower() == "xfs"
            )
        except _ENGINE_ERRORS:
            _STORAGE_OPT[key] = False
    return _STORAGE_OPT[key]


def _is_storage_opt_error(exc: APIError) -> bool:
    text = str(exc).lower()
    return "storage-opt" in text or "storage opt" in text or "quota" in text


# ---------------------------------------------------------------------------- the backend
_FIX = (
    "start Docker (as root on Debian, `scripts/setup` installs docker.io and starts dockerd), "
    "or point DOCKER_HOST at a running engine."
)


def connect(timeout: float = 60, *, restricted: bool = False) -> DockerBackend:
    """The engine named by DOCKER_HOST (or the default socket), checked by ping; used within
    Amber's gateway policy when ``restricted`` (see :class:`DockerBackend`)."""
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
    except DockerException as exc:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BackendUnavailable(
            f"No Docker daemon answers at {where} ({text[:200]}).", _FIX
        ) from None
    return DockerBackend(client, restricted=restricted)


class DockerBackend:
    """Sandboxes as containers of one Docker engine (see :class:`.protocol.SandboxBackend`).

    ``restricted``: only what Amber's Docker gateway allows (no commit, build, import, image
    listing, network connect/disconnect): sandboxes are created with their network, and
    switching it moves their files into a new container.
    """

    name = "docker"

    def __init__(self, client: docker.DockerClient, *, restricted: bool = False) -> None:
        self.client = client
        self.restricted = restricted

    def start(self, image: str, spec: SandboxSpec) -> DockerSandbox:
        return DockerSandbox.start(self.client, image, spec, restricted=self.restricted)

    def attach(self, ref: str, limits: Limits | None = None) -> DockerSandbox:
        return DockerSandbox.attach(self.client, ref, limits)

    def containers(self, labels: Mapping[str, str] | None = None) -> list[ContainerInfo]:
        filters = [f"{LABEL_TOOL}=1", *(f"{k}={v}" for k, v in (labels or {}).items())]
        try:
            found = self.client.containers.list(
                all=True, filters={"label": filters}, ignore_removed=True
            )
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"cannot list containers: {exc}") from exc
        infos = [_container_info(c) for c in found]
        return sorted(infos, key=lambda info: info.created, reverse=True)

    def all_containers(self) -> list[ContainerInfo]:
        """Every container of the engine, this tool's or not (to see which use an image)."""
        found = self.client.containers.list(all=True, ignore_removed=True)
        return [_container_info(c) for c in found]

    def name_taken(self, name: str) -> bool:
        try:
            self.client.containers.get(name)
        except NotFound:
            return False
        return True

    def start_container(self, ref: str) -> None:
        try:
            self.client.containers.get(ref).start()
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"cannot start container {ref}: {exc}") from exc

    def stop_container(self, ref: str, timeout: int = 2) -> bool:
        try:
            self.client.containers.get(ref).stop(timeout=timeout)
        except NotFound:
            return False
        return True

    def remove_container(self, ref: str) -> bool:
        try:
            self.client.containers.get(ref).remove(force=True, v=True)
        except NotFound:
            return False
        return True

    def cleanup(self, labels: Mapping[str, str]) -> list[str]:
        removed = []
        for info in self.containers(labels):
            if self.remove_container(info.id):
                removed.append(info.name)
        return removed

    def images(
        self, labels: Mapping[str, str] | None = None, reference: str | None = None
    ) -> list[ImageInfo]:
        filters = {"label": [f"{k}={v}" for k, v in labels.items()]} if labels else None
        try:
            found = self.client.images.list(name=reference, filters=filters)
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"the Docker engine refused to list images ({exc})") from exc
        return [_image_info(image) for image in found]

    def image_exists(self, name: str) -> bool:
        try:
            self.client.images.get(name)
        except ImageNotFound:
            return False
        except _ENGINE_ERRORS as exc:
            raise SandboxError(str(exc)) from exc
        return True

    def image_labels(self, name: str) -> dict[str, str]:
        return dict(self.client.images.get(name).labels or {})

    def tag_image(self, name: str, repository: str, tag: str) -> None:
        self.client.images.get(name).tag(repository, tag)

    def remove_image(self, image_id: str) -> bool:
        try:
            self.client.images.remove(image_id, force=True)
        except NotFound:
            pass
        except APIError as exc:
            if exc.status_code != 409:
                raise SandboxError(f"cannot remove image {image_id}: {exc}") from exc
            return False
        return True

    def pull_image(self, reference: str) -> None:
        repository, tag = parse_repository_tag(reference)
        try:
            self.client.images.pull(repository, tag=tag or "latest")
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"cannot pull {reference}: {exc}") from exc

    def import_image(self, tar_path: Path, repository: str, tag: str, changes: list[str]) -> None:
        try:
            self.client.api.import_image_from_file(
                str(tar_path), repository=repository, tag=tag, changes=changes
            )
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"docker import of {repository}:{tag} failed: {exc}") from exc

    def build_image(
        self, context: Path, tag: str, buildargs: Mapping[str, str], labels: Mapping[str, str]
    ) -> Iterator[str]:
        try:
            for chunk in self.client.api.build(
                path=str(context), tag=tag, buildargs=dict(buildargs), rm=True, decode=True,
                labels=dict(labels),
            ):  # fmt: skip
                if "error" in chunk:
                    raise SandboxError(chunk["error"].strip())
                yield chunk.get("stream", "")
        except _ENGINE_ERRORS as exc:
            raise SandboxError(str(exc)) from exc


def _container_info(container: Container) -> ContainerInfo:
    labels = dict(container.labels or {})
    return ContainerInfo(
        id=container.id, name=container.name, status=container.status,
        run_id=labels.get(LABEL_RUN, ""), instance_id=labels.get(LABEL_INSTANCE, ""),
        role=labels.get(LABEL_ROLE, ""), created=container.attrs.get("Created", ""),
        image_id=container.attrs.get("Image", ""), labels=labels,
    )  # fmt: skip


def _image_info(image: Image) -> ImageInfo:
    return ImageInfo(
        id=image.id, short_id=image.short_id, tags=list(image.tags),
        labels=dict(image.labels or {}), size=image.attrs.get("Size", 0) or 0,
        parent=image.attrs.get("Parent", "") or "", created=image.attrs.get("Created", ""),
    )  # fmt: skip
