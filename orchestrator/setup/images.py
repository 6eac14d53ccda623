"""Base images: one per available Python, built offline from Debian's archive or from a Dockerfile.

Offline (``debootstrap``): debootstrap a Debian root file system with git, patch, a compiler
and the suite's Python, add the host's CA bundle, ``docker import`` it, then install uv
(best effort). Online (``dockerfile``): ``images/base/Dockerfile`` does the same from
``debian:<suite>-slim``. Both give the image ``<prefix>/base:py<version>``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_fixed

from orchestrator.errors import UserError
from orchestrator.image_names import base_image_name
from orchestrator.sandbox import Limits, SandboxBackend, SandboxError, SandboxSpec
from orchestrator.sandbox.models import LABEL_KIND, LABEL_TOOL
from orchestrator.settings import EnvironmentConfig
from orchestrator.setup.build_steps import Steps
from sandbox_tools.contract import UV_VENV

SUITES: dict[str, str] = {"3.9": "bullseye", "3.11": "bookworm", "3.13": "trixie"}
PACKAGES = [
    "ca-certificates", "git", "patch", "python3", "python3-venv", "python3-pip",
    "python3-dev", "build-essential", "pkg-config", "procps", "curl", "wget", "locales",
]  # fmt: skip
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
CA_IN_IMAGE = "/etc/ssl/certs/ca-certificates.crt"
IMAGE_ENV = {
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PIP_CERT": CA_IN_IMAGE,
    "SSL_CERT_FILE": CA_IN_IMAGE,
    "REQUESTS_CA_BUNDLE": CA_IN_IMAGE,
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "PIP_BREAK_SYSTEM_PACKAGES": "1",
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
}
DOCKERFILE_DIR = Path(__file__).resolve().parents[2] / "images" / "base"
Method = Literal["auto", "debootstrap", "dockerfile"]
Progress = Callable[[str], None]
DEBOOTSTRAP_TIMEOUT = 600  # seconds; a normal run takes one to two minutes
DEBOOTSTRAP_ATTEMPTS = 3


def available_pythons(backend: SandboxBackend, prefix: str) -> list[str]:
    """The Python versions whose base image exists on this host."""
    return [py for py in SUITES if backend.images.exists(base_image_name(prefix, py))]


def base_pythons(backend: SandboxBackend, settings: EnvironmentConfig) -> list[str]:
    """The Pythons a base image can be had for: those published in the registry when one is
    set (pulled when first used), else those whose local image exists. Both by image inspect
    only, which a restricted Docker gateway allows (it refuses listing images)."""
    if settings.base_image_registry:
        published = {py.strip() for py in settings.registry_pythons.split(",")}
        return [py for py in SUITES if py in published]
    return available_pythons(backend, settings.image_prefix)


def ensure_image(backend: SandboxBackend, name: str) -> None:
    """Pull ``name`` from its registry unless the engine has it already."""
    if backend.images.exists(name):
        return
    try:
        backend.images.pull(name)
    except SandboxError as exc:
        raise UserError(
            f"Cannot pull the base image {name}: {str(exc).splitlines()[0][:300]}",
            "publish it there (images/base/Dockerfile; docs/deployment/agentbeats.md), or "
            "check SWE_GREEN_BASE_IMAGE_REGISTRY and the engine's access to that registry.",
        ) from None


def pick_method(method: Method) -> Literal["debootstrap", "dockerfile"]:
    """``auto`` builds offline when this host can (root and debootstrap), else by Dockerfile."""
    if method != "auto":
        return method
    return "debootstrap" if os.geteuid() == 0 and shutil.which("debootstrap") else "dockerfile"


def build_base_images(
    backend: SandboxBackend,
    prefix: str,
    pythons: list[str],
    *,
    method: Method = "auto",
    force: bool = False,
    mirror: str = "http://deb.debian.org/debian",
    progress: Progress = print,
    record_dir: Path | None = None,
) -> dict[str, str]:
    """Build the base image of each Python in ``pythons``; returns {python: outcome}.

    Each step that takes long says so while it runs, with an estimate from the last build in
    ``record_dir`` (:mod:`.build_steps`), and the build ends with where its time went."""
    unknown = [py for py in pythons if py not in SUITES]
    if unknown:
        raise UserError(
            f"No base image recipe for Python {', '.join(unknown)}.",
            f"choose among {', '.join(SUITES)}.",
        )
    chosen = pick_method(method)
    outcome: dict[str, str] = {}
    with _sigterm_interrupts():
        for py in pythons:
            record = record_dir / f"base-image-steps-py{py}.json" if record_dir else None
            steps = Steps(base_image_name(prefix, py), progress, record)
            outcome[py] = _build_one(backend, prefix, py, chosen, force, mirror, steps)
    return outcome


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM stops the build as Ctrl-C does (the temporary root is removed on the way
    out); in the main thread only, where a handler can be set."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _build_one(
    backend: SandboxBackend,
    prefix: str,
    py: str,
    chosen: Literal["debootstrap", "dockerfile"],
    force: bool,
    mirror: str,
    steps: Steps,
) -> str:
    """Build one base image; ``built``, or ``exists`` when it is there and not ``force``."""
    name = base_image_name(prefix, py)
    if not force and backend.images.exists(name):
        steps.progress(f"{name}: exists, skipped (use --force to rebuild)")
        return "exists"
    steps.progress(f"{name}: building from Debian {SUITES[py]} by {chosen}")
    if chosen == "debootstrap":
        _build_debootstrap(backend, name, SUITES[py], mirror, steps)
    else:
        _build_dockerfile(backend, name, SUITES[py], steps)
    steps.progress(f"{name}: built; {steps.summary().split(': ', 1)[1]}")
    return "built"


def _build_debootstrap(
    backend: SandboxBackend, name: str, suite: str, mirror: str, steps: Steps
) -> None:
    if os.geteuid() != 0 or not shutil.which("debootstrap"):
        raise UserError(
            "The offline image bootstrap needs root and debootstrap.",
            "run as root after `apt-get install -y debootstrap`, or use --method dockerfile.",
        )
    with _temporary_root() as tmp:
        rootfs, log = tmp / "rootfs", tmp / "debootstrap.log"
        with steps.step(f"debootstrap {suite}", doing=lambda: _last_line(log)):
            _debootstrap(suite, rootfs, mirror, steps.progress, log)
        shutil.copyfile(HOST_CA_BUNDLE, rootfs / CA_IN_IMAGE.lstrip("/"))
        for cache in (rootfs / "var/cache/apt/archives").glob("*.deb"):
            cache.unlink()
        shutil.rmtree(rootfs / "var/lib/apt/lists", ignore_errors=True)
        tar_path = tmp / "rootfs.tar"
        stage = f"{name}-stage"
        with steps.step("tar and docker import"):
            subprocess.run(["tar", "-C", str(rootfs), "-cf", str(tar_path), "."], check=True)
            changes = [f"ENV {k}={v}" for k, v in IMAGE_ENV.items()]
            changes += ['CMD ["sleep", "infinity"]', f"LABEL {LABEL_TOOL}=1 {LABEL_KIND}=base"]
            try:
                repository, tag = stage.split(":")
                backend.images.import_tarball(tar_path, repository, tag, changes)
            except SandboxError as exc:
                raise UserError(
                    f"docker import of {name} failed: {exc}", "check the daemon's disk."
                ) from exc
    with steps.step("installing uv (best effort)"):
        _finish_with_uv(backend, stage, name, steps.progress)


def _last_line(log: Path) -> str:
    """The last line a step's log holds (what it is doing now), at most 100 characters."""
    try:
        with log.open("rb") as file:
            file.seek(max(0, log.stat().st_size - 4096))
            lines = file.read().decode(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:100] if lines else ""


