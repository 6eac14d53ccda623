"""Grading one instance (design phase 7): apply the patch, run the tests, classify.

The flow, in a container started from the instance image (repository at ``/testbed`` on the
base commit, ``/opt/swe/activate.sh`` for the environment): drop the patch's changes to test
infrastructure, apply the rest (:func:`orchestrator.diffs.apply.apply_patch`), then run
:func:`eval_script` with the network off: reset the files ``test_patch`` touches, apply
``test_patch``, run the repository's test command on those files between start/end markers,
restore the files. The output between the markers is parsed with the repository's log
format and graded.

Empty patch: ``no_op``/``empty_patch`` without a test run (it would re-measure the base).

**Test infrastructure is not the participant's to change**: before applying,
:func:`.harness_files.drop_harness_files` removes every file that configures,
drives or supplies the tests (a ``conftest.py`` whose hook reports every test passed would
make the runner's own summary agree with the forged lines); what the gold patch changes too
is exempt, and what was dropped is reported (``Evaluation.excluded_files``).

**Test output the code under test cannot rewrite cheaply**: nonce markers the test process
never sees, an unprivileged test user (:func:`run_tests`, :func:`eval_script`); imitated
markers or several runner summaries count every test as failing (``test_output_forged``);
:func:`.classify.detect_test_crash` catches result lines the runner did not count. What the
patch's code does at test time is watched (:mod:`.audit`): evidence of forging or of reading
the grading counts every test as failing (``tamper_detected``); a resolved result whose patch
touches the runner's machinery is flagged ``suspicious`` (:mod:`.tamper_check`). The no-op
outcomes record the tests as the base measured them (:func:`.classify.no_op_groups`).
"""

from __future__ import annotations

import contextlib
import posixpath
import secrets
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from orchestrator.atomic import atomic_write_text
from orchestrator.context.successor import Successor
from orchestrator.diffs.apply import ApplyOutcome, apply_patch
from orchestrator.diffs.diff import Patch
from orchestrator.grading.audit import (
    AuditConfig,
    AuditReport,
    audit_config,
    audit_report,
    put_audit_files,
)
from orchestrator.grading.classify import classify, detect_test_crash, grade_tests, no_op_groups
from orchestrator.grading.grading_logs import GradingLogs
from orchestrator.grading.log_parsers import parse_test_log, stricter_than_official
from orchestrator.grading.markers import extract_between_markers
from orchestrator.grading.reinstall.contained import (
    contained_reinstall,
    needs_reinstall,
    reinstall_after_patch,
)
from orchestrator.grading.runner_summary import forged_output
from orchestrator.grading.script import (
    AFTER_LIST,
    BEFORE_LIST,
    CHANGED_LIST,
    EVAL_SCRIPT_PATH,
    NONCE_VARIABLE,
    OUTPUT_FIFO,
    OUTPUT_PATH,
    TEST_PATCH_FAILED,
    TEST_PATCH_PATH,
    eval_script,
    unexplained_directories,
    writable_paths,
)
from orchestrator.grading.tamper_check import tamper_reasons
from orchestrator.models import CaseGroups, CaseStatus, Instance, Reason, Status, TwinCheck
from orchestrator.recipes.harness_files import drop_harness_files, runner_files
from orchestrator.recipes.recipe import Recipe
from orchestrator.sandbox import FileMissing, FileTooLarge, Sandbox, SandboxError
from orchestrator.sandbox.archives import files_archive
from sandbox_tools.contract import EVAL_DIR, TESTBED

__all__ = [
    "Evaluation", "SuiteRun", "eval_script", "evaluate", "no_op_groups",
    "run_tests",
]  # fmt: skip
MAX_OUTPUT_BYTES = 128 * 1024 * 1024  # a test run printing more is a crash, not read in
OUTPUT_KEEP = 1_000_000  # characters of output kept in SuiteRun.output (head and, mostly, tail)


# the eval script writes into a FIFO a root `cat` copies into the output file (no descriptor of
# the tests refers to that file); the reader gets 10 s after the script ends, then is killed
_PIPED_RUN = (
    f"chmod 700 {EVAL_DIR} && rm -f {OUTPUT_FIFO} && mkfifo -m 600 {OUTPUT_FIFO} "
    f"&& (umask 077 && : > {OUTPUT_PATH}) || exit 1\n"
    f"cat {OUTPUT_FIFO} > {OUTPUT_PATH} & reader=$!\n"
    f"bash {EVAL_SCRIPT_PATH} > {OUTPUT_FIFO} 2>&1 < /dev/null\n"
    "for _ in $(seq 500); do kill -0 $reader 2>/dev/null || break; sleep 0.02; done\n"
    f"kill $reader 2>/dev/null; wait $reader 2>/dev/null; rm -f {OUTPUT_FIFO}\n"
)


