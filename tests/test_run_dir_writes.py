"""One write path for the run directory: whole files through ``atomic_write_text`` (a reader
never sees half a file), growing logs through ``append_text``; every other writer in the
package is on a reviewed list, with the reason it may write plainly."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from orchestrator.atomic import append_text, atomic_write_bytes, atomic_write_text
from orchestrator.context.run_dir import RunDir
from orchestrator.grading.grading_logs import GradingLogs

PACKAGE = Path(__file__).resolve().parents[1] / "orchestrator"

# module (relative to orchestrator/) -> why it may write a file without orchestrator.atomic
PLAIN_WRITERS = {
    "atomic.py": "the one write path itself",
    "log.py": "run.log: a handler held open for the run, one JSON line per event",
    "participant/transcript.py": "transcript.jsonl: held open, one JSON line per event",
    "setup/agent/setup_log.py": "the setup agent's log: held open, one JSON line per event",
    "repos/clean_history.py": "a git directory being built for the container, not the run",
    "dataset/synthetic.py": "the synthetic dataset's files, made before any run",
    "plan/bytecode_tool.py": "runs inside the container, on the container's files",
    "diffs/apply.py": "a temporary directory for git apply, removed after",
    "sandbox/conformance/one_sandbox.py": "the conformance checks' temporary files",
    "sandbox/conformance/optional.py": "the conformance checks' temporary files",
    "sandbox/file_snapshot.py": "a temporary archive that is renamed into place when whole",
    "sandbox/local.py": "the local backend's sandbox filesystem, not the run directory",
    "setup/images.py": "debootstrap's output, in the base image build's temporary directory",
}
_WRITE_MODES = set("wax+")
_NOT_FILES = {"tarfile", "gzip", "zipfile", "bz2", "lzma"}  # .open of an archive module


def _mode_writes(node: ast.Call) -> bool:
    """Whether an ``open`` call's mode (first or second argument, or ``mode=``) writes."""
    candidates = [*node.args[:2], *(k.value for k in node.keywords if k.arg == "mode")]
    return any(
        isinstance(arg, ast.Constant)
        and isinstance(arg.value, str)
        and _WRITE_MODES & set(arg.value)
        for arg in candidates
    )


def plain_writes(source: str) -> list[tuple[int, str]]:
    """(line, what) of every call in ``source`` that writes a file other than through
    :mod:`orchestrator.atomic` (``RunDir.write_text(instance_id, name, text)`` goes through it:
    three arguments, where a path's ``write_text`` takes one)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        receiver = getattr(func.value, "id", "") if isinstance(func, ast.Attribute) else ""
        if name in ("write_text", "write_bytes") and len(node.args) < 3:  # not RunDir's
            found.append((node.lineno, name))
        elif name == "FileHandler":
            found.append((node.lineno, name))
        elif name in ("open", "fdopen") and receiver not in _NOT_FILES and _mode_writes(node):
            found.append((node.lineno, name))
    return found


def _writers() -> dict[str, list[tuple[int, str]]]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        writes = plain_writes(path.read_text(encoding="utf-8"))
        if writes:
            modules[path.relative_to(PACKAGE).as_posix()] = writes
    return modules


def test_the_finder_sees_each_kind_of_plain_write():
    source = (
        "p.write_text('x')\np.write_bytes(b'x')\nopen(p, 'a')\np.open('w')\n"
        "os.fdopen(fd, 'wb')\nlogging.FileHandler(p)\nopen(p)\np.open()\n"
        "tarfile.open(fileobj=b, mode='w')\nappend_text(p, 'x')\nrun.write_text(i, 'a', 'x')\n"
    )
    assert [what for _, what in plain_writes(source)] == [
        "write_text", "write_bytes", "open", "open", "fdopen", "FileHandler"
    ]  # fmt: skip


def test_run_directory_files_go_through_the_one_write_path():
    unreviewed = [
        f"orchestrator/{module}:{line} {what}"
        for module, writes in _writers().items()
        if module not in PLAIN_WRITERS
        for line, what in writes
    ]
    assert not unreviewed, (
        "write run-directory files with orchestrator.atomic (atomic_write_text, append_text); "
        "a file outside the run directory goes on PLAIN_WRITERS with its reason: "
        + ", ".join(unreviewed)
    )


def test_every_reviewed_exception_still_writes():
    stale = sorted(set(PLAIN_WRITERS) - set(_writers()))
    assert not stale, f"remove from PLAIN_WRITERS (they no longer write plainly): {stale}"


@pytest.mark.parametrize("writer", ["grading logs", "run directory"])
def test_a_rewritten_file_is_replaced_whole_not_overwritten_in_place(tmp_path, writer):
    """A reader that opened the old file keeps reading the old text, whole: the new text is a
    new file moved into place, never the old one truncated and written again."""
    run = RunDir(tmp_path / "run")
    instance_dir = run.instance_dir("demo__calc-1")
    logs = GradingLogs(instance_dir)

    def write(text: str) -> Path:
        if writer == "grading logs":
            logs.write("tests", "test_output.txt", text)
            return instance_dir / "test_output.txt"
        return run.write_text("demo__calc-1", "test_output.txt", text)

    old = "old output\n" * 10_000
    path = write(old)
    with path.open(encoding="utf-8") as reader:
        write("new output\n")
        assert reader.read() == old
    assert path.read_text(encoding="utf-8") == "new output\n"
    assert sorted(os.listdir(instance_dir)) == ["test_output.txt"]  # no temporary file left


def test_output_that_does_not_encode_is_written_with_a_replacement(tmp_path):
    logs = GradingLogs(tmp_path)
    logs.write("tests", "test_output.txt", "caf\udce9 ok\n")  # undecodable byte, surrogate-escaped
    assert (tmp_path / "test_output.txt").read_text(encoding="utf-8") == "caf? ok\n"
    assert logs.files == {"tests": str(tmp_path / "test_output.txt")}


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path):
    path = tmp_path / "result.json"
    atomic_write_text(path, "whole\n")
    with pytest.raises(TypeError):
        atomic_write_bytes(path, "text where bytes belong")  # type: ignore[arg-type]
    assert path.read_text() == "whole\n" and os.listdir(tmp_path) == ["result.json"]


def test_appends_keep_what_was_there(tmp_path):
    log = tmp_path / "instances" / "x" / "setup.log"
    append_text(log, "first\n")
    append_text(log, "second \udce9\n")
    assert log.read_text(encoding="utf-8") == "first\nsecond ?\n"
