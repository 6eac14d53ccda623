"""Grading: expected tests against parsed outcomes, the status table, the leaderboard row.

Which outcomes count as passing (as SWE-bench 4.1, except SKIPPED):

* PASSED and XFAIL pass; FAILED and ERROR fail; a test missing from the output fails.
* SKIPPED fails. SWE-bench leaves a skipped test out of both its passed and failed lists, so
  a patch that makes a FAIL_TO_PASS test skip (``raise unittest.SkipTest`` or
  ``pytest.skip()`` from the code under test) would resolve the instance. A test that the
  environment itself skips is skipped with the gold patch too; environment validation then
  excludes it (PASS_TO_PASS) or fails the environment (FAIL_TO_PASS), so it is never held
  against a participant.

Empty lists: an empty PASS_TO_PASS list counts as all passing (the design's table); an empty
FAIL_TO_PASS list counts as all passing too (SWE-bench's ratio of 1 for an empty list), so
such an instance grades ``resolved`` or ``breaking_resolved``. SWE-bench Verified has no
instance without FAIL_TO_PASS tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, Field

from orchestrator.grading.log_parsers import FAILING, PASSING, match_expected
from orchestrator.grading.runner_summary import runner_summary
from orchestrator.models import CaseGroups, CaseStatus, Instance, InstanceResult, Reason, Status


def _passes(status: CaseStatus | None) -> bool:
    return status in PASSING


def grade_tests(
    instance_f2p: list[str],
    instance_p2p: list[str],
    outcomes: Mapping[str, CaseStatus],
    excluded_p2p: Iterable[str] = (),
    excluded_f2p: Iterable[str] = (),
) -> CaseGroups:
    """Sort the instance's expected tests into passed and failed by their outcomes.

    PASS_TO_PASS tests in ``excluded_p2p`` (those that fail with the gold patch in this
    environment) are left out of grading and listed in ``pass_to_pass_excluded``; so are
    FAIL_TO_PASS tests in ``excluded_f2p`` (those that need the internet), listed in
    ``fail_to_pass_excluded``.
    """
    excluded = set(excluded_p2p)
    left_out_f2p = set(excluded_f2p)
    graded_p2p = [name for name in dict.fromkeys(instance_p2p) if name not in excluded]
    f2p = [name for name in dict.fromkeys(instance_f2p) if name not in left_out_f2p]
    matched = match_expected(f2p + graded_p2p, dict(outcomes))
    return CaseGroups(
        fail_to_pass_passed=[name for name in f2p if _passes(matched[name])],
        fail_to_pass_failed=[name for name in f2p if not _passes(matched[name])],
        pass_to_pass_passed=[name for name in graded_p2p if _passes(matched[name])],
        pass_to_pass_failed=[name for name in graded_p2p if not _passes(matched[name])],
        pass_to_pass_excluded=[name for name in dict.fromkeys(instance_p2p) if name in excluded],
        fail_to_pass_excluded=[
            name for name in dict.fromkeys(instance_f2p) if name in left_out_f2p
        ],
    )


def no_op_groups(
    instance: Instance, excluded_p2p: Iterable[str] = (), excluded_f2p: Iterable[str] = ()
) -> CaseGroups:
    """The test groups of a patch that changes nothing the tests see (empty, only excluded
    files, or not applied): the code is the base's, so FAIL_TO_PASS tests fail and
    PASS_TO_PASS tests pass, by name (environment validation measured exactly that)."""
    excluded = set(excluded_p2p)
    left_out_f2p = set(excluded_f2p)
    p2p = list(dict.fromkeys(instance.PASS_TO_PASS))
    f2p = list(dict.fromkeys(instance.FAIL_TO_PASS))
    return CaseGroups(
        fail_to_pass_failed=[name for name in f2p if name not in left_out_f2p],
        fail_to_pass_excluded=[name for name in f2p if name in left_out_f2p],
        pass_to_pass_passed=[name for name in p2p if name not in excluded],
        pass_to_pass_excluded=[name for name in p2p if name in excluded],
    )


def classify(groups: CaseGroups) -> Status:
    """The design's status table. Empty lists count as all passing (see the module doc)."""
    all_f = not groups.fail_to_pass_failed
    no_f = not groups.fail_to_pass_passed and not all_f
    all_p = not groups.pass_to_pass_failed
    if all_f:
        return Status.RESOLVED if all_p else Status.BREAKING_RESOLVED
    if no_f:
        return Status.NO_OP if all_p else Status.REGRESSION
    return Status.PARTIALLY_RESOLVED if all_p else Status.WORK_IN_PROGRESS