class SuiteRun(BaseModel):
    """One run of the eval script: parsed outcomes and what is needed to judge them."""

    outcomes: dict[str, CaseStatus] = Field(default_factory=dict)
    section: str | None = None  # the output between the start and end markers
    exit_code: int | None = None  # the test command's, from the end marker
    forged: str | None = None  # why the section cannot all come from the runner
    output: str = ""  # the whole output, cut to OUTPUT_KEEP characters
    timed_out: bool = False
    crash: str | None = None  # why the output cannot be graded
    duration: float = 0.0
    # where the tests wrote in the repository (a recording run as the test user only)
    writable: list[str] = Field(default_factory=list)
    # where the listings cannot tell whether the tests wrote (script.unexplained_directories)
    unexplained: list[str] = Field(default_factory=list)
    audit: AuditReport | None = None  # what the patch's code did (a run set up to audit)


class Evaluation(BaseModel):
    """The grading of one patch; the caller turns it into an InstanceResult."""

    status: Status
    reason: Reason = Reason.NONE
    message: str = ""
    apply: ApplyOutcome | None = None
    test_run: SuiteRun | None = None
    groups: CaseGroups | None = None  # set when the tests ran and could be graded
    excluded_files: list[str] = Field(default_factory=list)
    suspicious: list[str] = Field(default_factory=list)  # see tamper_check; resolved only
    tamper_evidence: list[str] = Field(default_factory=list)  # see audit; tests then fail
    # compiled extension modules the patch's reinstall wrote (no audit event sees their code)
    compiled_modules: list[str] = Field(default_factory=list)
    # expected tests whose conflicting reports count as failing here (officially: the last)
    stricter_than_official: list[str] = Field(default_factory=list)
    logs: dict[str, str] = Field(default_factory=dict)  # name -> file under log_dir
    # the deciding tests whose outcome changed when run again (.flaky_reruns): their outcomes
    flaky_tests: dict[str, list[str]] = Field(default_factory=dict)
    rerun_seconds: float | None = None  # what the re-runs took; None when none ran
    twin_check: TwinCheck | None = None  # the verdict checked with impossible twins (.twins)
    twin_seconds: float | None = None  # what the secret pair took; None when none ran


def run_tests(
    sandbox: Sandbox,
    instance: Instance,
    recipe: Recipe,
    *,
    timeout: float,
    log_dir: Path | None = None,
    test_user: str | None = None,
    writable: Sequence[str] = (),
    record: bool = False,
    directives: Sequence[str] | None = None,
    audit: AuditConfig | None = None,
    test_patch: str | None = None,
) -> SuiteRun:
    """Run the instance's tests in ``sandbox`` with the network off, and parse the outcomes.

    The markers carry a nonce made here for this run and given only to the eval script
    (:func:`eval_script`); the output file and the eval directory are root's alone, so a
    test process of ``test_user`` can neither read the nonce back nor the script. The eval
    script writes into a pipe (a FIFO a root ``cat`` copies into the output file) that no
    descriptor of the tests can rewind. The network stays off. With ``log_dir``, ``eval.sh``
    and the whole output (``test_output.txt``) are written there.

    The repository is read-only to ``test_user`` but for ``writable``; with ``record`` it
    is writable instead, and ``SuiteRun.writable`` says where the tests wrote
    (:mod:`.script`). ``directives``: run these instead of the test files. ``audit``: the
    patch's code is watched (:mod:`.audit`). ``test_patch``: applied in place of the
    instance's (an impossible twin's, :mod:`.twins`; it touches the same files, and the
    script is the instance's own).
    """
    sandbox.set_network(False)
    script = eval_script(instance, recipe, test_user, writable, record, directives)
    _put_eval_files(sandbox, instance.test_patch if test_patch is None else test_patch, script)
    if audit is not None:
        put_audit_files(sandbox, audit)
    nonce = secrets.token_hex(16)
    started = time.monotonic()
    result = sandbox.exec(["bash", "-c", _PIPED_RUN], timeout=timeout, env={NONCE_VARIABLE: nonce})
    duration = time.monotonic() - started
    output, too_large = _read_output(sandbox)
    if result.output.strip():  # the wrapper's own complaints, e.g. no space for the output
        output += result.output
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(log_dir / "eval.sh", script)
        atomic_write_text(log_dir / "test_output.txt", output, errors="replace")
    section, exit_code = extract_between_markers(output, nonce=nonce)
    outcomes = parse_test_log(recipe.log_format, section or "")
    forged = forged_output(section) if section is not None else None
    crash = None
    if not result.timed_out and forged is None:
        crash = _crash(output, too_large, exit_code, section, outcomes)
    written = _recorded_writes(sandbox) if record and test_user else ([], [])
    return SuiteRun(
        outcomes=outcomes, section=section, exit_code=exit_code, forged=forged,
        output=_cap(output, OUTPUT_KEEP), timed_out=result.timed_out, crash=crash,
        duration=duration, writable=written[0], unexplained=written[1],
        audit=audit_report(sandbox, exit_code, log_dir) if audit is not None else None,
    )  # fmt: skip


