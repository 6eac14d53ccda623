"""FAIL_TO_PASS tests that need the internet: recognised from pytest's failure reports, left
out of validation and grading only when the instance keeps other FAIL_TO_PASS tests."""

from __future__ import annotations

from orchestrator.grading.classify import classify, grade_tests
from orchestrator.grading.evaluation import SuiteRun
from orchestrator.grading.network_tests import network_failures
from orchestrator.models import CaseStatus as TS
from orchestrator.models import Instance, Status
from orchestrator.validation.validation import _judge

HISTORY = "test_requests.py::RequestsTestCase::test_requests_history_is_saved"
POST = "test_requests.py::RequestsTestCase::test_POSTBIN_GET_POST_FILES"
BROKEN = "test_requests.py::test_broken[a-b]"
# the shape of psf__requests-2317's gold run with the network off (abridged)
OUTPUT = f"""\
============================= test session starts ==============================
collected 3 items

test_requests.py F.F                                                     [100%]

=================================== FAILURES ===================================
_______________ RequestsTestCase.test_requests_history_is_saved ________________

self = <requests.packages.urllib3.connectionpool.HTTPSConnectionPool object at 0x7ff9>
E       socket.gaierror: [Errno -3] Temporary failure in name resolution
E           requests.exceptions.ConnectionError: ('Connection aborted.', gaierror(-3, \
'Temporary failure in name resolution'))
_______________________________ test_broken[a-b] _______________________________

    def test_broken():
>       assert 1 == 2
E       AssertionError: the code is wrong
=========================== short test summary info ============================
PASSED {POST}
FAILED {HISTORY} - requests.exceptions.ConnectionError: ...
FAILED {BROKEN} - AssertionError
========================= 2 failed, 1 passed in 0.12s ==========================
"""


def test_a_failure_report_showing_the_network_out_of_reach_is_recognised():
    assert network_failures("pytest", OUTPUT, [HISTORY, BROKEN]) == [HISTORY]
    # ...only in pytest's reports: other runners' output is never read this way
    assert network_failures("sympy", OUTPUT, [HISTORY]) == []
    assert network_failures("pytest", OUTPUT, ["t.py::test_not_in_the_output"]) == []


def test_each_report_is_read_for_its_own_test():
    # test_broken's report follows the network failure's: none of that is taken for it
    assert network_failures("pytest", OUTPUT, [BROKEN]) == []
    unreachable = OUTPUT.replace("the code is wrong", "[Errno 101] Network is unreachable")
    assert network_failures("pytest", unreachable, [BROKEN]) == [BROKEN]


def _instance(f2p: list[str]) -> Instance:
    return Instance(instance_id="psf__requests-2317", repo="psf/requests", base_commit="b",
                    environment_setup_commit="e", FAIL_TO_PASS=f2p,
                    PASS_TO_PASS=["p1"])  # fmt: skip


def test_validation_leaves_out_fail_to_pass_tests_that_need_the_internet():
    instance = _instance([HISTORY, POST])
    base = SuiteRun(outcomes={HISTORY: TS.FAILED, POST: TS.FAILED, "p1": TS.PASSED}, section="x")
    gold = SuiteRun(outcomes={HISTORY: TS.FAILED, POST: TS.PASSED, "p1": TS.PASSED},
                   section=OUTPUT, exit_code=1)  # fmt: skip
    check = _judge(instance, base, True, "", gold, "pytest")
    assert check.ok and check.excluded_f2p == [HISTORY]
    assert "1 of 2 FAIL_TO_PASS test(s) need the internet and are left out" in check.message
    # grading: the participant is judged on the other FAIL_TO_PASS test only
    groups = grade_tests(instance.FAIL_TO_PASS, instance.PASS_TO_PASS, gold.outcomes,
                         check.excluded_p2p, check.excluded_f2p)  # fmt: skip
    assert groups.fail_to_pass_excluded == [HISTORY] and classify(groups) == Status.RESOLVED
    no_op = grade_tests(instance.FAIL_TO_PASS, instance.PASS_TO_PASS, base.outcomes,
                        check.excluded_p2p, check.excluded_f2p)  # fmt: skip
    assert classify(no_op) == Status.NO_OP


def test_an_instance_whose_only_fail_to_pass_tests_need_the_internet_stays_invalid():
    instance = _instance([HISTORY])
    base = SuiteRun(outcomes={HISTORY: TS.FAILED, "p1": TS.PASSED}, section="x")
    gold = SuiteRun(outcomes={HISTORY: TS.FAILED, "p1": TS.PASSED}, section=OUTPUT, exit_code=1)
    check = _judge(instance, base, True, "", gold, "pytest")
    assert not check.ok and "(they need the internet)" in check.message


def test_any_other_gold_failure_keeps_the_instance_invalid():
    instance = _instance([HISTORY, POST, BROKEN])
    base = SuiteRun(outcomes={HISTORY: TS.FAILED, POST: TS.FAILED, BROKEN: TS.FAILED}, section="x")
    gold = SuiteRun(outcomes={HISTORY: TS.FAILED, POST: TS.PASSED, BROKEN: TS.FAILED},
                   section=OUTPUT)  # fmt: skip
    check = _judge(instance, base, True, "", gold, "pytest")
    assert not check.ok and check.excluded_f2p == []
    assert "FAIL_TO_PASS tests fail even with the gold patch: " in check.message
