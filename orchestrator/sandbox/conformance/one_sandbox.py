"""Conformance checks of one sandbox: identity, exec (timeouts, output cap), files and
archives (error paths included), processes, lifecycle, and the disk budget."""

from __future__ import annotations

import io
import tarfile
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from orchestrator.sandbox.conformance.harness import (
    ConformanceFailure,
    Target,
    check,
    expect,
    expect_raises,
    scratch,
    started,
    tar_of,
)
from orchestrator.sandbox.errors import (
    DiskLimitExceeded,
    FileMissing,
    FileTooLarge,
    SandboxError,
    Unsupported,
)
from orchestrator.sandbox.models import LABEL_INSTANCE, LABEL_RUN, Limits, SandboxSpec, Snapshot
from orchestrator.sandbox.protocol import Sandbox


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
def check_read_limits(target: Target) -> None:
    """read_file: a missing file is FileMissing; one over ``max_bytes`` is FileTooLarge with
    its size (read whole at the limit)."""
    with started(target) as sandbox:
        where = scratch(sandbox)
        sandbox.write_file(f"{where}/ten", b"0123456789")
        expect(sandbox.read_file(f"{where}/ten", max_bytes=10) == b"0123456789", "at the limit")
        try:
            sandbox.read_file(f"{where}/ten", max_bytes=9)
        except FileTooLarge as exc:
            expect(exc.size == 10, f"FileTooLarge says {exc.size} bytes, not 10")
        else:
            raise ConformanceFailure("a file over max_bytes was read")
        expect_raises(FileMissing, lambda: sandbox.read_file(f"{where}/none"), "a missing file")


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
        sandbox.exec(f"nohup sleep {_MARK_SECONDS} > /dev/null 2>&1 &", timeout=30)
        expect(_sleeping(sandbox), "the background process did not start")
        sandbox.kill_processes()
        expect(sandbox.read_file(f"{where}/kept") == b"kept", "kill_processes lost a file")
        expect(sandbox.exec("echo back", timeout=30).stdout == "back\n", "unusable afterwards")
        expect(not _sleeping(sandbox), "a background process survived kill_processes")


# a background process found by its command line, not its PID: a sandbox started again
# (Docker's kill_processes) numbers its processes from 1 again, and may give the old PID
# to the very shell that looks for it
_MARK_SECONDS = 3127


def _sleeping(sandbox: Sandbox) -> bool:
    """Whether the marked ``sleep`` runs (not a zombie: a zombie has no command line)."""
    listing = sandbox.exec(
        "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done",
        timeout=30,
    )
    return any(line.strip() == f"sleep {_MARK_SECONDS}" for line in listing.stdout.splitlines())


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
    with _kept_set_up(target) as files:
        with started(target, files, limits=Limits(disk=budget, disk_poll=0.2)) as sandbox:
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


@contextmanager
def _kept_set_up(target: Target) -> Iterator[Snapshot]:
    """A sandbox holding 80 MiB of set-up files, kept by the backend (``keep``: an image where
    it commits, else the files packed on the host); what it kept goes at the end."""
    name = f"swe-green-conformance:{uuid.uuid4().hex[:12]}"
    with started(target) as setup, tempfile.TemporaryDirectory() as tmp:
        setup.exec("mkdir -p /opt/conformance && head -c 80M /dev/zero > /opt/conformance/big")
        try:
            kept = target.backend.keep(setup, name, Path(tmp))
        except (Unsupported, SandboxError) as exc:
            raise Unsupported(f"no disk budget or snapshots here ({exc})") from None
        expect(kept.name == name, f"keep() returned a snapshot of {kept.name}, not {name}")
        try:
            yield kept
        finally:
            kept.discard()
            target.backend.images.remove(name)  # where it is an image (gone is fine)