def _put_eval_files(sandbox: Sandbox, test_patch: str, script: str) -> None:
    """The test patch and the eval script, with their directory (root's alone), in one copy."""
    parent = posixpath.dirname(EVAL_DIR)
    files: dict[str, tuple[bytes | str, int]] = {
        posixpath.relpath(TEST_PATCH_PATH, parent): (
            test_patch.encode("utf-8", "surrogateescape"), 0o644,
        ),
        posixpath.relpath(EVAL_SCRIPT_PATH, parent): (script, 0o700),
    }  # fmt: skip
    sandbox.put_archive(parent, files_archive(files, dir_mode=0o700))


def _crash(
    output: str,
    too_large: bool,
    exit_code: int | None,
    section: str | None,
    outcomes: dict[str, CaseStatus],
) -> str | None:
    """Why the output of a run that finished and is not forged cannot be graded."""
    if too_large:
        return f"the test output is larger than {MAX_OUTPUT_BYTES} bytes"
    if TEST_PATCH_FAILED in output:
        return "the test patch does not apply after the patch (see the test output)"
    return detect_test_crash(exit_code, section, outcomes)


def _recorded_writes(sandbox: Sandbox) -> tuple[list[str], list[str]]:
    """Where a recording run's tests wrote (:func:`.script.writable_paths`), and where its
    listings cannot tell (:func:`.script.unexplained_directories`)."""
    listings = []
    for path in (BEFORE_LIST, AFTER_LIST, CHANGED_LIST):
        try:
            listings.append(sandbox.read_file(path).decode("utf-8", "replace").splitlines())
        except SandboxError:
            return [], []  # the script ended before the tests (the test patch did not apply)
    return writable_paths(*listings), unexplained_directories(*listings)


def evaluate(
    sandbox: Sandbox,
    instance: Instance,
    recipe: Recipe,
    patch: Patch | None,
    *,
    timeout: float,
    fuzz: int = 3,
    excluded_p2p: Iterable[str] = (),
    log_dir: Path | None = None,
    test_user: str | None = None,
    excluded_f2p: Iterable[str] = (),
    writable: Sequence[str] = (),
    successor: Successor | None = None,
    test_patch: str | None = None,
    record: bool = False,
    directives: Sequence[str] | None = None,
    audit: bool = True,
    tests_without_patch: bool = False,
    reinstall_in_place: bool = False,
    run: bool = True,
) -> Evaluation:
    """Grade ``patch`` for ``instance`` in ``sandbox`` (a container at the base commit) on one
    run of the tests (:func:`orchestrator.grading.grade` runs the deciding ones again).

    The options are :class:`.request.GradingRequest`'s: the tests run as ``test_user`` when
    given, the repository read-only to that user but for ``writable`` (what validation saw
    the gold run write; see :mod:`.script`). A resolved patch that
    :func:`.tamper_check.tamper_reasons` finds reasons in is flagged ``suspicious``. A
    patch that must be installed again is built in ``sandbox``, and the tests run in a
    fresh sandbox from its files (``successor``; :mod:`.reinstall`). ``test_patch``: the
    tests' patch in place of the instance's (:func:`run_tests`).

    Validation's options (the benchmark's own gold patch, never a participant's): ``record``,
    ``directives`` (:func:`run_tests`); ``audit`` False: the patch's code is not watched;
    ``tests_without_patch``: the tests run with no patch too (the tree as it is);
    ``reinstall_in_place``: a reinstall runs in ``sandbox`` itself, unguarded (a failed one
    is ``patch_apply_failed``); ``run`` False: the patch is applied (and installed again),
    and no test runs (reason none when both went well).
    """
    excluded_tests = (list(excluded_p2p), list(excluded_f2p))
    with prepared_patch(
        sandbox, instance, recipe, patch, timeout=timeout, fuzz=fuzz, log_dir=log_dir,
        excluded=excluded_tests, successor=successor, tests_without_patch=tests_without_patch,
        reinstall_in_place=reinstall_in_place,
    ) as ready:  # fmt: skip
        if isinstance(ready, Evaluation):
            return ready
        if not run:
            return Evaluation(status=Status.NO_OP, message="no test ran", **ready.common)
        return tested(
            ready.sandbox, instance, recipe, ready, timeout=timeout, log_dir=log_dir,
            test_user=test_user, writable=writable, audit=audit, test_patch=test_patch,
            record=record, directives=directives,
        )  # fmt: skip


