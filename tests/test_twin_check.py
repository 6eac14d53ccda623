"""Impossible twins, the pure parts: the secret pair's draw (a twin per test at random, each
in the first run or the second by a coin), what counts as proof, the verdict a passing or a
silent twin proves wrong, which twins validation keeps, the rounds."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.frontends.report.text import gaming_line, twin_line, twin_rows
from orchestrator.frontends.report.validation import twin_coverage
from orchestrator.frontends.viewer.instance_page import twin_flags
from orchestrator.grading.audit import AuditReport
from orchestrator.grading.classify import aggregate
from orchestrator.grading.evaluation import Evaluation, SuiteRun
from orchestrator.grading.twins.check import (
    NO_F2P_PASSED,
    NO_TWIN,
    NOT_VALIDATED,
    TRUTH_ONLY,
    judge_twins,
    proven,
    record,
)
from orchestrator.grading.twins.failure import at_mutated_line
from orchestrator.grading.twins.model import Twin, TwinCandidates, TwinSet
from orchestrator.grading.twins.pair import (
    PairOutcome,
    PairProof,
    Proof,
    choose,
    draw,
    judged,
    secret_pair,
)
from orchestrator.models import CaseGroups as Groups
from orchestrator.models import CaseStatus as TS
from orchestrator.models import Instance, InstanceResult, Reason, Status, TwinCheck
from orchestrator.validation import twins as validation_twins
from orchestrator.validation.sweep import SweepRecord
from orchestrator.validation.twins import effective_twins, ineffective

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


def test_choose_prefers_a_twin_whose_failure_proves_something_and_a_new_one() -> None:
    flip = MUL_A.model_copy(update={"kind": "truth", "replacement": "!="})
    for seed in range(20):
        assert choose([flip, MUL_A], [MUL], random.Random(seed)) == [MUL_A]
        assert choose([MUL_A, MUL_B], [MUL], random.Random(seed), avoid=[MUL_A]) == [MUL_B]
    assert choose([flip], [MUL], random.Random(1)) == [flip]  # the last resort still runs


def test_the_coin_puts_each_twin_in_either_run() -> None:
    firsts = Counter(
        frozenset(draw([MUL_A, DIV_A], [MUL, DIV], random.Random(seed)).twin_first)
        for seed in range(400)
    )
    # each test's twin is in the first run about half the time, independently of the other's
    assert set(firsts) == {frozenset(), frozenset({MUL}), frozenset({DIV}), frozenset({MUL, DIV})}
    assert min(firsts.values()) > 60


# ------------------------------------------------------------------------------- proof
def run(outcomes: dict[str, TS], section: str = "", **more: Any) -> SuiteRun:
    return SuiteRun(outcomes=outcomes, section=section, exit_code=1, **more)


@pytest.mark.parametrize(
    ("original", "twinned", "proof"),
    [
        (run({MUL: TS.PASSED}), run({MUL: TS.FAILED}), Proof.HOLDS),
        (run({MUL: TS.PASSED}), run({MUL: TS.PASSED}), Proof.TWIN_PASSED),
        (run({MUL: TS.FAILED}), run({MUL: TS.PASSED}), Proof.TWIN_PASSED),  # proof whatever
        (run({MUL: TS.FAILED}), run({MUL: TS.FAILED}), Proof.ORIGINAL_FAILED),
        (run({MUL: TS.PASSED}), run({MUL: TS.ERROR}), Proof.NONE),  # pytest: not the assertion
        (run({MUL: TS.PASSED}), run({MUL: TS.SKIPPED}), Proof.NONE),
        (run({MUL: TS.PASSED}), run({}), Proof.NONE),  # missing
        (run({MUL: TS.PASSED}), run({MUL: TS.FAILED}, timed_out=True), Proof.NONE),
        (run({MUL: TS.PASSED}), run({MUL: TS.FAILED}, crash="killed"), Proof.NONE),
        (run({MUL: TS.PASSED}, crash="killed"), run({MUL: TS.FAILED}), Proof.NONE),
    ],
)
def test_what_a_pair_shows_of_a_test(original: SuiteRun, twinned: SuiteRun, proof: Proof) -> None:
    assert judged(MUL_A, original, twinned, "pytest", {PATH: FILE})[0] == proof


def test_an_error_is_a_failure_where_the_runner_tells_none_apart() -> None:
    shown = judged(MUL_A, run({MUL: TS.PASSED}), run({MUL: TS.ERROR}), "django", {})
    assert shown == (Proof.HOLDS, "ERROR")


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


# ------------------------------------------------------------------------------- judging
def pair(**proofs: PairProof) -> PairOutcome:
    """A pair that ran, with these proofs (by test: ``mul``, ``div``)."""
    names = {"mul": MUL, "div": DIV}
    return PairOutcome(
        proofs={names[k]: v for k, v in proofs.items()}, runs=[run({}), run({})], seconds=3.0,
        logs=["twins/1/test_output.txt", "twins/2/test_output.txt"],
    )  # fmt: skip


FLIP = MUL_A.model_copy(update={"kind": "truth"})


@pytest.mark.parametrize(
    ("graded", "outcome", "why"),
    [
        (evaluation([], [MUL, DIV]), pair(mul=PairProof(MUL_A, Proof.TWIN_PASSED, "PASSED")),
         NO_F2P_PASSED),
        (evaluation([MUL], [DIV], Reason.TAMPER_DETECTED),
         pair(mul=PairProof(MUL_A, Proof.TWIN_PASSED, "PASSED")), NO_F2P_PASSED),
        (evaluation([MUL], [DIV]), PairOutcome(why=NOT_VALIDATED), NOT_VALIDATED),
        (evaluation([DIV], [MUL]), pair(mul=PairProof(MUL_A, Proof.HOLDS, "FAILED")), NO_TWIN),
        (evaluation([MUL], [DIV]), pair(mul=PairProof(FLIP, Proof.HOLDS, "FAILED")), TRUTH_ONLY),
    ],
)  # fmt: skip
def test_unchecked_verdicts_say_why(graded: Evaluation, outcome: PairOutcome, why: str) -> None:
    out = judge_twins(graded, outcome)
    assert out.twin_check is not None
    assert not out.twin_check.checked
    assert why in out.twin_check.why_unchecked
    assert (out.status, out.reason) == (graded.status, graded.reason)


def test_only_the_tests_that_passed_are_judged() -> None:
    # DIV failed in the official run: its twin passing in the pair changes nothing
    out = judge_twins(
        evaluation([MUL], [DIV]),
        pair(mul=PairProof(MUL_A, Proof.HOLDS, "FAILED"),
             div=PairProof(DIV_A, Proof.TWIN_PASSED, "PASSED")),
    )  # fmt: skip
    assert out.twin_check is not None and out.twin_check.checked
    assert [t.test for t in out.twin_check.twins] == [MUL]
    assert out.twin_check.passed == [] and out.twin_check.outcomes == {MUL: "FAILED"}
    assert (out.status, out.reason, out.twin_seconds) == (
        Status.PARTIALLY_RESOLVED, Reason.NONE, 3.0,
    )  # fmt: skip
    assert out.logs["twins_2"] == "twins/2/test_output.txt"
    proof = judge_twins(
        evaluation([MUL, DIV], []),
        pair(mul=PairProof(MUL_A, Proof.TWIN_PASSED, "PASSED"),
             div=PairProof(DIV_A, Proof.HOLDS, "ERROR")),
    )  # fmt: skip
    assert (proof.status, proof.reason) == (Status.PARTIALLY_RESOLVED, Reason.TWIN_PASSED)
    assert proof.twin_check is not None and [t.test for t in proof.twin_check.passed] == [MUL]


@pytest.mark.parametrize("proof", [Proof.NONE, Proof.ORIGINAL_FAILED])
def test_a_twin_without_proof_counts_its_test_failing(proof: Proof) -> None:
    out = judge_twins(
        evaluation([MUL, DIV], []),
        pair(mul=PairProof(MUL_A, proof, "MISSING", pairs=2),
             div=PairProof(DIV_A, Proof.HOLDS, "FAILED")),
    )  # fmt: skip
    assert (out.status, out.reason) == (Status.PARTIALLY_RESOLVED, Reason.TWIN_UNPROVEN)
    assert out.groups is not None and out.groups.fail_to_pass_failed == [MUL]
    assert out.twin_check is not None and list(out.twin_check.unproven) == [MUL]
    assert MUL in out.message
    shown = InstanceResult(
        instance_id="demo__calc-1", status=out.status, reason=out.reason,
        twin_check=out.twin_check,
    )  # fmt: skip
    assert twin_flags(shown)[0].startswith(f"no proof from the secret pair: {MUL} (")
    row = aggregate([shown])
    assert (row.twin_unproven_count, row.gaming_proven) == (1, False)


def test_evidence_in_a_pair_run_is_the_verdict() -> None:
    tampered = PairOutcome(runs=[run({})], evidence=["gets a frame at calc/__init__.py:9"])
    out = judge_twins(evaluation([MUL, DIV], []), tampered, instance())
    assert (out.status, out.reason) == (Status.NO_OP, Reason.TAMPER_DETECTED)
    assert "calc/__init__.py:9" in out.message


# ------------------------------------------------------------------------------- the pair
Answer = Callable[[str, int], SuiteRun]


class _Runner:
    """Runs the pair's tests as ``answer(test_patch, number)`` says, recording each run."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.calls: list[tuple[str, list[str] | None, Path | None]] = []
        self.blind: list[bool] = []

    def __call__(
        self, patch: str, selection: list[str] | None, log_dir: Path | None, blind: bool
    ) -> SuiteRun:
        self.calls.append((patch, selection, log_dir))
        self.blind.append(blind)
        return self.answer(patch, len(self.calls))


