"""The sandbox conformance suite: what the rest of the product relies on, checked against any
backend (as Inspect's sandbox self-check does for its environments).

Every member of :class:`.protocol.Sandbox` and :class:`.protocol.SandboxBackend` is exercised,
error paths and timeouts included. A check passes, fails (with a message), or finds the
backend says :class:`.errors.Unsupported` for an optional capability (network switch,
snapshots, image import/build/tag, registries) and says so *consistently*. Run it:

- from the tests, on the local backend, Docker and Docker under the restricted policy
  (``tests/test_sandbox_conformance.py``);
- on a host, against the configured backend: ``swe-green sandbox check``.

Each check starts and removes its own sandboxes, labelled with ``Target.run_id``.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from orchestrator.sandbox.errors import DiskLimitExceeded, ImageMissing, SandboxError, Unsupported
from orchestrator.sandbox.file_snapshot import capture
from orchestrator.sandbox.models import LABEL_INSTANCE, LABEL_RUN, Limits, SandboxSpec
from orchestrator.sandbox.protocol import Sandbox, SandboxBackend


class ConformanceFailure(AssertionError):
    """A backend does not do what the interface promises."""


@dataclass
class Target:
    """What the checks run against."""

    backend: SandboxBackend
    image: str  # an image with bash, coreutils and tar (the base image)
    run_id: str  # the run label of every sandbox the checks start
    registry: str | None = None  # host:port of a registry for the push/pull check
    image_repository: str = "swe-green-conformance"  # where checks put the images they make


class CheckResult(BaseModel):
    name: str
    outcome: Literal["passed", "failed", "unsupported"]
    message: str = ""
    seconds: float = 0.0


Check = Callable[[Target], None]
CHECKS: dict[str, Check] = {}


def check(fn: Check) -> Check:
    CHECKS[fn.__name__.removeprefix("check_")] = fn
    return fn


def run_checks(target: Target, names: list[str] | None = None) -> list[CheckResult]:
    """Run ``names`` (all checks by default), each on its own sandboxes."""
    results = []
    for name in names or list(CHECKS):
        started = time.monotonic()
        try:
            CHECKS[name](target)
            outcome, message = "passed", ""
        except Unsupported as exc:
            outcome, message = "unsupported", str(exc)
        except (ConformanceFailure, SandboxError) as exc:
            outcome, message = "failed", f"{type(exc).__name__}: {exc}"
        seconds = round(time.monotonic() - started, 2)
        results.append(CheckResult(name=name, outcome=outcome, message=message, seconds=seconds))
    return results


def expect(condition: object, message: str) -> None:
    if not condition:
        raise ConformanceFailure(message)


def expect_raises(error: type[Exception], call: Callable[[], object], what: str) -> None:
    """``call()`` must raise ``error`` (the interface's promise for ``what``)."""
    try:
        call()
    except error:
        return
    raise ConformanceFailure(f"{what} raised no {error.__name__}")


@contextmanager
def started(target: Target, **fields: object) -> Iterator[Sandbox]:
    fields.setdefault("run_id", target.run_id)
    fields.setdefault("instance_id", "conformance")
    fields.setdefault("role", "check")
    sandbox = target.backend.start(target.image, SandboxSpec(**fields))
    try:
        yield sandbox
    finally:
        sandbox.remove()


def scratch(sandbox: Sandbox) -> str:
    """A directory the checks may write in (a host path for the local backend)."""
    result = sandbox.exec("d=$(mktemp -d) && chmod 755 $d && echo $d", timeout=30)
    expect(result.ok, f"mktemp failed: {result.output}")
    return result.stdout.strip()


# ------------------------------------------------------------------------------ one sandbox
@check
def check_identity(target: Target) -> None:
    """id, name, image, labels, exists, is_running; found by label, name and id."""
    with started(target, name=f"conformance-{uuid.uuid4().hex[:8]}") as sandbox:
        expect(isinstance(sandbox, Sandbox), "a started sandbox is not a Sandbox")
        expect(sandbox.id and sandbox.name, "a sandbox has an id and a name")
        expect(sandbox.image == target.image, f"image {sandbox.image!r} != {target.image!r}")
        expect(sandbox.labels().get(LABEL_RUN) == target.run_id, "the run label is missing")
        expect(sandbox.exists() and sandbox.is_running(), "a started sandbox is not running")
        backend = target.backend
        found = backend.containers({LABEL_RUN: target.run_id, LABEL_INSTANCE: "conformance"})
        expect(sandbox.name in {c.name for c in found}, "containers() does not find it by label")
        everything = {c.name for c in backend.all_containers()}
        expect(sandbox.name in everything, "all_containers() does not list it")
        expect(backend.name_taken(sandbox.name), "name_taken() says its name is free")
        expect(backend.attach(sandbox.name).id == sandbox.id, "attach(name) finds another")
        expect(backend.attach(sandbox.id).name == sandbox.name, "attach(id) finds another")
    expect(not backend.name_taken(sandbox.name), "a removed sandbox's name is still taken")
    missing = f"conformance-missing-{uuid.uuid4().hex[:8]}"
    expect_raises(SandboxError, lambda: backend.attach(missing), "attach() of a missing sandbox")


@check
def check_exec(target: Target) -> None:
    """Exit code, stdout and stderr apart; a string runs under bash; env and workdir."""
    with started(target) as sandbox:
        result = sandbox.exec(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=30)
        got = (result.exit_code, result.stdout, result.stderr)
        expect(got == (3, "out\n", "err\n"), f"argv exec gave {got}")
        expect(not result.ok and not result.timed_out, "exit 3 is not ok and not a timeout")
        expect(sandbox.exec("echo $((6 * 7))", timeout=30).stdout == "42\n", "bash -c")
        env = sandbox.exec("echo $GREETING", timeout=30, env={"GREETING": "hi"})
        expect(env.stdout == "hi\n", f"env not passed: {env.stdout!r}")
        where = scratch(sandbox)
        pwd = sandbox.exec("pwd", timeout=30, workdir=where)
        expect(pwd.stdout.strip() == where, f"workdir not used: {pwd.stdout!r}")
        nul = ["echo", "a\x00b"]
        expect_raises(SandboxError, lambda: sandbox.exec(nul, timeout=30), "a NUL in a command")


@check
def check_timeout(target: Target) -> None:
    """A timeout kills the command and its children; the sandbox stays usable."""
    with started(target) as sandbox:
        result = sandbox.exec("sleep 30 & sleep 30", timeout=1)
        expect(result.timed_out and not result.ok, "the timeout was not reported")
        expect(result.duration < 20, f"the timed-out command lasted {result.duration:.0f}s")
        alive = sandbox.exec("echo still here", timeout=30)
        expect(alive.stdout == "still here\n", "the sandbox is unusable after a timeout")


@check
def check_output_cap(target: Target) -> None:
    """Output past the limit is cut, with a marker saying how much."""
    with started(target, limits=Limits(output_limit=2_000)) as sandbox:
        result = sandbox.exec("head -c 5000 /dev/zero | tr '\\0' x", timeout=30)
        expect(result.truncated, "5000 bytes past a 2000-byte cap are not marked truncated")
        expect(result.stdout.startswith("x" * 2_000), "the first 2000 bytes are not kept")
        expect("3000 more bytes not shown" in result.stdout, "no marker of the cut bytes")


@check
def check_files(target: Target) -> None:
    """Files in and out byte for byte (modes kept), directories copied in."""
    with started(target) as sandbox, tempfile.TemporaryDirectory() as tmp:
        where = scratch(sandbox)
        payload = bytes(range(256)) * 3 + b"\r\n\x00end"
        sandbox.write_file(f"{where}/deep/er/file.bin", payload)
        expect(sandbox.read_file(f"{where}/deep/er/file.bin") == payload, "bytes changed")
        sandbox.write_file(f"{where}/run.sh", "#!/bin/sh\necho ran\n", mode=0o755)
        expect(sandbox.exec(f"{where}/run.sh", timeout=30).stdout == "ran\n", "mode not kept")
        tree = Path(tmp) / "tree"
        (tree / "sub").mkdir(parents=True)
        (tree / "sub" / "a.txt").write_text("a\n")
        sandbox.put_dir(tree, f"{where}/copied")
        expect(sandbox.read_file(f"{where}/copied/sub/a.txt") == b"a\n", "put_dir lost a file")


@check
def check_file_errors(target: Target) -> None:
    """Reading, archiving or writing where it cannot is a SandboxError (not the host's
    ``OSError``)."""
    with started(target) as sandbox:
        here = scratch(sandbox)
        sandbox.write_file(f"{here}/plain", b"x")
        attempts: list[tuple[str, Callable[[], object]]] = [
            ("read_file of a missing file", lambda: sandbox.read_file(f"{here}/missing")),
            ("get_archive of a missing path",
             lambda: sandbox.get_archive(f"{here}/missing", io.BytesIO())),
            ("write_file under a file", lambda: sandbox.write_file(f"{here}/plain/x", b"y")),
            ("put_archive under a file",
             lambda: sandbox.put_archive(f"{here}/plain/x", tar_of({"f": b"z"}))),
        ]  # fmt: skip
        for what, attempt in attempts:
            try:
                attempt()
            except SandboxError:
                continue
            except OSError as exc:
                raise ConformanceFailure(f"{what} raised {type(exc).__name__}") from None
            raise ConformanceFailure(f"{what} raised nothing")


@check
def check_archives(target: Target) -> None:
    """A tree moves to another sandbox through get_archive/put_archive."""
    with started(target) as sandbox, started(target, role="copy") as other:
        where = scratch(sandbox)
        sandbox.write_file(f"{where}/repo/x.py", "x = 1\n")
        out = io.BytesIO()
        sandbox.get_archive(f"{where}/repo", out)
        names = tarfile.open(fileobj=io.BytesIO(out.getvalue())).getnames()
        expect("repo/x.py" in names, f"the archive holds {names}")
        target_dir = scratch(other)
        other.put_archive(target_dir, out.getvalue())
        expect(other.read_file(f"{target_dir}/repo/x.py") == b"x = 1\n", "the copy differs")


@check
def check_kill_processes(target: Target) -> None:
    """Every process stops, files stay, the sandbox is usable again."""
    with started(target) as sandbox:
        where = scratch(sandbox)
        sandbox.write_file(f"{where}/kept", b"kept")
        sandbox.exec(f"nohup sleep 300 > /dev/null 2>&1 & echo $! > {where}/pid", timeout=30)
        sandbox.kill_processes()
        expect(sandbox.read_file(f"{where}/kept") == b"kept", "kill_processes lost a file")
        expect(sandbox.exec("echo back", timeout=30).stdout == "back\n", "unusable afterwards")
        state = f"awk '/^State:/ {{print $2}}' /proc/$(cat {where}/pid)/status 2>/dev/null"
        alive = sandbox.exec(
            f's=$({state}); [ -n "$s" ] && [ "$s" != Z ] && echo alive', timeout=30
        )
        expect("alive" not in alive.stdout, "a background process survived kill_processes")


@check
def check_stop_start_remove(target: Target) -> None:
    """stop keeps a sandbox, start_container starts it again, remove twice is fine; the
    backend's stop/remove say False for what is gone; cleanup removes by label."""
    backend = target.backend
    label = f"cleanup-{uuid.uuid4().hex[:8]}"
    first = backend.start(target.image, SandboxSpec(run_id=target.run_id, instance_id=label))
    second = backend.start(target.image, SandboxSpec(run_id=target.run_id, instance_id=label))
    try:
        first.stop()
        expect(first.exists() and not first.is_running(), "stop() did not keep it stopped")
        backend.start_container(first.name)
        expect(first.is_running(), "start_container() did not start it")
        expect(backend.stop_container(first.name), "stop_container() of a sandbox said gone")
        removed = backend.cleanup({LABEL_RUN: target.run_id, LABEL_INSTANCE: label})
        expect(sorted(removed) == sorted([first.name, second.name]), f"cleanup: {removed}")
        expect(not first.exists() and not second.exists(), "cleanup left a sandbox")
        first.remove()  # removing what is gone is fine
        expect(not backend.stop_container(first.name), "stop_container() of a gone one: True")
        expect(not backend.remove_container(first.name), "remove_container() of a gone one")
    finally:
        first.remove()
        second.remove()


@check
def check_disk(target: Target) -> None:
    """No budget: nothing to report. A budget: a writer past it is stopped and every later
    call says so; set-up files restored from a snapshot (the restricted policy) do not count."""
    with started(target) as sandbox:
        expect(not sandbox.disk_exceeded, "disk exceeded without a budget")
        sandbox.check_disk()
    budget = 64 << 20
    with started(target) as setup, tempfile.TemporaryDirectory() as tmp:
        setup.exec("mkdir -p /opt/conformance && head -c 80M /dev/zero > /opt/conformance/big")
        try:
            files = capture(setup, "conformance", Path(tmp))
        except (Unsupported, SandboxError) as exc:
            raise Unsupported(f"no disk budget or snapshots here ({exc})") from None
        with started(target, limits=Limits(disk=budget, disk_poll=0.2), files=files) as sandbox:
            size = sandbox.exec("stat -c %s /opt/conformance/big", timeout=30).stdout.strip()
            expect(size == str(80 << 20), "the snapshot's files were not restored")
            expect(sandbox.exec("head -c 16M /dev/zero > /tmp/fits", timeout=30).ok, "16M")
            time.sleep(1.0)
            expect(not sandbox.disk_exceeded, "restored set-up files counted against the budget")
            writer = "while true; do head -c 32M /dev/zero > /tmp/x$RANDOM; done"
            expect_raises(
                DiskLimitExceeded, lambda: sandbox.exec(writer, timeout=120), "a writer past it"
            )
            expect(sandbox.disk_exceeded, "disk_exceeded is False after the budget was passed")
            expect_raises(DiskLimitExceeded, sandbox.check_disk, "check_disk() after the budget")


# ------------------------------------------------------------------ capabilities (optional)
@check
def check_network(target: Target) -> None:
    """Off leaves loopback only; on brings an interface back (files kept, scratch space such
    as ``/tmp`` aside: a backend may carry the files into a new container)."""
    interfaces = "ls /sys/class/net"
    with started(target) as sandbox:
        where = "/opt/conformance"
        sandbox.write_file(f"{where}/kept", b"kept")
        sandbox.set_network(False)
        got = sandbox.exec(interfaces, timeout=30).stdout.split()
        expect(got == ["lo"], f"network off leaves {got}")
        sandbox.set_network(True)
        expect(len(sandbox.exec(interfaces, timeout=30).stdout.split()) > 1, "network not on")
        expect(sandbox.read_file(f"{where}/kept") == b"kept", "switching lost a file")
    with started(target, network=False) as sandbox:
        got = sandbox.exec(interfaces, timeout=30).stdout.split()
        expect(got == ["lo"], f"a sandbox started without network has {got}")


@check
def check_snapshot_and_images(target: Target) -> None:
    """A snapshot keeps the files; the image is listed, labelled, tagged and removed."""
    backend, repository = target.backend, target.image_repository
    tag = uuid.uuid4().hex[:8]
    with started(target) as sandbox:
        where = scratch(sandbox)
        sandbox.write_file(f"{where}/kept.txt", b"kept")
        image = sandbox.snapshot(repository, tag, labels={"swe-green.conformance": tag})
    name, alias = f"{repository}:{tag}", f"{repository}:{tag}-alias"
    try:
        expect(backend.image_exists(name), "the snapshot's image does not exist")
        expect(backend.image_labels(name).get("swe-green.conformance") == tag, "labels lost")
        listed = backend.images(labels={"swe-green.conformance": tag})
        expect([i.id for i in listed] == [image], f"images(labels) lists {listed}")
        backend.tag_image(name, repository, f"{tag}-alias")
        expect(backend.image_exists(alias), "tag_image made no tag")
        expect(backend.remove_image(alias), "removing a second tag failed")
        expect(backend.image_exists(name), "removing a second tag removed the image")
        clone_spec = SandboxSpec(run_id=target.run_id, instance_id="conformance", role="clone")
        clone = backend.start(name, clone_spec)
        try:
            expect(clone.read_file(f"{where}/kept.txt") == b"kept", "the snapshot lost a file")
            in_use = backend.remove_image(image)  # by id, as gc removes them
            expect(not in_use and backend.image_exists(name), "an image in use was removed")
        finally:
            clone.remove()
    finally:
        backend.remove_image(alias)
        expect(backend.remove_image(name), "an unused image could not be removed")
    expect(not backend.image_exists(name), "remove_image left the image")
    expect(backend.remove_image(name), "removing a gone image is not fine")
    spec = SandboxSpec(run_id=target.run_id)
    expect_raises(ImageMissing, lambda: backend.start(name, spec), "starting from a missing image")


@check
def check_import_image(target: Target) -> None:
    """An image from a root file system tarball."""
    tag = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory() as tmp:
        tar_path = Path(tmp) / "rootfs.tar"
        tar_path.write_bytes(tar_of({"etc/conformance": tag.encode()}))
        target.backend.import_image(
            tar_path, target.image_repository, f"import-{tag}", ["LABEL swe-green.kind=check"]
        )
    name = f"{target.image_repository}:import-{tag}"
    try:
        expect(target.backend.image_exists(name), "import_image made no image")
        expect(target.backend.image_labels(name).get("swe-green.kind") == "check", "no label")
    finally:
        target.backend.remove_image(name)


@check
def check_registry(target: Target) -> None:
    """An image goes to a registry (tagged for the upload only) and comes back."""
    backend, repository = target.backend, target.image_repository
    tag = uuid.uuid4().hex[:8]
    with started(target) as sandbox:
        where = scratch(sandbox)
        sandbox.write_file(f"{where}/shared.txt", b"shared")
        try:
            image = sandbox.snapshot(repository, tag)
        except Unsupported:
            backend.push_image(f"{repository}:{tag}", f"127.0.0.1:9/x:{tag}")  # must say so too
            raise ConformanceFailure("push_image works where snapshot is unsupported") from None
    if target.registry is None:
        backend.remove_image(image)
        raise Unsupported("no registry given to check push and pull against")
    reference = f"{target.registry}/{repository}:{tag}"
    try:
        backend.push_image(f"{repository}:{tag}", reference)
        expect(not backend.image_exists(reference), "push_image left its upload tag")
        expect(backend.remove_image(image), "the pushed image could not be removed")
        backend.pull_image(reference)
        clone = backend.start(reference, SandboxSpec(run_id=target.run_id, role="pulled"))
        try:
            expect(clone.read_file(f"{where}/shared.txt") == b"shared", "the pull lost a file")
        finally:
            clone.remove()
        missing = f"{reference}-missing"
        expect_raises(SandboxError, lambda: backend.pull_image(missing), "pulling a missing one")
    finally:
        backend.remove_image(reference)
        backend.remove_image(image)


def tar_of(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