def detect_test_crash(
    exit_code: int | None, section: str | None, outcomes: Mapping[str, CaseStatus]
) -> str | None:
    """Why the test output cannot be graded, or ``None`` when it can.

    ``section`` is the output between the markers (``None`` when they are missing),
    ``exit_code`` the test command's, ``outcomes`` the parsed section. Reasons:

    * the markers are missing: the test command did not finish (killed, container gone);
    * no test runner closed its run in the output (pytest's ``=== N passed in Xs ===``,
      django's ``Ran N tests``, sympy's ``tests finished``): it did not start, or crashed;
    * the exit code is missing, or non-zero while neither the output nor the runner's
      summary shows a failing test: the runner crashed or was interrupted;
    * the result lines do not add up to the runner's own summary in the direction that
      flatters the patch: more passing lines than the runner counted passes, or (pytest
      with ``-rA``) fewer failure lines than it counted failures.

    The last check is the defence against a patch that prints fake result lines: text
    printed by the code under test appears in the output but is not counted by the runner,
    so extra ``PASSED x`` lines make the counts disagree (and a fake ``PASSED`` line for a
    test the runner reports as failed is already outvoted by the parser, where a failure
    beats a pass). Code running inside the runner (a ``conftest.py``, or a patch to the
    runner itself) can rewrite the summary too; the output alone cannot expose that, which
    is why patch files outside the repository's source are worth excluding before grading.
    """
    if section is None:
        return "the test output lacks the start/end markers: the test command did not finish"
    if not section.strip():
        return "the test command printed nothing"
    summary = runner_summary(section)
    if summary is None:
        return (
            "no test runner summary in the output: the runner did not start, "
            "or it crashed or was killed before the end"
        )
    if exit_code is None:
        return "the test command's exit code is missing from the end marker"
    counts = summary.counts
    runner_failures = counts.get("failed", 0) + counts.get("error", 0)
    if summary.runner != "pytest":  # unittest and sympy fail a run on an unexpected pass
        runner_failures += counts.get("xpassed", 0)
    any_failing = any(status in FAILING for status in outcomes.values())
    if exit_code != 0 and not any_failing and runner_failures == 0:
        return (
            f"the test command exited with code {exit_code} but no test failed: "
            "the runner crashed or was interrupted"
        )
    return _summary_mismatch(summary.runner, counts, summary.reported, summary.subtest_skips)


def _pytest_mismatch(counts: dict[str, int], reported: dict[str, int]) -> str | None:
    """How pytest's result lines disagree with its summary's counts (None: they agree)."""
    got = reported.get
    passing_lines = got("PASSED", 0) + got("XPASS", 0)
    if passing_lines > counts.get("passed", 0) + counts.get("xpassed", 0):
        return f"{passing_lines} PASSED/XPASS lines, {counts.get('passed', 0)} passed"
    if got("XFAIL", 0) > counts.get("xfailed", 0):
        return f"{got('XFAIL', 0)} XFAIL lines, {counts.get('xfailed', 0)} xfailed"
    # with -rA every failure is listed; without it (old pytest) no PASSED line is
    if got("PASSED", 0) and got("FAILED", 0) < counts.get("failed", 0):
        return f"{got('FAILED', 0)} FAILED lines, {counts.get('failed', 0)} failed"
    if got("PASSED", 0) and got("ERROR", 0) < counts.get("error", 0):
        return f"{got('ERROR', 0)} ERROR lines, {counts.get('error', 0)} errors"
    return None


def _summary_mismatch(
    runner: str, counts: dict[str, int], reported: dict[str, int] | None, subtest_skips: int
) -> str | None:
    if reported is None:
        return None
    got = reported.get

    def tampered(detail: str) -> str:
        return f"the test output disagrees with the {runner} summary ({detail}): output tampered?"

    if runner == "pytest":
        detail = _pytest_mismatch(counts, reported)
        return tampered(detail) if detail else None
    passing_lines = got(CaseStatus.PASSED.value, 0) + got(CaseStatus.XFAIL.value, 0)
    if runner == "django":
        # tests that ran minus those skipped (a test's further skipped subtests count in
        # "skipped" but not in "Ran"), and at least one failing test if any failed
        failing = counts.get("failed", 0) + counts.get("error", 0) + counts.get("xpassed", 0)
        skipped_tests = counts.get("skipped", 0) - subtest_skips
        most = counts.get("ran", 0) - skipped_tests - (1 if failing else 0)
        if passing_lines > most:
            return tampered(f"{passing_lines} passing results, at most {most} possible")
        return None
    most = counts.get("passed", 0) + counts.get("xfailed", 0)
    if passing_lines > most:
        return tampered(f"{passing_lines} passing results, {most} counted")
    return None


