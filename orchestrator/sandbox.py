"""One container per instance, behind a small interface the rest of the code uses.

``Sandbox`` starts a labelled, resource-limited container, runs commands in it with a timeout
that kills the whole process group, moves files in and out byte for byte, switches the network
on and off, snapshots itself to an image, and removes itself.

Least privilege: every container starts with all capabilities dropped except
:data:`CAPABILITIES` (file ownership and modes, and switching users, which apt and some test
suites need), ``no-new-privileges``, and CPU, memory and process limits.

Disk budget (``Limits.disk``): the daemon enforces a size with ``storage_opt`` only on
overlay2 over XFS with project quotas. Everywhere else (ext4) a watcher thread measures the
container's writable layer (``du`` of the overlay2 upper directory when this process can read
it, else the API's ``SizeRw``), polling faster as the size nears the budget, and kills the
container once it is over. From then on every operation on the sandbox raises
:class:`DiskLimitExceeded`. ``bench/disk.py`` measures how fast a runaway writer is stopped.
"""

from __future__ import annotations

import io
import os
import posixpath
import socket
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

import docker
import requests
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.models.containers import Container
from docker.utils.socket import STDERR, STDOUT, frames_iter
from pydantic import BaseModel

from .docker_engine import LABEL_INSTANCE, LABEL_KIND, LABEL_ROLE, LABEL_RUN, LABEL_TOOL
from .errors import SandboxError, UserError
from .file_snapshot import FileSnapshot, capture, restore

# capabilities every container keeps (all others are dropped): chown/chmod of any file, and
# switching users (apt's sandbox user, test suites that drop privileges)
CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETUID", "SETGID")
TRUNCATION_MARKER = "\n[... output cut: {cut} more bytes not shown ...]\n"
_ENGINE_ERRORS = (DockerException, requests.exceptions.RequestException)
# the host-side backstop fires this long after the in-container `timeout` should have
_BACKSTOP_GRACE = 10.0


class Limits(BaseModel):
    cpus: float = 2.0
    memory: str = "6g"
    pids_limit: int = 2048
    output_limit: int = 1_000_000
    # bytes the container may write (its writable layer); None: no budget
    disk: int | None = None
    # the disk watcher's slowest poll, seconds (it polls faster near the budget)
    disk_poll: float = 1.0


class DiskLimitExceeded(SandboxError):
    """The container wrote more than its disk budget and was stopped."""


def format_bytes(n: float) -> str:
    """``10 GiB``, ``200 MiB``, ``1.5 KiB``: sizes as the settings give them (powers of 1024)."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{int(n)} bytes"


class ExecResult(BaseModel):
    exit_code: int | None
    stdout: str
    stderr: str
    duration: float
    timed_out: bool = False
    truncated: bool = False
    oom_killed: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def output(self) -> str:
        """stdout then stderr, as a person would read them."""
        if self.stdout and self.stderr:
            return self.stdout.rstrip("\n") + "\n" + self.stderr
        return self.stdout or self.stderr


class _Capped:
    """Keeps the first ``limit`` bytes of a stream and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buf = bytearray()
        self.cut = 0

    def add(self, data: bytes) -> None:
        room = self.limit - len(self.buf)
        if room > 0:
            self.buf += data[:room]
        self.cut += max(0, len(data) - max(room, 0))

    def text(self) -> str:
        text = self.buf.decode("utf-8", errors="replace")
        return text + TRUNCATION_MARKER.format(cut=self.cut) if self.cut else text