@dataclass
class Ready:
    """A patch applied (and installed again where it must be): the sandbox the tests run in
    (the grading one, or a fresh one from the build's files), the patch as graded (its test
    infrastructure left out) and what the evaluation records of it (``common``), the tests
    left out of grading (``excluded``: PASS_TO_PASS, FAIL_TO_PASS)."""

    sandbox: Sandbox
    gradeable: Patch
    common: dict[str, Any]
    excluded: tuple[list[str], list[str]]


@contextlib.contextmanager
def prepared_patch(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, patch: Patch | None, *,
    timeout: float, fuzz: int = 3, log_dir: Path | None = None,
    excluded: tuple[list[str], list[str]] = ([], []), successor: Successor | None = None,
    tests_without_patch: bool = False, reinstall_in_place: bool = False,
) -> Iterator[Ready | Evaluation]:  # fmt: skip
    """``patch`` applied in ``sandbox`` and installed again where it must be (see
    :func:`evaluate`): yields where the tests run (:class:`Ready`), or the grade without a
    test run (an empty patch, one that does not apply, a refused reinstall)."""
    unchanged = no_op_groups(instance, *excluded)
    if patch is None or patch.is_empty():
        if not tests_without_patch:
            yield _no_op(Reason.EMPTY_PATCH, "empty patch", unchanged)
            return
        patch = Patch()
    sandbox.set_network(False)
    logs = GradingLogs(log_dir)
    common: dict[str, Any] = {"logs": logs.files}
    if patch.is_empty():  # validation's runs of the tree as it is
        gradeable = patch
    else:
        applied = _applied(sandbox, instance, recipe, patch, fuzz, logs, unchanged)
        if isinstance(applied, Evaluation):
            yield applied
            return
        gradeable, common = applied
    reinstalled: AbstractContextManager[tuple[Sandbox, str, list[str]]]
    if reinstall_in_place:
        failed = _reinstall_in_place(sandbox, recipe, gradeable, timeout)
        if failed:
            yield _no_op(Reason.PATCH_APPLY_FAILED, failed, unchanged, **common)
            return
        reinstalled = contextlib.nullcontext((sandbox, "", list[str]()))
    else:
        reinstalled = _reinstall(sandbox, recipe, gradeable, timeout, logs, successor)
    with reinstalled as (sandbox, refused, compiled):
        common["compiled_modules"] = compiled
        if refused:
            message = "the reinstall the patch's build changes caused wrote beyond the "
            message += f"package's own files, so the tests did not run: {refused}"
            yield _no_op(Reason.REINSTALL_REFUSED, message, unchanged, **common)
            return
        yield Ready(sandbox, gradeable, common, excluded)


