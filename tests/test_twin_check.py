"""Impossible twins, the pure parts: choosing one per test at random, what counts as proof,
the verdict a passing twin proves wrong, which twins validation keeps, the rounds."""

from __future__ import annotations

import contextlib
import random
from collections import Counter

import pytest

from orchestrator.frontends.report.text import twin_line, twin_rows
from orchestrator.frontends.report.validation import twin_coverage
from orchestrator.frontends.viewer.instance_page import twin_flags
from orchestrator.grading.classify import aggregate
from orchestrator.grading.evaluation import Evaluation, SuiteRun
from orchestrator.grading.twins.check import (
    NO_F2P_PASSED,
    NO_TWIN,
    NOT_VALIDATED,
    TwinRun,
    TwinSet,
    choose,
    judge_twins,
    proofs,
    proven,
    record,
    twin_run,
)
from orchestrator.grading.twins.model import Twin, TwinCandidates
from orchestrator.models import CaseGroups as Groups
from orchestrator.models import CaseStatus as TS
from orchestrator.models import Instance, InstanceResult, Reason, Status, TwinCheck
from orchestrator.recipes.recipe import Recipe
from orchestrator.sandbox import Sandbox
from orchestrator.validation import twins as validation_twins
from orchestrator.validation.sweep import SweepRecord
from orchestrator.validation.twins import at_mutated_line, effective_twins, ineffective

FILE = (
    "from calc import mul\n\n\n"  # 1-3
    "def test_mul_negative():\n"  # 4
    "    assert mul(3, -2) == -6\n"  # 5
    "\n\n"
    "def test_floordiv_negative():\n"  # 8
    "    assert floordiv(-7, 2) == -4\n"  # 9
)
PATH = "tests/test_calc.py"
MUL = f"{PATH}::test_mul_negative"
DIV = f"{PATH}::test_floordiv_negative"


def twin(test: str, old: str, new: str, function: str = "") -> Twin:
    start = FILE.index(old)
    line = FILE.count("\n", 0, start) + 1
    text = FILE.splitlines()[line - 1]
    return Twin(
        test=test, path=PATH, line=line, start=start, end=start + len(old), replacement=new,
        original=text, mutated=text.replace(old, new), kind="int", function=function,
    )  # fmt: skip


MUL_A = twin(MUL, "-6", "-7", "test_mul_negative")
MUL_B = twin(MUL, "-6", "-5", "test_mul_negative")
DIV_A = twin(DIV, "-4", "-3", "test_floordiv_negative")


def instance() -> Instance:
    return Instance(
        instance_id="demo__calc-1", repo="demo/calc", base_commit="0" * 40, patch="",
        environment_setup_commit="0" * 40, test_patch="", FAIL_TO_PASS=[MUL, DIV],
        PASS_TO_PASS=[],
    )  # fmt: skip


def evaluation(passed: list[str], failed: list[str], reason: Reason = Reason.NONE) -> Evaluation:
    groups = Groups(fail_to_pass_passed=passed, fail_to_pass_failed=failed)
    status = Status.RESOLVED if not failed else Status.PARTIALLY_RESOLVED
    return Evaluation(status=status, reason=reason, groups=groups)


# ------------------------------------------------------------------------------- choosing
def test_choose_takes_one_twin_per_passing_test_at_random() -> None:
    rng = random.Random(7)
    seen = Counter(
        tuple(t.mutated for t in choose([MUL_A, MUL_B, DIV_A], [MUL], rng)) for _ in range(200)
    )
    assert set(seen) == {(MUL_A.mutated,), (MUL_B.mutated,)}  # only MUL's, one at a time
    assert min(seen.values()) > 50  # both drawn
    both = choose([MUL_A, DIV_A], [MUL, DIV], rng)
    assert [t.test for t in both] == [MUL, DIV]
    assert choose([MUL_A], [DIV], rng) == []  # a test without a twin gets none


def test_choose_never_puts_two_twins_into_one_function() -> None:
    param = MUL_A.model_copy(update={"test": f"{MUL}[x]"})  # another test of the function
    for seed in range(20):
        chosen = choose([MUL_A, param], [MUL, f"{MUL}[x]"], random.Random(seed))
        assert len(chosen) == 1