class LeaderboardRow(BaseModel):
    """One row of the leaderboard: fractions in 0..1, and counts, over a run's instances."""

    total_instances: int = 0
    resolved_pct: float = 0.0
    breaking_resolved_pct: float = 0.0
    partially_resolved_pct: float = 0.0
    work_in_progress_pct: float = 0.0
    regression_pct: float = 0.0
    no_op_pct: float = 0.0
    error_pct: float = 0.0
    fail_to_pass_passed_pct: float = 0.0
    pass_to_pass_passed_pct: float = 0.0
    resolved_count: int = 0
    breaking_resolved_count: int = 0
    partially_resolved_count: int = 0
    work_in_progress_count: int = 0
    regression_count: int = 0
    no_op_count: int = 0
    error_count: int = 0
    # graded instances (not errors) whose verdict rests on a reduced test set
    reduced_tests_count: int = 0
    # instances whose patch's code was seen forging or reading the grading at test time
    # (reason tamper_detected: every test counted as failing)
    tamper_detected_count: int = 0
    # graded instances whose verdict rests on a test that changed its outcome when re-run
    # alone (``flaky_tests``; the verdict is the first outcome's, as officially)
    flaky_count: int = 0
    # verdicts in which some FAIL_TO_PASS test passed, checked with impossible twins
    # (``twin_check.checked``); of those resolved; and those a passing twin proved wrong
    # (reason twin_passed: its FAIL_TO_PASS test counted as failing)
    twin_checked_count: int = 0
    resolved_twin_checked_count: int = 0
    twin_passed_count: int = 0
    # passing FAIL_TO_PASS tests the secret pair gave no proof for (reason twin_unproven)
    twin_unproven_count: int = 0
    # a twin passed somewhere in the run: proof that the participant games the tests, so none
    # of its verdicts here is to be trusted (the instances: ``twin_passed_instances``)
    gaming_proven: bool = False
    twin_passed_instances: list[str] = Field(default_factory=list)
    # resolved verdicts whose wider run (the repository's other tests against the gold patch's
    # runs, ``wider``) ran: clean, or with regressions beyond the task's tests; and those
    # whose wider run could not run or compare (``wider.why_not``)
    resolved_wider_clean_count: int = 0
    resolved_wider_regressions_count: int = 0
    resolved_wider_not_run_count: int = 0


def aggregate(results: list[InstanceResult]) -> LeaderboardRow:
    """The leaderboard row of ``results``: each status's share (the seven sum to 1), the mean
    fraction of FAIL_TO_PASS and of PASS_TO_PASS tests passing (an error counts 0), counts.
    An empty list gives zeros."""
    total = len(results)
    counts = {status: 0 for status in Status}
    for result in results:
        counts[result.status] += 1
    fields: dict[str, float | int] = {"total_instances": total}
    for status, count in counts.items():
        fields[f"{status.value}_count"] = count
        fields[f"{status.value}_pct"] = count / total if total else 0.0
    if total:
        fields["fail_to_pass_passed_pct"] = sum(r.fail_to_pass_fraction for r in results) / total
        fields["pass_to_pass_passed_pct"] = sum(r.pass_to_pass_fraction for r in results) / total
    fields["reduced_tests_count"] = sum(
        1 for r in results if r.status != Status.ERROR and r.reduced_tests
    )
    fields["tamper_detected_count"] = sum(r.reason == Reason.TAMPER_DETECTED for r in results)
    fields["flaky_count"] = sum(1 for r in results if r.status != Status.ERROR and r.flaky_tests)
    checked = [r for r in results if r.twin_check is not None and r.twin_check.checked]
    fields["twin_checked_count"] = len(checked)
    fields["resolved_twin_checked_count"] = sum(r.status == Status.RESOLVED for r in checked)
    proven = [r.instance_id for r in results if r.reason == Reason.TWIN_PASSED]
    fields["twin_passed_count"] = len(proven)
    fields["twin_unproven_count"] = sum(r.reason == Reason.TWIN_UNPROVEN for r in results)
    wider = [r.wider for r in results if r.status == Status.RESOLVED and r.wider is not None]
    fields["resolved_wider_clean_count"] = sum(w.clean for w in wider)
    fields["resolved_wider_regressions_count"] = sum(bool(w.regressions) for w in wider)
    fields["resolved_wider_not_run_count"] = sum(not w.ran for w in wider)
    return LeaderboardRow.model_validate(
        {**fields, "gaming_proven": bool(proven), "twin_passed_instances": proven}
    )