@contextlib.contextmanager
def _temporary_root() -> Iterator[Path]:
    """A temporary directory for the root file system, removed however the block ends
    (Ctrl-C, SIGTERM, an error); what debootstrap mounted in it (``/proc``, ``/sys``, a bound
    ``/dev``) is unmounted first, so removing it never reaches into the host."""
    tmp = Path(tempfile.mkdtemp(prefix="swe-green-rootfs-"))
    try:
        yield tmp
    finally:
        _unmount_under(tmp)
        shutil.rmtree(tmp, ignore_errors=True)


def _unmount_under(root: Path) -> None:
    """Unmount (lazily, deepest first) every mount point under ``root``."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return
    prefix = str(root.resolve()) + "/"
    points = [
        line.split()[1].encode().decode("unicode_escape")  # \040 for a space
        for line in mounts
        if len(line.split()) > 1
    ]
    for point in sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def _run_group(cmd: list[str], timeout: float, log: Path) -> int:
    """``cmd`` in a process group of its own, its output in ``log`` as it comes, killed whole
    on timeout or interrupt (debootstrap's children outlive it otherwise, and hold Ctrl-C
    off); its exit status."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            return process.wait(timeout=timeout)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise


class _DebootstrapFailed(Exception):
    pass


def _debootstrap(suite: str, rootfs: Path, mirror: str, progress: Progress, log: Path) -> None:
    """debootstrap with a time limit, tried again on a fresh directory when it fails
    (a stalled or broken download from the archive is the usual cause)."""
    cmd = [
        "debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}",
        suite, str(rootfs), mirror,
    ]  # fmt: skip

    @retry(
        retry=retry_if_exception_type(_DebootstrapFailed),
        stop=stop_after_attempt(DEBOOTSTRAP_ATTEMPTS),
        wait=wait_fixed(5),
        before_sleep=lambda state: progress(
            f"debootstrap {suite}: {state.outcome and state.outcome.exception()}; trying again"
        ),
        reraise=True,
    )
    def attempt() -> None:
        shutil.rmtree(rootfs, ignore_errors=True)
        try:
            status = _run_group(cmd, DEBOOTSTRAP_TIMEOUT, log)
        except subprocess.TimeoutExpired:
            raise _DebootstrapFailed(f"no result after {DEBOOTSTRAP_TIMEOUT}s") from None
        if status != 0:
            tail = log.read_text(errors="replace").strip().splitlines()[-3:]
            raise _DebootstrapFailed(" / ".join(tail))

    try:
        attempt()
    except _DebootstrapFailed as exc:
        raise UserError(
            f"debootstrap {suite} failed {DEBOOTSTRAP_ATTEMPTS} times: {exc}",
            "check that Debian's archive is reachable (apt-get update works).",
        ) from None


