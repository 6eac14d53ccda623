"""Real test output from the proxy validation sweep of django, scikit-learn and matplotlib
(bench/proxy_mirror.py, docs/validation-proxy.md), read the way validation reads it."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from orchestrator.grading.classify import detect_test_crash
from orchestrator.grading.evaluation import SuiteRun
from orchestrator.grading.log_parsers import match_expected, parse_test_log
from orchestrator.grading.markers import extract_between_markers
from orchestrator.models import CaseStatus, Instance
from orchestrator.validation.validation import _judge

from .reference_data import verified_row

LOGS = Path(__file__).parent / "fixtures" / "proxy-logs"
_NONCE = re.compile(r"^>>>>> SWE_GREEN_END (\w+)", re.MULTILINE)


@cache
def instance(instance_id: str) -> Instance:
    return Instance.model_validate(verified_row(instance_id))


def read_run(log_format: str, name: str) -> SuiteRun:
    """The SuiteRun validation builds from one saved output (as evaluation.run_tests does)."""
    output = (LOGS / name).read_text()
    match = _NONCE.search(output)
    assert match is not None
    section, exit_code = extract_between_markers(output, nonce=match.group(1))
    outcomes = parse_test_log(log_format, section or "")
    crash = detect_test_crash(exit_code, section, outcomes)
    return SuiteRun(outcomes=outcomes, section=section, exit_code=exit_code, crash=crash)


def test_django_bug_that_crashes_the_runner_at_the_base_still_validates() -> None:
    """django-10554: at the base the bug raises inside unittest's printErrorList (a failing
    subtest's QuerySet parameter), so runtests.py never prints ``Ran N tests``. That is the
    bug, not a broken environment: with the gold patch the run is clean, and the instance
    validates with its FAIL_TO_PASS tests failing at the base, as in SWE-bench."""
    inst = instance("django__django-10554")
    base = read_run("django", "django--django__django-10554--base.txt")
    gold = read_run("django", "django--django__django-10554--gold.txt")
    assert base.crash is not None and base.crash.startswith("no test runner summary")
    assert gold.crash is None
    listed = match_expected(inst.FAIL_TO_PASS + inst.PASS_TO_PASS, gold.outcomes)
    assert [name for name, status in listed.items() if status is None] == []
    assert all(listed[name] == CaseStatus.PASSED for name in inst.FAIL_TO_PASS)
    check = _judge(inst, base, True, "", gold, "django")
    assert check.ok, check.message
    assert "the tests crash at the base commit" in check.message


def test_a_base_whose_test_patch_does_not_apply_is_still_rejected() -> None:
    inst = instance("django__django-10554")
    gold = read_run("django", "django--django__django-10554--gold.txt")
    base = SuiteRun(
        outcomes={}, section="", exit_code=1,
        crash="the test patch does not apply after the patch (see the test output)",
    )  # fmt: skip
    check = _judge(inst, base, True, "", gold, "django")
    assert not check.ok
    assert check.message.startswith("tests do not run at the base commit")


_RULE = "-" * 70


def _closing(lines: str, ran: int, verdict: str) -> str:
    return f"{lines}\n{_RULE}\nRan {ran} tests in 1.000s\n\n{verdict}\n"


def test_skipped_subtests_are_not_taken_for_tampering() -> None:
    """django-10097 (2.2): without Pillow, ``test_validators`` skips 5 subtests; unittest
    counts the test once in ``Ran`` and 5 times in ``skipped`` (3.9 prints the further
    skips as bare ``skipped '...'`` lines), so the tamper check's bound (ran minus skipped)
    was 4 short and the gold run was called tampered (11,722 passing results, at most
    11,720). The lines are the real run's; the summary is the one unittest prints for them:
    21 tests (18 ok, 2 skipped Oracle tests, test_validators), skipped=7."""
    lines = (LOGS / "django--django__django-10097--subtest-skips.txt").read_text()
    section = _closing(lines, 21, "OK (skipped=7)")
    outcomes = parse_test_log("django", section)
    assert detect_test_crash(0, section, outcomes) is None
    assert outcomes["test_validators (validators.tests.TestValidators)"] == CaseStatus.SKIPPED
    # one passing line more than the tests that can have passed is still caught
    faked = section.replace(_RULE, f"test_fake (validators.tests.X) ... ok\n{_RULE}", 1)
    message = detect_test_crash(0, faked, parse_test_log("django", faked))
    assert message is not None and "19 passing results, at most 18 possible" in message


def test_skipped_subtests_of_python_3_12_are_not_taken_for_tampering() -> None:
    """From 3.12 each skipped subtest has a line of its own, named with its parameters
    (real output of Python 3.13's unittest: 3 tests, 5 skipped subtests, 1 pass)."""
    section = (LOGS / "python3.13--subtest-skips.txt").read_text()
    assert detect_test_crash(0, section, parse_test_log("django", section)) is None
    faked = section.replace("test_c (__main__.T.test_c) ... ok", "x (m.T) ... ok\n" * 4, 1)
    message = detect_test_crash(0, faked, parse_test_log("django", faked))
    assert message is not None and "tampered" in message
