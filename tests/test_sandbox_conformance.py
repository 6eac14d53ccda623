"""The same checks against every sandbox backend (like Inspect's sandbox self-check): what the
rest of the product relies on, whatever runs the containers. The local backend runs here
always; the Docker backend with the container tests."""

from __future__ import annotations

import io
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.sandbox import (
    Limits,
    Sandbox,
    SandboxBackend,
    SandboxError,
    SandboxSpec,
    Unsupported,
)
from orchestrator.sandbox.local import LOCAL_IMAGE, LocalBackend
from orchestrator.sandbox.models import LABEL_RUN

from .conftest import BASE_IMAGE, TEST_RUN_ID


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.container)])
def backend(request: pytest.FixtureRequest) -> tuple[SandboxBackend, str]:
    """A backend and the image its sandboxes start from."""
    if request.param == "local":
        return LocalBackend(), LOCAL_IMAGE
    docker_backend = request.getfixturevalue("docker_backend")
    request.getfixturevalue("base_image")
    return docker_backend, BASE_IMAGE


@pytest.fixture
def started(backend: tuple[SandboxBackend, str]) -> Iterator[tuple[SandboxBackend, Sandbox]]:
    chosen, image = backend
    spec = SandboxSpec(
        run_id=TEST_RUN_ID, instance_id="conformance", role="check",
        limits=Limits(output_limit=2_000),
    )  # fmt: skip
    sandbox = chosen.start(image, spec)
    yield chosen, sandbox
    sandbox.remove()


def scratch(sandbox: Sandbox) -> str:
    """A directory the checks may write in (a host path for the local backend)."""
    result = sandbox.exec("d=$(mktemp -d) && echo $d", timeout=30)
    assert result.ok, result.output
    return result.stdout.strip()


def test_a_sandbox_is_a_sandbox(started: tuple[SandboxBackend, Sandbox]) -> None:
    _, sandbox = started
    assert isinstance(sandbox, Sandbox)
    assert sandbox.labels()[LABEL_RUN] == TEST_RUN_ID
    assert sandbox.exists() and sandbox.is_running()


def test_exec_gives_exit_code_stdout_and_stderr(started: tuple[SandboxBackend, Sandbox]) -> None:
    _, sandbox = started
    result = sandbox.exec(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=30)
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.ok and not result.timed_out
    assert sandbox.exec("echo $((6 * 7))", timeout=30).stdout == "42\n"  # a string: bash -c
    env = sandbox.exec("echo $GREETING", timeout=30, env={"GREETING": "hi"})
    assert env.stdout == "hi\n"


def test_a_timeout_kills_the_command_and_the_sandbox_stays_usable(
    started: tuple[SandboxBackend, Sandbox],
) -> None:
    _, sandbox = started
    result = sandbox.exec("sleep 30 & sleep 30", timeout=1)
    assert result.timed_out and not result.ok and result.duration < 20
    assert sandbox.exec("echo still here", timeout=30).stdout == "still here\n"


def test_output_past_the_limit_is_cut_with_a_marker(
    started: tuple[SandboxBackend, Sandbox],
) -> None:
    _, sandbox = started
    result = sandbox.exec("head -c 5000 /dev/zero | tr '\\0' x", timeout=30)
    assert result.truncated and result.stdout.startswith("x" * 2_000)
    assert "3000 more bytes not shown" in result.stdout


def test_files_go_in_and_out_byte_for_byte(
    started: tuple[SandboxBackend, Sandbox], tmp_path: Path
) -> None:
    _, sandbox = started
    where = scratch(sandbox)
    payload = bytes(range(256)) * 3 + b"\r\n\x00end"
    sandbox.write_file(f"{where}/deep/er/file.bin", payload)
    assert sandbox.read_file(f"{where}/deep/er/file.bin") == payload
    with pytest.raises(SandboxError):
        sandbox.read_file(f"{where}/missing")
    (tmp_path / "tree" / "sub").mkdir(parents=True)
    (tmp_path / "tree" / "sub" / "a.txt").write_text("a\n")
    sandbox.put_dir(tmp_path / "tree", f"{where}/copied")
    assert sandbox.read_file(f"{where}/copied/sub/a.txt") == b"a\n"


def test_an_archive_moves_a_tree_to_another_sandbox(
    backend: tuple[SandboxBackend, str], started: tuple[SandboxBackend, Sandbox]
) -> None:
    """What a backend without commits needs: a copy of one sandbox's files in another."""
    chosen, sandbox = started
    where = scratch(sandbox)
    sandbox.write_file(f"{where}/repo/x.py", "x = 1\n")
    out = io.BytesIO()
    sandbox.get_archive(f"{where}/repo", out)
    tar = out.getvalue()
    names = tarfile.open(fileobj=io.BytesIO(tar)).getnames()
    assert "repo/x.py" in names
    other = chosen.start(backend[1], SandboxSpec(run_id=TEST_RUN_ID, role="copy"))
    try:
        target = scratch(other)
        other.put_archive(target, tar)
        assert other.read_file(f"{target}/repo/x.py") == b"x = 1\n"
    finally:
        other.remove()


def test_backends_find_their_sandboxes_by_label(started: tuple[SandboxBackend, Sandbox]) -> None:
    chosen, sandbox = started
    found = chosen.containers({LABEL_RUN: TEST_RUN_ID})
    assert sandbox.name in {info.name for info in found}
    assert chosen.name_taken(sandbox.name)
    assert chosen.attach(sandbox.name).name == sandbox.name