class DiskWatcher:
    """Polls a container's writable-layer size; kills the container once it is over ``limit``.

    The poll interval shrinks as the size nears the budget, from the rate of growth seen
    (never below ``min_poll``), so a fast writer is measured often and an idle container
    costs one ``du`` per ``max_poll`` seconds.
    """

    min_poll = 0.05

    def __init__(
        self, client: docker.DockerClient, container_id: str, limit: int, max_poll: float = 1.0
    ) -> None:
        self.client = client
        self.container_id = container_id
        self.limit = limit
        self.max_poll = max(max_poll, self.min_poll)
        self.upper_dir = self._upper_dir()
        # bytes written before the budget starts (files laid over the image): not counted
        self.baseline = 0
        self.size = 0  # the last measurement, bytes
        self.peak = 0
        self.exceeded_at: float | None = None  # time.monotonic() when it was killed
        self.exceeded_size = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name=f"disk-{container_id[:12]}", daemon=True
        )

    def start(self) -> DiskWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    @property
    def exceeded(self) -> bool:
        return self.exceeded_at is not None

    def message(self) -> str:
        return (
            f"the container wrote more than its disk budget of {format_bytes(self.limit)} "
            f"({format_bytes(self.exceeded_size)} measured) and was stopped"
        )

    def _upper_dir(self) -> str | None:
        try:
            data = self.client.api.inspect_container(self.container_id)["GraphDriver"]["Data"]
            upper = (data or {}).get("UpperDir")
        except (*_ENGINE_ERRORS, KeyError, TypeError):
            return None
        return upper if upper and os.access(upper, os.R_OK | os.X_OK) else None

    def measure(self) -> int | None:
        """Bytes in the writable layer (allocated blocks), or None when it cannot be read."""
        if self.upper_dir is not None:
            done = subprocess.run(
                ["du", "-s", "-x", "-B1", self.upper_dir],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            # files vanishing mid-walk make du complain but the total still stands
            first = done.stdout.split()
            if first and first[0].isdigit():
                return int(first[0])
        try:
            rows = self.client.api.containers(
                all=True, filters={"id": self.container_id}, size=True
            )
        except _ENGINE_ERRORS:
            return None
        return int(rows[0].get("SizeRw") or 0) if rows else None

    def _loop(self) -> None:
        last_size, last_time = 0, time.monotonic()
        interval = self.min_poll
        while not self._stop.wait(interval):
            size = self.measure()
            now = time.monotonic()
            if size is None:
                interval = self.max_poll
                continue
            self.size, self.peak = size, max(self.peak, size)
            if size - self.baseline > self.limit:
                self.exceeded_size = size - self.baseline
                self.exceeded_at = now
                try:
                    self.client.api.kill(self.container_id)
                    self.client.api.wait(self.container_id, timeout=30)
                except _ENGINE_ERRORS:
                    pass  # already stopped or gone
                return
            rate = max(size - last_size, 0) / max(now - last_time, 1e-3)
            last_size, last_time = size, now
            headroom = self.limit + self.baseline - size
            headroom_time = headroom / rate if rate > 0 else self.max_poll
            interval = min(self.max_poll, max(self.min_poll, headroom_time / 4))


class Sandbox:
    """A running container of this tool. Create with :meth:`start` or :meth:`attach`."""

    def __init__(
        self,
        client: docker.DockerClient,
        container: Container,
        limits: Limits,
        *,
        image: str = "",
        network: bool = True,
        restricted: bool = False,
    ) -> None:
        self.client = client
        self.container = container
        self.limits = limits
        self.disk_watcher: DiskWatcher | None = None
        self.image = image or str((container.attrs.get("Config") or {}).get("Image") or "")
        # under the restricted Docker policy the network is fixed at creation: switching it
        # moves the files into a new container (see set_network)
        self.network = network
        self.restricted = restricted
        self._start_args: dict[str, object] = {}

    # ---------------------------------------------------------------- lifecycle
    @classmethod
    def start(
        cls,
        client: docker.DockerClient,
        image: str,
        *,
        run_id: str,
        instance_id: str = "",
        role: str = "instance",
        limits: Limits | None = None,
        network: bool = True,
        env: Mapping[str, str] | None = None,
        name: str | None = None,
        workdir: str = "/",
        restricted: bool = False,
        files: FileSnapshot | None = None,
    ) -> Sandbox:
        """Start a container from ``image`` that idles until it is told what to do.

        ``restricted``: within what Amber's Docker gateway allows, so no network
        inspect/connect/disconnect: the container is created with the bridge network or
        none. ``files``: a :class:`FileSnapshot` of ``image`` laid over it before the disk
        watcher starts (its budget counts from there).
        """
        start_args: dict[str, object] = dict(
            image=image, run_id=run_id, instance_id=instance_id, role=role, limits=limits,
            env=env, workdir=workdir, restricted=restricted,
        )  # fmt: skip
        limits = limits or Limits()
        labels = {LABEL_TOOL: "1", LABEL_RUN: run_id, LABEL_INSTANCE: instance_id, LABEL_ROLE: role}
        try:
            client.images.get(image)
        except ImageNotFound:
            raise UserError(
                f"Docker image {image} does not exist.",
                "build the base images with `swe-green images build`.",
            ) from None
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"could not start a container from {image}: {exc}") from exc
        options = dict(
            command=["sleep", "infinity"],
            detach=True,
            init=True,
            name=name,
            labels=labels,
            environment=dict(env or {}),
            working_dir=workdir,
            nano_cpus=int(limits.cpus * 1e9),
            mem_limit=limits.memory,
            memswap_limit=limits.memory,
            pids_limit=limits.pids_limit,
            network_mode="none" if restricted and not network else "bridge",
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
                container = client.containers.run(image, **options, **extra)  # type: ignore[arg-type]
            except APIError as exc:
                if not quota or not _is_storage_opt_error(exc):
                    raise
                _STORAGE_OPT[_daemon_key(client)] = False
                container = client.containers.run(image, **options)  # type: ignore[arg-type]
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"could not start a container from {image}: {exc}") from exc
        sandbox = cls(
            client, container, limits, image=image, network=network or not restricted,
            restricted=restricted,
        )  # fmt: skip
        sandbox._start_args = start_args
        try:
            if files is not None:
                restore(sandbox, files)
            if limits.disk is not None:
                watcher = DiskWatcher(client, container.id, limits.disk, limits.disk_poll)
                watcher.baseline = (watcher.measure() or 0) if files is not None else 0
                sandbox.disk_watcher = watcher.start()
            if not network:
                sandbox.set_network(False)
        except SandboxError:
            sandbox.remove()
            raise
        return sandbox

    @classmethod
    def attach(
        cls, client: docker.DockerClient, container_id: str, limits: Limits | None = None
    ) -> Sandbox:
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
        with tempfile.TemporaryDirectory(prefix="swe-green-move-") as tmp:
            files = capture(self, name, Path(tmp))
            args = dict(self._start_args)
            image = str(args.pop("image", self.image))
            moved = Sandbox.start(
                self.client, image, **args, network=network, files=files,  # type: ignore[arg-type]
                name=f"{name[:54]}-moving",
            )  # fmt: skip
        self.remove()
        try:
            moved.container.rename(name)
            moved.container.reload()
        except _ENGINE_ERRORS as exc:
            raise self._error("rename the moved container", exc) from exc
        self.container, self.disk_watcher = moved.container, moved.disk_watcher
        self.network = network

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
        """Unpack the tar ``tar`` into ``directory`` (created if missing)."""
        self._put_archive(directory, tar)

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
        self,
        cmd: str | Sequence[str],
        *,
        timeout: float = 60,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
        user: str = "",
    ) -> ExecResult:
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

        out, err = _Capped(self.limits.output_limit), _Capped(self.limits.output_limit)
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
        duration = time.monotonic() - started
        self.check_disk()  # the watcher stopped the container under this command

        try:
            state = api.exec_inspect(exec_id)
        except _ENGINE_ERRORS as exc:
            raise self._error("exec", exc) from exc
        exit_code = state.get("ExitCode")
        if state.get("Running") and not backstop_fired.is_set():
            raise SandboxError(
                f"cannot exec in container {self._label()}: the output stream from the Docker "
                "daemon ended while the command was still running"
            )
        timed_out = (
            backstop_fired.is_set()
            or exit_code == 124
            or (exit_code == 137 and duration >= timeout)
        )
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
        payload = data.encode() if isinstance(data, str) else data
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(posixpath.basename(path))
            info.size = len(payload)
            info.mode = mode
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(payload))
        self._put_archive(posixpath.dirname(path) or "/", buf.getvalue())

    def read_file(self, path: str) -> bytes:
        """The bytes of the file at ``path`` in the container."""
        try:
            stream, _ = self.container.get_archive(path)
            raw = b"".join(stream)
        except NotFound:
            raise SandboxError(f"no file {path} in container {self.name}") from None
        except _ENGINE_ERRORS as exc:
            raise self._error("read a file", exc) from exc
        with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
            member = tar.next()
            if member is None or not member.isfile():
                raise SandboxError(f"{path} in container {self.name} is not a regular file")
            extracted = tar.extractfile(member)
            assert extracted is not None
            return extracted.read()

    def put_dir(self, host_dir: Path, container_dir: str) -> None:
        """Copy the contents of ``host_dir`` into ``container_dir`` (created if missing)."""
        with tempfile.TemporaryFile() as spool:
            with tarfile.open(fileobj=spool, mode="w") as tar:
                tar.add(str(host_dir), arcname=posixpath.basename(container_dir.rstrip("/")))
            spool.seek(0)
            self._put_archive(posixpath.dirname(container_dir.rstrip("/")) or "/", spool)

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
