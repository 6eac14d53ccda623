"""Grading: test groups, the status table, crash detection, the leaderboard row."""

from __future__ import annotations

import math

import pytest

from orchestrator.grading.classify import (
    LeaderboardRow,
    aggregate,
    classify,
    detect_test_crash,
    grade_tests,
)
from orchestrator.grading.log_parsers import parse_test_log
from orchestrator.models import CaseGroups as Groups
from orchestrator.models import CaseStatus as TS
from orchestrator.models import InstanceResult, Reason, Status

from .reference_data import TEST_LOGS as LOGS
from .reference_data import verified_row

P, F, E, S, X = TS.PASSED, TS.FAILED, TS.ERROR, TS.SKIPPED, TS.XFAIL


# --------------------------------------------------------------------------- grade_tests


def test_grade_tests_sorts_by_outcome() -> None:
    outcomes = {"f1": P, "f2": F, "f3": X, "f4": S, "f5": E, "p1": P, "p2": E, "p3": X, "p4": S}
    groups = grade_tests(
        ["f1", "f2", "f3", "f4", "f5", "f6"], ["p1", "p2", "p3", "p4", "p5"], outcomes
    )
    assert groups.fail_to_pass_passed == ["f1", "f3"]
    # FAILED, SKIPPED, ERROR and missing all fail
    assert groups.fail_to_pass_failed == ["f2", "f4", "f5", "f6"]
    assert groups.pass_to_pass_passed == ["p1", "p3"]
    assert groups.pass_to_pass_failed == ["p2", "p4", "p5"]
    assert groups.pass_to_pass_excluded == []


def test_grade_tests_leaves_excluded_tests_out_and_lists_them() -> None:
    groups = grade_tests(["f"], ["p1", "p2", "p3"], {"f": P, "p1": P, "p2": F}, ["p2", "zz"])
    assert groups.pass_to_pass_passed == ["p1"]
    assert groups.pass_to_pass_failed == ["p3"]
    assert groups.pass_to_pass_excluded == ["p2"]  # only tests of this instance


def test_grade_tests_matches_truncated_ids() -> None:
    groups = grade_tests(["t.py::a[x"], [], {"t.py::a[x y]": P, "t.py::a[x z]": P})
    assert groups.fail_to_pass_passed == ["t.py::a[x"]


def test_grade_tests_with_empty_lists() -> None:
    assert grade_tests([], [], {"x": P}) == Groups()


def test_gold_log_of_requests_grades_resolved_once_network_tests_are_excluded() -> None:
    instance = verified_row("psf__requests-2931")
    text = (LOGS / "pytest_options--psf__requests-2931--gold.txt").read_text()
    outcomes = parse_test_log("pytest_options", text)
    network = [
        "test_requests.py::TestTimeout::test_connect_timeout",
        "test_requests.py::TestTimeout::test_total_timeout_connect",
    ]
    plain = grade_tests(instance["FAIL_TO_PASS"], instance["PASS_TO_PASS"], outcomes)
    assert classify(plain) == Status.BREAKING_RESOLVED
    assert plain.pass_to_pass_failed == network
    graded = grade_tests(instance["FAIL_TO_PASS"], instance["PASS_TO_PASS"], outcomes, network)
    assert classify(graded) == Status.RESOLVED
    assert graded.pass_to_pass_excluded == network
    assert len(graded.pass_to_pass_passed) == len(instance["PASS_TO_PASS"]) - 2


# --------------------------------------------------------------------------- classify


def _groups(f_pass: int, f_fail: int, p_pass: int, p_fail: int) -> Groups:
    return Groups(
        fail_to_pass_passed=[f"fp{i}" for i in range(f_pass)],
        fail_to_pass_failed=[f"ff{i}" for i in range(f_fail)],
        pass_to_pass_passed=[f"pp{i}" for i in range(p_pass)],
        pass_to_pass_failed=[f"pf{i}" for i in range(p_fail)],
    )


@pytest.mark.parametrize(
    ("f_pass", "f_fail", "p_pass", "p_fail", "status"),
    [
        # all F
        (2, 0, 3, 0, Status.RESOLVED),
        (2, 0, 0, 0, Status.RESOLVED),  # empty P counts as all P
        (2, 0, 2, 1, Status.BREAKING_RESOLVED),
        (2, 0, 0, 3, Status.BREAKING_RESOLVED),  # every P fails
        # some F
        (1, 1, 3, 0, Status.PARTIALLY_RESOLVED),
        (1, 1, 0, 0, Status.PARTIALLY_RESOLVED),
        (1, 2, 2, 1, Status.WORK_IN_PROGRESS),
        (1, 2, 0, 1, Status.WORK_IN_PROGRESS),
        # no F
        (0, 2, 3, 0, Status.NO_OP),
        (0, 2, 0, 0, Status.NO_OP),
        (0, 2, 2, 1, Status.REGRESSION),
        (0, 2, 0, 1, Status.REGRESSION),
        # empty F: vacuously all F
        (0, 0, 3, 0, Status.RESOLVED),
        (0, 0, 0, 0, Status.RESOLVED),
        (0, 0, 3, 1, Status.BREAKING_RESOLVED),
    ],
)
def test_classify(f_pass: int, f_fail: int, p_pass: int, p_fail: int, status: Status) -> None:
    assert classify(_groups(f_pass, f_fail, p_pass, p_fail)) == status


