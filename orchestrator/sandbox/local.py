"""The local backend: a sandbox is a directory of the host and commands run as host processes.

No isolation at all (no limits, no network switch, no snapshots: those raise
:class:`.errors.Unsupported`): it is for tests of the sandbox interface and for development,
as SWE-ReX keeps a local runtime next to its container ones. Paths are host paths; a
command's temporary files (``TMPDIR``) go into the sandbox's directory and leave with it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING

from orchestrator.sandbox import ContainerInfo, ExecResult, ImageInfo, Limits, SandboxSpec
from orchestrator.sandbox.archives import pack, unpack
from orchestrator.sandbox.errors import FileMissing, FileTooLarge, SandboxError, Unsupported
from orchestrator.sandbox.models import OutputCap, Snapshot

if TYPE_CHECKING:
    from orchestrator.sandbox.protocol import ImageStore, Sandbox, SandboxBackend

LOCAL_IMAGE = "local"


@contextmanager
def _host_files(action: str, path: str | Path, sandbox: str) -> Iterator[None]:
    """The host's ``OSError`` as the interface's :class:`SandboxError`."""
    try:
        yield
    except OSError as exc:
        raise SandboxError(f"cannot {action} {path} in sandbox {sandbox}: {exc}") from None


class LocalSandbox:
    """A scratch directory and the host's processes (see the module doc)."""

    def __init__(self, root: Path, name: str, labels: dict[str, str], limits: Limits) -> None:
        self.root, self._name, self._labels, self.limits = root, name, labels, limits
        self.running = True
        self.disk_exceeded = False
        self._groups: set[int] = set()  # the process group of every exec (its session)

    @property
    def id(self) -> str:
        return self._name

    @property
    def name(self) -> str:
        return self._name

    @property
    def image(self) -> str:
        return LOCAL_IMAGE

    def labels(self) -> dict[str, str]:
        return dict(self._labels)

    def exec(
        self, cmd: str | Sequence[str], *, timeout: float = 60, workdir: str | None = None,
        env: Mapping[str, str] | None = None, user: str = "",
    ) -> ExecResult:  # fmt: skip
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        if any("\x00" in part for part in argv):
            raise SandboxError("the command contains a NUL byte, which no process can receive")
        started = time.monotonic()
        process = subprocess.Popen(
            argv, cwd=workdir or self.root,
            env={**os.environ, "TMPDIR": str(self.root), **(env or {})},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        self._groups.add(process.pid)
        timed_out = False
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
        out, err = OutputCap(self.limits.output_limit), OutputCap(self.limits.output_limit)
        out.add(stdout)
        err.add(stderr)
        return ExecResult(
            exit_code=process.returncode, stdout=out.text(), stderr=err.text(),
            duration=time.monotonic() - started, timed_out=timed_out,
            truncated=bool(out.cut or err.cut),
        )  # fmt: skip

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        target = Path(path)
        with _host_files("write", path, self.name):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data.encode() if isinstance(data, str) else data)
            target.chmod(mode)

    def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        with _host_files("read", path, self.name):
            if not Path(path).is_file():
                raise FileMissing(f"no file {path} in sandbox {self.name}")
            size = Path(path).stat().st_size
            if max_bytes is not None and size > max_bytes:
                raise FileTooLarge(f"{path} holds {size} bytes, over {max_bytes}", size)
            return Path(path).read_bytes()

    def put_dir(self, host_dir: Path, container_dir: str) -> None:
        with _host_files("copy a directory to", container_dir, self.name):
            shutil.copytree(host_dir, container_dir, dirs_exist_ok=True)

    def get_archive(self, path: str, out: IO[bytes]) -> None:
        with _host_files("archive", path, self.name):
            out.write(pack(path))

    def put_archive(self, directory: str, tar: bytes | IO[bytes]) -> None:
        with _host_files("unpack an archive into", directory, self.name):
            Path(directory).mkdir(parents=True, exist_ok=True)
            unpack(tar if isinstance(tar, bytes) else tar.read(), directory)

    def changes(self) -> list[dict[str, object]]:
        raise Unsupported("the local backend has no image to compare with")

    def set_network(self, enabled: bool) -> None:
        raise Unsupported("the local backend cannot switch the host's network")

    def snapshot(self, repository: str, tag: str, labels: Mapping[str, str] | None = None) -> str:
        raise Unsupported("the local backend cannot snapshot the host")

    def kill_processes(self) -> None:
        """Kill the process group of every exec so far (what they left in the background)."""
        for group in self._groups:
            try:
                os.killpg(group, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._groups.clear()

    def check_disk(self) -> None:
        """No disk budget here."""

    def stop(self, timeout: int = 2) -> None:
        self.running = False

    def remove(self) -> None:
        self.running = False
        shutil.rmtree(self.root, ignore_errors=True)

    def exists(self) -> bool:
        return self.root.exists()

    def is_running(self) -> bool:
        return self.running and self.exists()


class LocalBackend:
    """Local sandboxes (see the module doc); it knows only the one image ``local``."""

    name = "local"
    commits = False  # the host is no image

    def __init__(self) -> None:
        self.sandboxes: dict[str, LocalSandbox] = {}
        self.images = LocalImages()

    def start(self, source: str | Snapshot, spec: SandboxSpec) -> LocalSandbox:
        if isinstance(source, Snapshot):
            if source.archive is not None:
                raise Unsupported("the local backend cannot lay a snapshot's files over the host")
            source = source.image
        image = source
        if image != LOCAL_IMAGE:
            raise SandboxError(f"the local backend has no image {image!r}, only {LOCAL_IMAGE!r}")
        name = spec.name or f"local-{uuid.uuid4().hex[:12]}"
        root = Path(tempfile.mkdtemp(prefix=f"{name}-"))
        sandbox = LocalSandbox(root, name, spec.labels(), spec.limits)
        self.sandboxes[name] = sandbox
        return sandbox

    def keep(
        self, sandbox: Sandbox, name: str, directory: Path,
        labels: Mapping[str, str] | None = None,
    ) -> Snapshot:  # fmt: skip
        raise Unsupported("the local backend cannot keep the host's files for another sandbox")

    def attach(self, ref: str, limits: Limits | None = None) -> LocalSandbox:
        if ref not in self.sandboxes:
            raise SandboxError(f"sandbox {ref} does not exist")
        return self.sandboxes[ref]

    def containers(self, labels: Mapping[str, str] | None = None) -> list[ContainerInfo]:
        found = [
            ContainerInfo(
                id=s.id,
                name=s.name,
                status="running" if s.is_running() else "exited",
                run_id=s.labels().get("swe-green.run", ""),
                labels=s.labels(),
            )  # fmt: skip
            for s in self.sandboxes.values()
            if s.exists() and all(s.labels().get(k) == v for k, v in (labels or {}).items())
        ]
        return found

    def all_containers(self) -> list[ContainerInfo]:
        return self.containers()

    def name_taken(self, name: str) -> bool:
        return name in self.sandboxes and self.sandboxes[name].exists()

    def start_container(self, ref: str) -> None:
        self.attach(ref).running = True

    def open_shell(self, ref: str, shell: str, workdir: str) -> int:
        """The shell as a host process in ``workdir`` (a host path), or in the sandbox's
        directory when there is no such directory."""
        sandbox = self.attach(ref)
        cwd = workdir if Path(workdir).is_dir() else sandbox.root
        env = {**os.environ, "TMPDIR": str(sandbox.root)}
        return subprocess.call([shell], cwd=cwd, env=env)

    def stop_container(self, ref: str, timeout: int = 2) -> bool:
        if ref not in self.sandboxes:
            return False
        self.sandboxes[ref].stop()
        return True

    def remove_container(self, ref: str) -> bool:
        sandbox = self.sandboxes.pop(ref, None)
        if sandbox is None:
            return False
        sandbox.remove()
        return True

    def cleanup(self, labels: Mapping[str, str]) -> list[str]:
        names = [info.name for info in self.containers(labels)]
        for name in names:
            self.remove_container(name)
        return names

    def remove_idle_networks(
        self, labels: Mapping[str, str], created_before: float, *, dry_run: bool = False
    ) -> list[str]:
        return []  # local sandboxes have no networks of their own


class LocalImages:
    """The local backend's one image, ``local`` (the host): nothing to tag, pull, push,
    import or build."""

    def find(
        self, labels: Mapping[str, str] | None = None, reference: str | None = None
    ) -> list[ImageInfo]:
        return [ImageInfo(id=LOCAL_IMAGE, tags=[LOCAL_IMAGE])] if not labels else []

    def exists(self, name: str) -> bool:
        return name == LOCAL_IMAGE

    def labels(self, name: str) -> dict[str, str]:
        return {}

    def tag(self, name: str, repository: str, tag: str) -> None:
        raise Unsupported("the local backend has no images to tag")

    def remove(self, image_id: str) -> bool:
        return True

    def pull(self, reference: str) -> None:
        raise Unsupported("the local backend has no registry")

    def push(self, name: str, reference: str) -> None:
        raise Unsupported("the local backend has no registry")

    def import_tarball(self, tar_path: Path, repository: str, tag: str, changes: list[str]) -> None:
        raise Unsupported("the local backend cannot import images")

    def build(
        self, context: Path, tag: str, buildargs: Mapping[str, str], labels: Mapping[str, str]
    ) -> Iterator[str]:
        raise Unsupported("the local backend cannot build images")


# mypy checks that the classes implement their Protocols (nothing to do at run time)
if TYPE_CHECKING:
    _sandbox: type[Sandbox] = LocalSandbox
    _backend: type[SandboxBackend] = LocalBackend
    _store: type[ImageStore] = LocalImages