# ------------------------------------------------------------------------------- proof
@pytest.mark.parametrize(
    ("status", "proof"),
    [
        (TS.PASSED, True),
        (TS.FAILED, False),
        (TS.ERROR, False),
        (TS.SKIPPED, False),
        (TS.XFAIL, False),
        (None, False),  # missing from the output
    ],
)
def test_only_a_passing_twin_is_proof(status: TS | None, proof: bool) -> None:
    outcomes = {MUL: status} if status is not None else {}
    assert proofs([MUL_A], outcomes) == ([MUL_A] if proof else [])


def test_a_passing_twin_counts_its_test_failing() -> None:
    graded = proven(evaluation([MUL, DIV], []), [record(MUL_A)])
    assert graded.groups is not None
    assert graded.groups.fail_to_pass_passed == [DIV]
    assert graded.groups.fail_to_pass_failed == [MUL]
    assert (graded.status, graded.reason) == (Status.PARTIALLY_RESOLVED, Reason.TWIN_PASSED)
    assert f"{PATH}:5: assert mul(3, -2) == -6 -> assert mul(3, -2) == -7" in graded.message
    every = proven(evaluation([MUL, DIV], []), [record(MUL_A), record(DIV_A)])
    assert (every.status, every.reason) == (Status.NO_OP, Reason.TWIN_PASSED)


def test_tamper_evidence_keeps_its_precedence() -> None:
    tampered = evaluation([MUL], [DIV], Reason.TAMPER_DETECTED)
    assert proven(tampered, [record(MUL_A)]).reason == Reason.TAMPER_DETECTED


# ------------------------------------------------------------------------------- unchecked
def _never_fresh() -> contextlib.AbstractContextManager[Sandbox]:
    raise AssertionError("no twin run expected")


def _never_graded(sandbox: Sandbox, test_patch: str) -> Evaluation:
    raise AssertionError("no twin run expected")


RECIPE = Recipe(
    repo="demo/calc", version="1", python="3.11", install="true", test_cmd="pytest",
    log_format="pytest",
)  # fmt: skip


def twin_graded(outcomes: dict[str, TS], **run: object) -> TwinRun:
    """A twin run whose tests ended with ``outcomes``."""
    tested = SuiteRun(outcomes=outcomes, section="", exit_code=1, **run)
    graded = Evaluation(status=Status.NO_OP, groups=Groups(), test_run=tested)
    return TwinRun(chosen=[MUL_A, DIV_A], evaluation=graded, seconds=3.0)


@pytest.mark.parametrize(
    ("graded", "run", "why"),
    [
        (evaluation([], [MUL, DIV]), twin_graded({MUL: TS.PASSED}), NO_F2P_PASSED),
        (
            evaluation([MUL], [DIV], Reason.TAMPER_DETECTED),
            twin_graded({MUL: TS.PASSED}),
            NO_F2P_PASSED,
        ),
        (evaluation([MUL], [DIV]), TwinRun(why=NOT_VALIDATED), NOT_VALIDATED),
        (evaluation([DIV], [MUL]), TwinRun(chosen=[MUL_A]), NO_TWIN),
        (evaluation([MUL], [DIV]), twin_graded({MUL: TS.PASSED}, timed_out=True), "no outcomes"),
        (evaluation([MUL], [DIV]), twin_graded({MUL: TS.PASSED}, crash="x"), "no outcomes"),
        (evaluation([MUL], [DIV]), TwinRun(chosen=[MUL_A], error="boom"), "no outcomes: boom"),
    ],
)
def test_unchecked_verdicts_say_why(graded: Evaluation, run: TwinRun, why: str) -> None:
    out = judge_twins(graded, run)
    assert out.twin_check is not None
    assert not out.twin_check.checked
    assert why in out.twin_check.why_unchecked
    assert (out.status, out.reason) == (graded.status, graded.reason)


