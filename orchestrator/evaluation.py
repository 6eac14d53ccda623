"""Grading one instance (design phase 7): apply the patch, run the tests, classify.

The flow, in a container started from the instance image (repository at ``/testbed`` on the
base commit, ``/opt/swe/activate.sh`` for the environment): drop the patch's changes to test
infrastructure, apply the rest (:func:`orchestrator.patch_apply.apply_patch`), then run
:func:`eval_script` with the network off: reset the files ``test_patch`` touches, apply
``test_patch``, run the repository's test command on those files between start/end markers,
restore the files. The output between the markers is parsed with the repository's log
format and graded.

Empty patch: graded ``no_op``/``empty_patch`` without running the tests. Running them would
only re-measure the base, which environment validation already did; it is not worth a test
run per empty answer.

**Test infrastructure is not the participant's to change.** A patch could add a
``conftest.py`` whose ``pytest_runtest_makereport`` hook reports every test as passed; the
runner's own summary then agrees with the forged lines, so no check of the output can
expose it. So before applying, :func:`drop_test_infrastructure` removes from the patch every
file that configures, drives or supplies the tests (:func:`is_test_infrastructure`): files
in ``test``/``tests``/``testing`` directories, test modules, ``conftest.py``, the config
files pytest and tox read (``pytest.ini``, ``tox.ini``, ``setup.cfg``, ``pyproject.toml``),
start-up hooks (``sitecustomize.py``, ``*.pth``), ``.gitattributes`` and the files the
test command names (``bin/test``, ``tests/runtests.py``). The grading environment is not
reinstalled, so the packaging metadata in those config files has no effect on the test run
anyway. Files the gold patch itself changes are exempt (one Verified gold patch changes
``setup.cfg``), so the gold patch always survives whole. The dropped files are reported
(``Evaluation.excluded_files``). What remains possible: code under test that tampers with
the runner from inside (e.g. a fix to pytest itself); :func:`grading.detect_test_crash`
catches forged result lines that the runner did not count.
"""

from __future__ import annotations

import posixpath
import shlex
import time
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, Field

from orchestrator.grading import classify, detect_test_crash, grade_tests
from orchestrator.log_parsers import extract_between_markers, parse_test_log, wrap_test_command
from orchestrator.models import Instance, Reason, Status, TestGroups, TestStatus
from orchestrator.patch_apply import ApplyOutcome, apply_patch, join_patch, split_patch
from orchestrator.recipes import Recipe, test_command, test_files
from orchestrator.reinstall import reinstall_after_patch
from orchestrator.sandbox import Sandbox
from orchestrator.services import service_start_lines, service_stop_lines

REPO_DIR = "/testbed"
ACTIVATE_SCRIPT = "/opt/swe/activate.sh"
EVAL_DIR = "/opt/swe/eval"
EVAL_SCRIPT_PATH = f"{EVAL_DIR}/eval.sh"
TEST_PATCH_PATH = f"{EVAL_DIR}/test.patch"
OUTPUT_PATH = f"{EVAL_DIR}/output.txt"
TEST_PATCH_FAILED = ">>>>> SWE_GREEN_TEST_PATCH_FAILED"
# a test run printing more than this is treated as a crash instead of being read in
MAX_OUTPUT_BYTES = 128 * 1024 * 1024
# characters of output kept in TestRun.output (the head and, mostly, the tail)
OUTPUT_KEEP = 1_000_000

_TEST_DIRS = frozenset({"test", "tests", "testing"})
_INFRA_NAMES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "sitecustomize.py",
        "usercustomize.py",
        ".gitattributes",
        "runtests.py",
        "testing.py",
        "tests.py",
    }
)


class TestRun(BaseModel):
    """One run of the eval script: parsed outcomes and what is needed to judge them."""

    __test__ = False  # not a test class, despite its name

    outcomes: dict[str, TestStatus] = Field(default_factory=dict)
    section: str | None = None  # the output between the start and end markers
    exit_code: int | None = None  # the test command's, from the end marker
    output: str = ""  # the whole output, cut to OUTPUT_KEEP characters
    timed_out: bool = False
    crash: str | None = None  # why the output cannot be graded
    duration: float = 0.0


class Evaluation(BaseModel):
    """The grading of one patch; the caller turns it into an InstanceResult."""

    status: Status
    reason: Reason = Reason.NONE
    message: str = ""
    apply: ApplyOutcome | None = None
    test_run: TestRun | None = None
    groups: TestGroups | None = None  # set when the tests ran and could be graded
    excluded_files: list[str] = Field(default_factory=list)
    logs: dict[str, str] = Field(default_factory=dict)  # name -> file under log_dir