def tested(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, ready: Ready, *, timeout: float,
    log_dir: Path | None = None, test_user: str | None = None, writable: Sequence[str] = (),
    audit: bool = True, test_patch: str | None = None, record: bool = False,
    directives: Sequence[str] | None = None,
) -> Evaluation:  # fmt: skip
    """One run of the tests of ``ready``'s patch in ``sandbox`` (``ready``'s own, or a fresh
    one from its files), judged (the options are :func:`evaluate`'s)."""
    logs = GradingLogs(log_dir)
    suite = watched_run(
        sandbox, instance, recipe, ready, timeout=timeout, log_dir=log_dir,
        test_user=test_user, writable=writable, audit=audit, test_patch=test_patch,
        record=record, directives=directives,
    )  # fmt: skip
    logs.note("eval_script", "eval.sh")
    logs.note("tests", "test_output.txt")
    if log_dir is not None and (log_dir / "audit.log").is_file():
        logs.note("audit", "audit.log")
    common = {**ready.common, "logs": {**ready.common.get("logs", {}), **logs.files}}
    return _judge(suite, instance, recipe, ready.gradeable, ready.excluded, timeout, common)


def watched_run(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, ready: Ready, *, timeout: float,
    log_dir: Path | None = None, test_user: str | None = None, writable: Sequence[str] = (),
    audit: bool = True, test_patch: str | None = None, record: bool = False,
    directives: Sequence[str] | None = None,
) -> SuiteRun:  # fmt: skip
    """One run of the tests of ``ready``'s patch in ``sandbox``, its code watched by the audit
    hook unless ``audit`` is False (:func:`run_tests`)."""
    watched = (
        audit_config(sandbox, instance, recipe, ready.gradeable, TESTBED, EVAL_DIR)
        if audit
        else None
    )
    return run_tests(
        sandbox, instance, recipe, timeout=timeout, log_dir=log_dir, test_user=test_user,
        writable=writable, audit=watched, test_patch=test_patch, record=record,
        directives=directives,
    )  # fmt: skip


def _applied(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, patch: Patch, fuzz: int,
    logs: GradingLogs, unchanged: CaseGroups,
) -> Evaluation | tuple[Patch, dict[str, Any]]:  # fmt: skip
    """``patch`` without its test infrastructure, applied in ``sandbox``: the patch applied
    and what the evaluation records of it, or the ``no_op`` when nothing could be applied."""
    gradeable, excluded = drop_harness_files(patch, instance, recipe)
    logs.write("graded_patch", "graded.patch", gradeable.text)
    if gradeable.is_empty():
        message = "the patch only changes test infrastructure, which grading leaves out: "
        return _no_op(
            Reason.EMPTY_PATCH, message + ", ".join(excluded), unchanged,
            excluded_files=excluded, logs=logs.files,
        )  # fmt: skip
    applied = apply_patch(sandbox, gradeable, repo_dir=TESTBED, fuzz=fuzz)
    logs.write("apply", "apply.log", applied.log or applied.error)
    common = {"apply": applied, "excluded_files": excluded, "logs": logs.files}
    if not applied.applied:
        reason = Reason.PATCH_PATH_REFUSED if applied.refused else Reason.PATCH_APPLY_FAILED
        return _no_op(reason, applied.error, unchanged, **common)
    return gradeable, common


def _reinstall_in_place(sandbox: Sandbox, recipe: Recipe, patch: Patch, timeout: float) -> str:
    """Install again in ``sandbox`` itself if ``patch`` needs it (the gold patch only): why
    it failed ("" when it did not, or was not needed)."""
    reinstalled = reinstall_after_patch(sandbox, recipe, patch, timeout)
    return f"reinstall failed: {reinstalled[1]}" if reinstalled and not reinstalled[0] else ""


def _no_op(reason: Reason, message: str, groups: CaseGroups, **extra: Any) -> Evaluation:
    """A grade without a test run: the tests as the base measured them (``groups``)."""
    return Evaluation(status=Status.NO_OP, reason=reason, message=message, groups=groups, **extra)


@contextlib.contextmanager
def _reinstall(
    sandbox: Sandbox, recipe: Recipe, gradeable: Patch, timeout: float, logs: GradingLogs,
    successor: Successor | None,
) -> Iterator[tuple[Sandbox, str, list[str]]]:  # fmt: skip
    """Install again if the patch changes what the build reads (:mod:`.reinstall`): the sandbox
    the tests run in, what the build wrote that it may not, shown ("" if nothing), and the
    compiled modules it wrote."""
    if successor is None and needs_reinstall(recipe, gradeable):
        raise SandboxError("the patch must be installed again, and no fresh sandbox can be had")
    with contained_reinstall(
        sandbox, recipe, gradeable, timeout, successor or contextlib.nullcontext,
        repo_dir=TESTBED, runner_files=runner_files(recipe),
    ) as (graded_in, reinstalled):  # fmt: skip
        if reinstalled is None:
            yield graded_in, "", []
            return
        refused = "".join(f"refused: {path}\n" for path in reinstalled.refused)
        ok = "ok" if reinstalled.ok else "FAILED"
        logs.write("reinstall", "reinstall.log", f"reinstall {ok}\n{reinstalled.tail}\n{refused}")
        more = len(reinstalled.refused) - 5
        shown = "; ".join(reinstalled.refused[:5]) + (f" (and {more} more)" * (more > 0))
        yield graded_in, shown, reinstalled.compiled