def test_excluded_tests_do_not_affect_the_status() -> None:
    groups = _groups(1, 0, 1, 0)
    groups.pass_to_pass_excluded = ["flaky"]
    assert classify(groups) == Status.RESOLVED


# --------------------------------------------------------------------------- detect_test_crash

PYTEST_OK = """\
============================= test session starts ==============================
collected 3 items

tests/t.py .F.                                                           [100%]

=========================== short test summary info ============================
PASSED tests/t.py::test_a
PASSED tests/t.py::test_c
FAILED tests/t.py::test_b - assert 0
========================= 1 failed, 2 passed in 0.10s ==========================
"""


def _crash(exit_code: int | None, section: str | None, log_format: str = "pytest") -> str | None:
    outcomes = parse_test_log(log_format, section or "")
    return detect_test_crash(exit_code, section, outcomes)


@pytest.mark.parametrize(
    ("name", "exit_code"),
    [
        ("pytest--pallets__flask-5014--gold.txt", 0),
        ("pytest--pytest-dev__pytest-10051--gold.txt", 0),
        ("pytest--pytest-dev__pytest-5631--base.txt", 1),
        ("pytest_options--psf__requests-2931--gold.txt", 1),
        ("pytest_options--pylint-dev__pylint-4970--gold.txt", 0),
        ("seaborn--mwaskom__seaborn-3187--base.txt", 1),
        ("sympy--sympy__sympy-13480--gold.txt", 0),
        ("sympy--sympy__sympy-20590--gold.txt", 0),
    ],
)
def test_real_logs_are_not_crashes(name: str, exit_code: int) -> None:
    log_format = name.split("--")[0]
    assert _crash(exit_code, (LOGS / name).read_text(), log_format) is None


def test_consistent_pytest_output_is_not_a_crash() -> None:
    assert _crash(1, PYTEST_OK) is None


@pytest.mark.parametrize(
    ("exit_code", "section", "reason"),
    [
        (None, None, "markers"),
        (1, None, "markers"),
        (0, "  \n", "printed nothing"),
        (1, "Traceback (most recent call last):\nImportError: no module x\n", "no test runner"),
        # killed half way: per-test lines, no closing summary
        (137, PYTEST_OK[: PYTEST_OK.index("FAILED tests")], "no test runner"),
        (None, PYTEST_OK, "exit code is missing"),
        (
            3,
            "INTERNALERROR> Traceback\n=== no tests ran in 0.01s ===\n",
            "exited with code 3",
        ),
        (5, "=== no tests ran in 0.01s ===\n", "exited with code 5"),
    ],
)
def test_crashes(exit_code: int | None, section: str | None, reason: str) -> None:
    message = _crash(exit_code, section)
    assert message is not None and reason in message


def test_fake_passed_lines_are_caught_by_the_summary_count() -> None:
    # the code under test printed extra PASSED lines for tests that do not exist
    section = PYTEST_OK.replace(
        "PASSED tests/t.py::test_c\n", "PASSED tests/t.py::test_c\nPASSED tests/t.py::test_d\n"
    )
    message = _crash(1, section)
    assert message is not None and "tampered" in message


def test_deleted_failed_line_is_caught_by_the_summary_count() -> None:
    section = PYTEST_OK.replace("FAILED tests/t.py::test_b - assert 0\n", "")
    message = _crash(1, section)
    assert message is not None and "FAILED lines" in message


def test_fake_passed_line_for_a_failed_test_is_outvoted() -> None:
    # a PASSED line printed before the summary (e.g. captured output) for the failing test
    section = PYTEST_OK.replace("tests/t.py .F.", "PASSED tests/t.py::test_b\ntests/t.py .F.")
    outcomes = parse_test_log("pytest", section)
    assert outcomes["tests/t.py::test_b"] == F
    assert detect_test_crash(1, section, outcomes) is None


def test_old_pytest_without_passed_lines_is_not_flagged() -> None:
    # pytest 3 ignores -rA's "A": per-test results come from -v lines only
    section = (
        "astropy/t.py::test_a PASSED\nastropy/t.py::test_b FAILED\n"
        "=========================== short test summary info ============================\n"
        "FAILED astropy/t.py::test_b\n"
        "============ 1 failed, 1 passed in 0.20 seconds =============\n"
    )
    assert _crash(1, section, "pytest_v2") is None


DJANGO_SECTION = """\
test_a (m.T) ... ok
test_b (m.T) ... FAIL
test_c (m.T) ... skipped 'no'

----------------------------------------------------------------------
Ran 3 tests in 0.010s

FAILED (failures=1, skipped=1)
"""