def test_the_network_goes_off_and_on_or_the_backend_says_it_cannot(
    started: tuple[SandboxBackend, Sandbox],
) -> None:
    _, sandbox = started
    interfaces = "ls /sys/class/net"
    try:
        sandbox.set_network(False)
    except Unsupported:
        return
    assert sandbox.exec(interfaces, timeout=30).stdout.split() == ["lo"]
    sandbox.set_network(True)
    assert len(sandbox.exec(interfaces, timeout=30).stdout.split()) > 1


def test_a_snapshot_keeps_the_files_or_the_backend_says_it_cannot(
    backend: tuple[SandboxBackend, str], started: tuple[SandboxBackend, Sandbox]
) -> None:
    chosen, sandbox = started
    where = scratch(sandbox)
    sandbox.write_file(f"{where}/kept.txt", b"kept")
    tag = uuid.uuid4().hex[:8]
    try:
        image = sandbox.snapshot("swe-green-test/conformance", tag)
    except Unsupported:
        return
    try:
        clone = chosen.start(f"swe-green-test/conformance:{tag}", SandboxSpec(run_id=TEST_RUN_ID))
        try:
            assert clone.read_file(f"{where}/kept.txt") == b"kept"
        finally:
            clone.remove()
    finally:
        assert chosen.remove_image(image)


def test_an_image_goes_to_a_registry_and_back_or_the_backend_says_it_cannot(
    request: pytest.FixtureRequest, started: tuple[SandboxBackend, Sandbox]
) -> None:
    chosen, sandbox = started
    where = scratch(sandbox)
    sandbox.write_file(f"{where}/shared.txt", b"shared")
    tag = uuid.uuid4().hex[:8]
    try:
        image = sandbox.snapshot("swe-green-test/conformance", tag)
    except Unsupported:
        with pytest.raises(Unsupported):
            chosen.push_image(f"swe-green-test/conformance:{tag}", f"h:5000/x:{tag}")
        return
    reference = f"{request.getfixturevalue('image_registry')}/swe-green-test/conformance:{tag}"
    try:
        chosen.push_image(f"swe-green-test/conformance:{tag}", reference)
        assert not chosen.image_exists(reference)  # tagged for the upload only
        assert chosen.remove_image(image)
        chosen.pull_image(reference)
        clone = chosen.start(reference, SandboxSpec(run_id=TEST_RUN_ID))
        try:
            assert clone.read_file(f"{where}/shared.txt") == b"shared"
        finally:
            clone.remove()
        with pytest.raises(SandboxError):
            chosen.pull_image(f"{reference}-missing")
    finally:
        chosen.remove_image(reference)
        chosen.remove_image(image)


def test_stop_remove_and_cleanup_by_label(backend: tuple[SandboxBackend, str]) -> None:
    chosen, image = backend
    label = f"cleanup-{uuid.uuid4().hex[:8]}"
    first = chosen.start(image, SandboxSpec(run_id=TEST_RUN_ID, instance_id=label))
    second = chosen.start(image, SandboxSpec(run_id=TEST_RUN_ID, instance_id=label))
    first.stop()
    assert not first.is_running() and first.exists()
    removed = chosen.cleanup({LABEL_RUN: TEST_RUN_ID, "swe-green.instance": label})
    assert sorted(removed) == sorted([first.name, second.name])
    assert not first.exists() and not second.exists()
    first.remove()  # removing what is gone is fine


@pytest.mark.parametrize("filters", [True, False], ids=["extraction-filter", "by-hand"])
def test_unpacking_refuses_members_outside_the_directory(tmp_path, monkeypatch, filters):
    """With Python's extraction filters (3.11.4+) or, before them, the same check by hand."""
    import io
    import tarfile

    from orchestrator.sandbox.archives import unpack

    if not filters:
        monkeypatch.delattr(tarfile, "tar_filter", raising=False)

    def archive(name: str) -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            member = tarfile.TarInfo(name)
            member.size = 2
            tar.addfile(member, io.BytesIO(b"ok"))
        return buf.getvalue()

    unpack(archive("repo/x.py"), str(tmp_path))
    assert (tmp_path / "repo" / "x.py").read_bytes() == b"ok"
    for bad in (archive("../evil.py"), archive("a/../../evil.py")):
        with pytest.raises(tarfile.TarError):
            unpack(bad, str(tmp_path / "inner"))
    assert not (tmp_path.parent / "evil.py").exists()


def test_file_errors_are_sandbox_errors(started: tuple[SandboxBackend, Sandbox]) -> None:
    """Reading, archiving or writing where the sandbox cannot is a :class:`SandboxError`,
    whatever the backend (not the host's ``FileNotFoundError``/``NotADirectoryError``)."""
    _, sandbox = started
    here = scratch(sandbox)
    missing = f"{here}/missing/file"
    with pytest.raises(SandboxError):
        sandbox.read_file(missing)
    with pytest.raises(SandboxError):
        sandbox.get_archive(missing, io.BytesIO())
    sandbox.write_file(f"{here}/plain", b"x")
    with pytest.raises(SandboxError):
        sandbox.write_file(f"{here}/plain/under", b"y")  # a file is not a directory
    with pytest.raises(SandboxError):
        sandbox.put_archive(f"{here}/plain/under", _tar_of({"f": b"z"}))


def _tar_of(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