def _judge(
    run: SuiteRun, instance: Instance, recipe: Recipe, gradeable: Patch,
    excluded: tuple[list[str], list[str]], timeout: float, common: dict[str, Any],
) -> Evaluation:  # fmt: skip
    """The grade of a test run: timed out, forged, crashed, or the tests' outcomes
    (``excluded``: the PASS_TO_PASS and FAIL_TO_PASS tests left out)."""
    excluded_p2p, excluded_f2p = excluded
    if run.timed_out:
        return Evaluation(
            status=Status.ERROR,
            reason=Reason.TEST_TIMEOUT,
            message=f"the tests ran longer than {timeout:g} s",
            test_run=run,
            **common,
        )
    evidence = run.audit.evidence if run.audit is not None else []
    if run.forged or evidence:  # nothing of the section can be trusted: every test fails
        return _untrusted(run, instance, excluded, evidence, common)
    if run.crash:
        return Evaluation(
            status=Status.ERROR, reason=Reason.TEST_CRASH, message=run.crash, test_run=run, **common
        )
    groups = grade_tests(
        instance.FAIL_TO_PASS, instance.PASS_TO_PASS, run.outcomes, excluded_p2p, excluded_f2p
    )
    status = classify(groups)
    expected = set(instance.FAIL_TO_PASS) | set(instance.PASS_TO_PASS)
    stricter = [
        name
        for name in stricter_than_official(recipe.log_format, run.section or "")
        if name in expected
    ]
    suspicious: list[str] = []
    if status == Status.RESOLVED:
        suspicious = tamper_reasons(gradeable, runner_files(recipe), instance.patch)
        if common.get("compiled_modules"):  # code no audit event sees: the twins judge it
            suspicious.append(
                "its build compiled modules whose code the audit cannot see: "
                + ", ".join(common["compiled_modules"][:5])
            )
    return Evaluation(
        status=status,
        groups=groups,
        test_run=run,
        suspicious=suspicious,
        stricter_than_official=stricter,
        message="suspicious: " + "; ".join(suspicious) if suspicious else "",
        **common,
    )


def _untrusted(
    run: SuiteRun, instance: Instance, excluded: tuple[list[str], list[str]],
    evidence: list[str], common: dict[str, Any],
) -> Evaluation:  # fmt: skip
    """Forged output or evidence of tampering: every expected test counts as failing."""
    groups = grade_tests(instance.FAIL_TO_PASS, instance.PASS_TO_PASS, {}, *excluded)
    forged = f"the test output is forged, every test counts as failing: {run.forged}"
    reason, message = Reason.TEST_OUTPUT_FORGED, forged
    if evidence:  # what the code did, by file and line, comes first
        reason = Reason.TAMPER_DETECTED
        message = "the patch's code tampered with the test run, every test counts as "
        message += "failing: " + "; ".join(evidence[:5])
        message += f" (and {len(evidence) - 5} more)" if len(evidence) > 5 else ""
        message += f"; and {forged.removeprefix('the ')}" if run.forged else ""
    return Evaluation(
        status=classify(groups), reason=reason, message=message, groups=groups, test_run=run,
        tamper_evidence=evidence, **common,
    )  # fmt: skip


def _read_output(sandbox: Sandbox) -> tuple[str, bool]:
    """The eval script's output file, and whether it was too large to read."""
    try:
        data = sandbox.read_file(OUTPUT_PATH, max_bytes=MAX_OUTPUT_BYTES)
    except FileTooLarge:
        tail = sandbox.exec(["tail", "-c", str(OUTPUT_KEEP), OUTPUT_PATH], timeout=60)
        return tail.stdout, True
    except FileMissing:  # the wrapper ended before it made the file
        return "", False
    return data.decode("utf-8", errors="replace"), False


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit // 10
    cut = len(text) - limit
    return text[:head] + f"\n[... {cut} characters cut ...]\n" + text[-(limit - head) :]