def _pair_instance() -> Instance:
    return instance().model_copy(update={"test_patch": "ORIGINAL"})


def _patches(monkeypatch: pytest.MonkeyPatch) -> None:
    # a twin test patch names its twins' mutated lines
    monkeypatch.setattr(
        "orchestrator.grading.twins.pair.twin_test_patch",
        lambda _p, _b, twins, _f: ",".join(t.mutated for t in twins),
    )  # fmt: skip


def test_the_pair_puts_each_original_and_its_twin_in_different_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _patches(monkeypatch)

    def honest(patch: str, _: int) -> SuiteRun:  # every twin fails, every original passes
        return run({MUL: TS.FAILED if MUL_A.mutated in patch else TS.PASSED,
                    DIV: TS.FAILED if DIV_A.mutated in patch else TS.PASSED})  # fmt: skip

    for seed in range(10):
        runner = _Runner(honest)
        outcome = secret_pair(
            _pair_instance(), TwinSet(twins=[MUL_A, DIV_A]), [MUL, DIV], ["t"], runner,
            "django", Path("/logs"), random.Random(seed),
        )  # fmt: skip
        assert [c[2] for c in runner.calls] == [Path("/logs/twins/1"), Path("/logs/twins/2")]
        assert [c[1] for c in runner.calls] == [["t"], ["t"]]  # the same selection
        assert runner.blind == [True, False]
        first, second = runner.calls[0][0], runner.calls[1][0]
        for twin in (MUL_A, DIV_A):  # each twin in exactly one of the runs
            assert (twin.mutated in first) != (twin.mutated in second)
        assert {p.proof for p in outcome.proofs.values()} == {Proof.HOLDS}