def test_django_output() -> None:
    assert _crash(1, DJANGO_SECTION, "django") is None
    faked = DJANGO_SECTION.replace(
        "test_a (m.T) ... ok", "test_a (m.T) ... ok\ntest_b (m.T) ... ok"
    )
    message = _crash(1, faked, "django")
    assert message is not None and "tampered" in message
    crashed = "Traceback (most recent call last):\nImproperlyConfigured: x\n"
    assert "no test runner" in (_crash(1, crashed, "django") or "")


def test_sympy_output() -> None:
    section = "test_a ok\ntest_b F\n== tests finished: 1 passed, 1 failed, in 0.1 seconds ==\n"
    assert _crash(1, section, "sympy") is None
    faked = section.replace("test_a ok", "test_a ok\ntest_b ok")
    assert "tampered" in (_crash(1, faked, "sympy") or "")


# --------------------------------------------------------------------------- aggregate


def _result(instance_id: str, status: Status, groups: Groups | None = None) -> InstanceResult:
    reason = Reason.ENVIRONMENT if status == Status.ERROR else Reason.NONE
    return InstanceResult(
        instance_id=instance_id, status=status, reason=reason, tests=groups or Groups()
    )


def test_aggregate_of_nothing_is_zeros() -> None:
    row = aggregate([])
    assert row == LeaderboardRow()
    assert row.total_instances == 0 and row.resolved_pct == 0.0


def test_aggregate() -> None:
    results = [
        _result("a-1", Status.RESOLVED, _groups(2, 0, 4, 0)),  # f 1, p 1
        _result("a-2", Status.PARTIALLY_RESOLVED, _groups(1, 3, 2, 0)),  # f .25, p 1
        _result("a-3", Status.REGRESSION, _groups(0, 1, 1, 1)),  # f 0, p .5
        _result("a-4", Status.ERROR, _groups(1, 0, 1, 0)),  # error: 0 and 0
        _result("a-5", Status.RESOLVED, _groups(1, 0, 0, 0)),  # empty P counts 1
    ]
    row = aggregate(results)
    assert row.total_instances == 5
    assert row.resolved_count == 2 and row.resolved_pct == pytest.approx(0.4)
    assert row.partially_resolved_pct == pytest.approx(0.2)
    assert row.regression_pct == pytest.approx(0.2)
    assert row.error_count == 1 and row.error_pct == pytest.approx(0.2)
    assert row.no_op_count == 0 and row.no_op_pct == 0.0
    assert row.fail_to_pass_passed_pct == pytest.approx((1 + 0.25 + 0 + 0 + 1) / 5)
    assert row.pass_to_pass_passed_pct == pytest.approx((1 + 1 + 0.5 + 0 + 1) / 5)
    shares = [getattr(row, f"{status.value}_pct") for status in Status]
    assert math.isclose(sum(shares), 1.0)
    assert sum(getattr(row, f"{status.value}_count") for status in Status) == 5


def test_aggregate_of_errors_only() -> None:
    row = aggregate([_result("a-1", Status.ERROR), _result("a-2", Status.ERROR)])
    assert row.error_pct == 1.0
    assert row.fail_to_pass_passed_pct == 0.0 and row.pass_to_pass_passed_pct == 0.0


def test_leaderboard_row_has_the_query_columns() -> None:
    keys = set(LeaderboardRow().model_dump())
    assert {f"{status.value}_pct" for status in Status} <= keys
    assert {"total_instances", "fail_to_pass_passed_pct", "pass_to_pass_passed_pct"} <= keys


def test_the_row_counts_verdicts_on_a_reduced_test_set() -> None:
    reduced = Groups(fail_to_pass_passed=["f"], pass_to_pass_excluded=["needs-internet"])
    f2p_reduced = Groups(fail_to_pass_passed=["f"], fail_to_pass_excluded=["online"])
    results = [
        _result("a-1", Status.RESOLVED, reduced),
        _result("a-2", Status.PARTIALLY_RESOLVED, f2p_reduced),
        _result("a-3", Status.RESOLVED, Groups(fail_to_pass_passed=["f"])),
        _result("a-4", Status.ERROR, reduced),  # not graded: not counted
    ]
    assert [r.reduced_tests for r in results] == [1, 1, 0, 1]
    assert aggregate(results).reduced_tests_count == 2


def test_the_status_line_marks_a_reduced_verdict(capsys) -> None:
    from types import SimpleNamespace

    from orchestrator.frontends.cli.live_progress import LiveProgress

    progress = LiveProgress(1)
    result = _result("a-1", Status.RESOLVED, Groups(pass_to_pass_excluded=["x", "y"]))
    result.timings["total"] = 3.0
    event = SimpleNamespace(
        kind="finished", done=1, total=1, statuses={}, in_flight={}, result=result
    )
    progress.update(event)
    out = capsys.readouterr().out
    assert "1/1 a-1: resolved* (* 2 test(s) left out) in 3s" in out