def is_test_infrastructure(path: str, runner_files: Iterable[str] = ()) -> bool:
    """Whether ``path`` configures, drives or supplies the tests (see the module doc)."""
    parts = path.split("/")
    name = parts[-1]
    return (
        path in set(runner_files)
        or name in _INFRA_NAMES
        or name.endswith(".pth")
        or (name.startswith("test_") and name.endswith(".py"))
        or name.endswith("_test.py")
        or any(part in _TEST_DIRS for part in parts[:-1])
    )


def runner_files(recipe: Recipe) -> list[str]:
    """Repository files the test command runs (``bin/test``, ``tests/runtests.py``)."""
    try:
        words = shlex.split(recipe.test_cmd)
    except ValueError:
        words = recipe.test_cmd.split()
    return [
        posixpath.normpath(word)
        for word in words
        if "=" not in word and not word.startswith("-") and ("/" in word or word.endswith(".py"))
    ]


def drop_test_infrastructure(
    patch: str, instance: Instance, recipe: Recipe
) -> tuple[str, list[str]]:
    """``patch`` without its test-infrastructure files, and the files dropped.

    Files that the instance's gold patch changes are never dropped.
    """
    preamble, parts = split_patch(patch)
    gold = {path for part in split_patch(instance.patch)[1] for path in part.paths}
    runners = runner_files(recipe)
    kept, dropped = [], []
    for part in parts:
        if any(is_test_infrastructure(p, runners) and p not in gold for p in part.paths):
            dropped.extend(part.paths)
        else:
            kept.append(part)
    if not dropped:
        return patch, []
    return join_patch(preamble, kept), list(dict.fromkeys(dropped))


def eval_script(instance: Instance, recipe: Recipe) -> str:
    """The bash script that runs the instance's tests; it can run again (idempotent).

    It expects the test patch at :data:`TEST_PATCH_PATH`. Order: the environment, the
    recipe's environment variables and eval commands, reset the files the test patch touches
    to the base commit (remove those that do not exist there), apply the test patch, run the
    test command between the markers, restore the test files.
    """
    base = shlex.quote(instance.base_commit)
    files = " ".join(shlex.quote(f) for f in test_files(instance.test_patch))
    lines = [
        "#!/bin/bash",
        f"# Grading script of {instance.instance_id}, written by swe-green. Safe to run again.",
        "exec 2>&1",
        f"source {ACTIVATE_SCRIPT}",
        *(f"export {name}={shlex.quote(value)}" for name, value in recipe.env.items()),
        *recipe.eval_commands,
        *service_start_lines(recipe, EVAL_DIR),
        f"cd {REPO_DIR}",
        f"test_files=({files})",
        "reset_test_files() {",
        "    local f",
        '    for f in "${test_files[@]}"; do',
        f'        if git cat-file -e {base}:"$f" 2>/dev/null; then',
        f'            git checkout -q {base} -- "$f"',
        "        else",
        '            rm -rf -- "$f"',
        "        fi",
        "    done",
        "}",
        "reset_test_files",
        f"if ! git apply -v {TEST_PATCH_PATH}; then",
        f"    echo '{TEST_PATCH_FAILED}'",
        "    reset_test_files",
        "    exit 3",
        "fi",
        wrap_test_command(test_command(recipe, instance)),
        *service_stop_lines(recipe),
        "reset_test_files",
        "",
    ]
    return "\n".join(lines)


def run_tests(
    sandbox: Sandbox,
    instance: Instance,
    recipe: Recipe,
    *,
    timeout: float,
    log_dir: Path | None = None,
) -> TestRun:
    """Run the instance's tests in ``sandbox`` with the network off, and parse the outcomes.

    The network stays off afterwards. With ``log_dir``, ``eval.sh`` and the whole output
    (``test_output.txt``) are written there.
    """
    sandbox.set_network(False)
    script = eval_script(instance, recipe)
    sandbox.write_file(TEST_PATCH_PATH, instance.test_patch.encode("utf-8", "surrogateescape"))
    sandbox.write_file(EVAL_SCRIPT_PATH, script, mode=0o755)
    started = time.monotonic()
    result = sandbox.exec(
        ["bash", "-c", f"bash {EVAL_SCRIPT_PATH} > {OUTPUT_PATH} 2>&1"], timeout=timeout
    )
    duration = time.monotonic() - started
    output, too_large = _read_output(sandbox)
    if result.output.strip():  # the wrapper's own complaints, e.g. no space for the output
        output += result.output
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        (log_dir / "eval.sh").write_text(script)
        (log_dir / "test_output.txt").write_text(output, errors="replace")
    section, exit_code = extract_between_markers(output)
    outcomes = parse_test_log(recipe.log_format, section or "")
    crash = None
    if not result.timed_out:
        if too_large:
            crash = f"the test output is larger than {MAX_OUTPUT_BYTES} bytes"
        elif TEST_PATCH_FAILED in output:
            crash = "the test patch does not apply after the patch (see the test output)"
        else:
            crash = detect_test_crash(exit_code, section, outcomes)
    return TestRun(
        outcomes=outcomes,
        section=section,
        exit_code=exit_code,
        output=_cap(output, OUTPUT_KEEP),
        timed_out=result.timed_out,
        crash=crash,
        duration=duration,
    )