def test_only_the_twins_of_tests_that_passed_count() -> None:
    # DIV failed in the graded run: its twin passing there changes nothing
    out = judge_twins(evaluation([MUL], [DIV]), twin_graded({MUL: TS.FAILED, DIV: TS.PASSED}))
    assert out.twin_check is not None and out.twin_check.checked
    assert [t.test for t in out.twin_check.twins] == [MUL]
    assert out.twin_check.passed == [] and out.twin_check.outcomes == {MUL: "FAILED"}
    assert (out.status, out.reason, out.twin_seconds) == (
        Status.PARTIALLY_RESOLVED,
        Reason.NONE,
        3.0,
    )
    proof = judge_twins(evaluation([MUL, DIV], []), twin_graded({MUL: TS.PASSED, DIV: TS.ERROR}))
    assert (proof.status, proof.reason) == (Status.PARTIALLY_RESOLVED, Reason.TWIN_PASSED)
    assert proof.twin_check is not None and [t.test for t in proof.twin_check.passed] == [MUL]


def test_no_twin_run_without_validation_or_effective_twins() -> None:
    with twin_run(instance(), None, _never_fresh, (), _never_graded) as outcome:
        assert outcome().why == NOT_VALIDATED
    with twin_run(instance(), TwinSet(), _never_fresh, (), _never_graded) as outcome:
        assert outcome().why == NO_TWIN
    only_div = TwinSet(twins=[DIV_A])  # DIV is left out of grading (it needs the internet)
    with twin_run(instance(), only_div, _never_fresh, [DIV], _never_graded) as outcome:
        assert outcome().why == NO_TWIN


# ------------------------------------------------------------------------------- validation
def run(outcomes: dict[str, TS], section: str = "") -> SuiteRun:
    return SuiteRun(outcomes=outcomes, section=section, exit_code=1)


def test_a_twin_is_effective_only_when_it_fails_every_run() -> None:
    failed = run({MUL: TS.FAILED})
    assert ineffective(MUL_A, [failed, failed], "pytest", {PATH: FILE}) is None
    flaky = [failed, run({MUL: TS.PASSED})]
    assert ineffective(MUL_A, flaky, "pytest", {PATH: FILE}) == "the gold patch passes it"
    skipped = [run({MUL: TS.SKIPPED})] * 2
    assert "skipped" in (ineffective(MUL_A, skipped, "pytest", {PATH: FILE}) or "")
    errored = [run({MUL: TS.ERROR})] * 2
    assert "errors" in (ineffective(MUL_A, errored, "pytest", {PATH: FILE}) or "")
    assert ineffective(MUL_A, errored, "django", {PATH: FILE}) is None  # unittest: assertRaises
    assert "not reported" in (ineffective(MUL_A, [run({})] * 2, "pytest", {PATH: FILE}) or "")
    crashed = SuiteRun(outcomes={MUL: TS.FAILED}, section="", crash="no summary")
    assert "no outcomes" in (ineffective(MUL_A, [crashed] * 2, "pytest", {PATH: FILE}) or "")


def test_a_twin_must_fail_by_its_mutated_line() -> None:
    def report(line: int) -> str:
        return (
            "=================================== FAILURES ===================================\n"
            "______________________________ test_mul_negative _______________________________\n"
            "    def test_mul_negative():\n>       assert mul(3, -2) == -7\n"
            "E       assert -6 == -7\n\n"
            f"{PATH}:{line}: AssertionError\n"
            "____________________________ test_floordiv_negative ____________________________\n"
            f"{PATH}:9: AssertionError\n"
        )

    assert at_mutated_line(MUL_A, report(5), {PATH: FILE})
    assert not at_mutated_line(MUL_A, report(40), {PATH: FILE})
    assert at_mutated_line(MUL_A, "no failure report at all", {PATH: FILE})
    bad = [run({MUL: TS.FAILED}, report(40))] * 2
    assert "away from the mutated line" in (ineffective(MUL_A, bad, "pytest", {PATH: FILE}) or "")