def _finish_with_uv(backend: SandboxBackend, stage: str, name: str, progress: Progress) -> None:
    """Install uv into the image when the package index answers; tag the result ``name``."""
    progress(f"{name}: installing uv (best effort)")
    spec = SandboxSpec(run_id="", role="image-build", limits=Limits(memory="2g"))
    sandbox = backend.start(stage, spec)
    try:
        result = sandbox.exec(
            f"python3 -m venv {UV_VENV} && {UV_VENV}/bin/pip install -q uv "
            f"&& ln -sf {UV_VENV}/bin/uv /usr/local/bin/uv",
            timeout=900,
        )
        if not result.ok:
            progress(f"{name}: uv not installed ({result.output[-200:]})")
        repository, tag = name.split(":")
        sandbox.snapshot(repository, tag, labels={LABEL_KIND: "base"})
    finally:
        sandbox.remove()
        backend.images.remove(stage)


def _build_dockerfile(backend: SandboxBackend, name: str, suite: str, steps: Steps) -> None:
    last = [""]
    with (
        tempfile.TemporaryDirectory(prefix="swe-green-ctx-") as ctx,
        steps.step("docker build", doing=lambda: last[0]),
    ):
        shutil.copytree(DOCKERFILE_DIR, ctx, dirs_exist_ok=True)
        shutil.copyfile(HOST_CA_BUNDLE, Path(ctx) / "ca-certificates.crt")
        labels = {LABEL_TOOL: "1", LABEL_KIND: "base"}
        try:
            for line in backend.images.build(Path(ctx), name, {"SUITE": suite}, labels):
                last[0] = line.strip()[:100] or last[0]
                if line.strip().startswith("Step "):
                    steps.progress(f"{name}: {line.strip()}")
        except SandboxError as exc:
            raise UserError(
                f"docker build of {name} failed: {exc}",
                "without a registry, use --method debootstrap (as root).",
            ) from exc