def evaluate(
    sandbox: Sandbox,
    instance: Instance,
    recipe: Recipe,
    patch: str | None,
    *,
    timeout: float,
    fuzz: int = 3,
    excluded_p2p: Iterable[str] = (),
    log_dir: Path | None = None,
) -> Evaluation:
    """Grade ``patch`` for ``instance`` in ``sandbox`` (a container at the base commit)."""
    if patch is None or not patch.strip():
        return Evaluation(status=Status.NO_OP, reason=Reason.EMPTY_PATCH, message="empty patch")
    sandbox.set_network(False)
    gradeable, excluded = drop_test_infrastructure(patch, instance, recipe)
    logs: dict[str, str] = {}
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        (log_dir / "graded.patch").write_text(gradeable, errors="replace")
        logs["graded_patch"] = str(log_dir / "graded.patch")
    if not gradeable.strip():
        return Evaluation(
            status=Status.NO_OP,
            reason=Reason.EMPTY_PATCH,
            message="the patch only changes test infrastructure, which grading leaves out: "
            + ", ".join(excluded),
            excluded_files=excluded,
            logs=logs,
        )
    applied = apply_patch(sandbox, gradeable, repo_dir=REPO_DIR, fuzz=fuzz)
    if log_dir is not None:
        (log_dir / "apply.log").write_text(applied.log or applied.error, errors="replace")
        logs["apply"] = str(log_dir / "apply.log")
    common = {"apply": applied, "excluded_files": excluded, "logs": logs}
    if not applied.applied:
        return Evaluation(
            status=Status.NO_OP,
            reason=Reason.PATCH_APPLY_FAILED,
            message=applied.error,
            **common,
        )
    # a patch that changes what the build reads (a new dependency) is installed again
    reinstalled = reinstall_after_patch(sandbox, recipe, gradeable, timeout=timeout)
    if reinstalled is not None and log_dir is not None:
        ok, tail = reinstalled
        (log_dir / "reinstall.log").write_text(f"reinstall {'ok' if ok else 'FAILED'}\n{tail}\n")
        logs["reinstall"] = str(log_dir / "reinstall.log")
    run = run_tests(sandbox, instance, recipe, timeout=timeout, log_dir=log_dir)
    if log_dir is not None:
        logs |= {"eval_script": str(log_dir / "eval.sh"), "tests": str(log_dir / "test_output.txt")}
    if run.timed_out:
        return Evaluation(
            status=Status.ERROR,
            reason=Reason.TEST_TIMEOUT,
            message=f"the tests ran longer than {timeout:g} s",
            test_run=run,
            **common,
        )
    if run.crash:
        return Evaluation(
            status=Status.ERROR, reason=Reason.TEST_CRASH, message=run.crash, test_run=run, **common
        )
    groups = grade_tests(instance.FAIL_TO_PASS, instance.PASS_TO_PASS, run.outcomes, excluded_p2p)
    return Evaluation(status=classify(groups), groups=groups, test_run=run, **common)


def _read_output(sandbox: Sandbox) -> tuple[str, bool]:
    """The eval script's output file, and whether it was too large to read."""
    size = sandbox.exec(["stat", "-c", "%s", OUTPUT_PATH], timeout=30)
    if size.ok and size.stdout.strip().isdigit() and int(size.stdout) > MAX_OUTPUT_BYTES:
        tail = sandbox.exec(["tail", "-c", str(OUTPUT_KEEP), OUTPUT_PATH], timeout=60)
        return tail.stdout, True
    if not size.ok:
        return "", False
    return sandbox.read_file(OUTPUT_PATH).decode("utf-8", errors="replace"), False


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit // 10
    cut = len(text) - limit
    return text[:head] + f"\n[... {cut} characters cut ...]\n" + text[-(limit - head) :]