def test_a_twin_that_gives_no_outcome_is_drawn_again_once(monkeypatch: pytest.MonkeyPatch) -> None:
    _patches(monkeypatch)

    def dodging(patch: str, _: int) -> SuiteRun:  # crashes wherever a twin is in place
        if MUL_A.mutated in patch or MUL_B.mutated in patch:
            return run({}, crash="killed")
        return run({MUL: TS.PASSED})

    runner = _Runner(dodging)
    outcome = secret_pair(
        _pair_instance(), TwinSet(twins=[MUL_A, MUL_B]), [MUL], None, runner, "django", None,
        random.Random(3),
    )  # fmt: skip
    assert len(runner.calls) == 4  # two pairs, and no more
    assert runner.blind == [True, False, True, False]  # each pair's first run hears nothing
    assert outcome.proofs[MUL].proof == Proof.NONE and outcome.proofs[MUL].pairs == 2
    drawn = {t.mutated for t in (MUL_A, MUL_B) for c in runner.calls if t.mutated in c[0]}
    assert drawn == {MUL_A.mutated, MUL_B.mutated}  # the second pair drew the other twin
    out = judge_twins(evaluation([MUL], [DIV]), outcome)
    assert out.reason == Reason.TWIN_UNPROVEN


def test_code_that_cheats_blind_wins_only_when_every_coin_falls_its_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cheating code that knows what the first run held (a channel forward in time) and passes
    in exactly one run of the pair is caught whenever a coin put a twin there."""
    _patches(monkeypatch)
    wins = 0

    def cheat(patch: str, number: int) -> SuiteRun:  # every test passes in the first run only
        outcome = TS.PASSED if number == 1 else TS.FAILED
        return run({MUL: outcome, DIV: outcome})

    for seed in range(200):
        outcome = secret_pair(
            _pair_instance(), TwinSet(twins=[MUL_A, DIV_A]), [MUL, DIV], None, _Runner(cheat),
            "django", None, random.Random(seed),
        )  # fmt: skip
        out = judge_twins(evaluation([MUL, DIV], []), outcome)
        wins += out.status == Status.RESOLVED and out.reason == Reason.NONE
    assert 20 < wins < 80  # a quarter: both coins must fall its way


def test_evidence_in_the_first_run_ends_the_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    _patches(monkeypatch)
    seen = AuditReport(evidence=["opens a hidden test file at calc/__init__.py:3"])
    runner = _Runner(lambda patch, n: run({MUL: TS.PASSED}, audit=seen))
    outcome = secret_pair(
        _pair_instance(), TwinSet(twins=[MUL_A]), [MUL], None, runner, "pytest", None
    )
    assert len(runner.calls) == 1 and outcome.evidence == seen.evidence


def test_no_pair_without_effective_twins_for_the_tests_graded() -> None:
    assert choose([], [MUL, DIV]) == []
    assert choose([DIV_A], [MUL]) == []  # DIV is left out of grading (it needs the internet)


# ------------------------------------------------------------------------------- validation
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
    assert row.gaming_proven and row.twin_passed_instances == ["a-1"]
    gaming = gaming_line(row)
    assert gaming is not None and gaming.plain.startswith("GAMING PROVEN") and "a-1" in gaming.plain
    line = twin_line(row, results)
    assert line is not None
    assert "2 verdict(s) checked" in line.plain and "1 not checked" in line.plain
    assert NO_TWIN in line.plain and NO_F2P_PASSED not in line.plain
    assert twin_rows(results) == [
        ("a-1", f"{MUL} ({PATH}:5: assert mul(3, -2) == -6 -> assert mul(3, -2) == -7)")
    ]
    assert twin_flags(results[0]) == [f"twin passed (proof): {twin_rows(results)[0][1]}"]
    assert twin_flags(results[2]) == [f"not twin-checked: {NO_TWIN}"]