def test_rounds_try_the_next_candidate_of_tests_still_without_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # MUL's first candidate is passed by the gold patch, its second fails; DIV's first fails
    candidates = TwinCandidates(by_test={MUL: [MUL_B, MUL_A], DIV: [DIV_A]})
    monkeypatch.setattr(validation_twins, "twin_candidates", lambda *a, **k: candidates)
    monkeypatch.setattr(
        validation_twins, "twin_test_patch",
        lambda _p, _b, twins, _f: ",".join(t.mutated for t in twins),
    )  # fmt: skip
    patches: list[str] = []

    def run_twins(patch: str) -> list[SuiteRun]:
        patches.append(patch)
        outcomes = {MUL: TS.PASSED if MUL_B.mutated in patch else TS.FAILED}
        outcomes[DIV] = TS.FAILED
        return [run(outcomes)] * 2

    found, gaps = effective_twins(instance(), [MUL, DIV], {}, {PATH: FILE}, run_twins, "pytest")
    assert [t.mutated for t in found] == [DIV_A.mutated, MUL_A.mutated]
    assert gaps == {}
    assert patches == [f"{MUL_B.mutated},{DIV_A.mutated}", MUL_A.mutated]  # round 2: MUL only


def test_tests_without_an_effective_twin_keep_their_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    candidates = TwinCandidates(by_test={MUL: [MUL_B]}, missing={DIV: "no expected value"})
    monkeypatch.setattr(validation_twins, "twin_candidates", lambda *a, **k: candidates)
    monkeypatch.setattr(validation_twins, "twin_test_patch", lambda *a: "patch")
    found, gaps = effective_twins(
        instance(), [MUL, DIV], {}, {PATH: FILE},
        lambda _p: [run({MUL: TS.PASSED})] * 2, "pytest",
    )  # fmt: skip
    assert found == []
    assert gaps[DIV] == "no expected value"
    assert gaps[MUL].startswith("the gold patch passes it (tests/test_calc.py:5:")


def test_validation_report_gives_twin_coverage_per_repository() -> None:
    def rec(iid: str, repo: str, twins: int, gaps: dict[str, str]) -> SweepRecord:
        return SweepRecord(
            instance_id=iid, repo=repo, version="1", ok=True, stage="done", twins=twins,
            twin_gaps=gaps,
        )  # fmt: skip

    lines = twin_coverage(
        [
            rec("a-1", "o/a", 2, {}),
            rec("a-2", "o/a", 0, {"t": "the gold patch passes it (x.py:3: == 4)"}),
            rec("b-1", "o/b", 1, {"u": "no expected value"}),
            rec("c-1", "o/c", 0, {}),  # validated before twins: not counted
        ]
    )
    assert "| o/a | 2 | 1 | 50 % | the gold patch passes it (1) |" in lines
    assert "| o/b | 1 | 1 | 100 % | – |" in lines
    assert not any(line.startswith("| o/c") for line in lines)
    assert twin_coverage([rec("c-1", "o/c", 0, {})]) == []


def test_reports_count_and_name_twin_checked_verdicts() -> None:
    proof = record(MUL_A)
    checked = TwinCheck(checked=True, twins=[proof], passed=[proof])
    results = [
        InstanceResult(
            instance_id="a-1", status=Status.NO_OP, reason=Reason.TWIN_PASSED, twin_check=checked
        ),
        InstanceResult(
            instance_id="b-1", status=Status.RESOLVED,
            twin_check=TwinCheck(checked=True, twins=[proof]),
        ),
        InstanceResult(
            instance_id="c-1", status=Status.RESOLVED, twin_check=TwinCheck(why_unchecked=NO_TWIN)
        ),
        InstanceResult(
            instance_id="d-1", status=Status.NO_OP,
            twin_check=TwinCheck(why_unchecked=NO_F2P_PASSED),
        ),
    ]  # fmt: skip
    row = aggregate(results)
    assert (row.twin_checked_count, row.resolved_twin_checked_count, row.twin_passed_count) == (
        2, 1, 1,
    )  # fmt: skip
    line = twin_line(row, results)
    assert line is not None
    assert "2 verdict(s) checked" in line.plain and "1 not checked" in line.plain
    assert NO_TWIN in line.plain and NO_F2P_PASSED not in line.plain
    assert twin_rows(results) == [
        ("a-1", f"{MUL} ({PATH}:5: assert mul(3, -2) == -6 -> assert mul(3, -2) == -7)")
    ]
    assert twin_flags(results[0]) == [f"twin passed (proof): {twin_rows(results)[0][1]}"]
    assert twin_flags(results[2]) == [f"not twin-checked: {NO_TWIN}"]
