"""Impossible twins at grading: a verdict that some FAIL_TO_PASS test passed, checked.

Before the official run, the secret pair (:mod:`.pair`) ran the FAIL_TO_PASS tests twice,
one run after the other, each test's original in one run and one of its effective twins,
drawn at random per grading, in the other. Whenever a FAIL_TO_PASS test passed in the
official run (and nothing else already made every test count as failing), the pair's word
on it is judged (:func:`judge_twins`):

- its twin **passed**: proof (no correct implementation passes it: validation saw the gold
  patch fail it, twice, by the mutated assertion); the test counts as failing, reason
  ``twin_passed`` (:func:`proven`);
- its original passed and its twin failed as the gold patch fails it: the verdict stands,
  checked (a twin that turns the assertion around proves nothing by failing: cheating code
  can fail it on purpose; such a test is said unchecked);
- anything else (the run holding its original did not pass it, or its twin gave no outcome
  in two pairs): the test counts as failing, reason ``twin_unproven``.

Evidence of tampering or a forged output in a pair's run is the verdict's, as in the official
run (``tamper_detected``, ``test_output_forged``). The check is recorded on the result
(:class:`orchestrator.models.TwinCheck`): checked or not, and why not (validation off, no
FAIL_TO_PASS test passed, no effective twin).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from orchestrator.grading.classify import classify, grade_tests
from orchestrator.grading.evaluation import Evaluation
from orchestrator.grading.twins.model import Twin
from orchestrator.grading.twins.pair import TRUTH, PairOutcome, Proof
from orchestrator.models import Instance, Reason, TwinCheck, TwinRecord

NOT_VALIDATED = "validation is off: no effective twin is known for the instance"
TWINS_OFF = "twin checks are off (setting twin_check)"
NO_F2P_PASSED = "no FAIL_TO_PASS test passed"
NO_TWIN = "validation found no effective twin for the FAIL_TO_PASS tests that passed"


def record(twin: Twin) -> TwinRecord:
    """``twin`` as a result shows it."""
    return TwinRecord(
        test=twin.test, path=twin.path, line=twin.line, original=twin.original.strip(),
        mutated=twin.mutated.strip(), kind=twin.kind,
    )  # fmt: skip


def describe(twin: TwinRecord) -> str:
    """``test (path:line: original -> mutated)``."""
    return f"{twin.test} ({twin.path}:{twin.line}: {twin.original} -> {twin.mutated})"


def proven(
    evaluation: Evaluation, passed: Sequence[TwinRecord], unproven: Mapping[str, str] = {}
) -> Evaluation:
    """``evaluation`` with the FAIL_TO_PASS tests of ``passed`` twins, and the ``unproven``
    ones, counted as failing, its status recomputed and reason ``twin_passed`` (a twin
    passed) or ``twin_unproven`` (evidence of tampering keeps its ``tamper_detected``)."""
    assert evaluation.groups is not None
    failing = {twin.test for twin in passed} | set(unproven)
    groups = evaluation.groups.model_copy(deep=True)
    groups.fail_to_pass_passed = [t for t in groups.fail_to_pass_passed if t not in failing]
    groups.fail_to_pass_failed = [
        *groups.fail_to_pass_failed,
        *(t for t in evaluation.groups.fail_to_pass_passed if t in failing),
    ]
    parts = []
    if passed:
        text = "a FAIL_TO_PASS test's impossible twin passed, so the code under test passes "
        text += "whatever the test expects; its test counts as failing: "
        parts.append(text + "; ".join(describe(twin) for twin in passed))
    if unproven:
        text = "a FAIL_TO_PASS test that passed has no proof from the secret pair, so it counts "
        text += "as failing: "
        parts.append(text + "; ".join(f"{test} ({why})" for test, why in unproven.items()))
    reason = Reason.TWIN_PASSED if passed else Reason.TWIN_UNPROVEN
    message = "; and ".join(parts)
    if evaluation.reason == Reason.TAMPER_DETECTED:
        reason, message = evaluation.reason, f"{evaluation.message}; and {message}"
    return evaluation.model_copy(
        update={"groups": groups, "status": classify(groups), "reason": reason,
                "message": message, "suspicious": []}
    )  # fmt: skip


def judge_twins(
    evaluation: Evaluation, pair: PairOutcome, instance: Instance | None = None
) -> Evaluation:
    """``evaluation`` (the official run's) checked with the secret ``pair``: its
    ``twin_check`` set and its verdict judged (see the module doc)."""
    if pair.runs:
        logs = {**evaluation.logs, **{f"twins_{n}": log for n, log in enumerate(pair.logs, 1)}}
        if pair.logs:
            logs["twins"] = pair.logs[0]
        evaluation = evaluation.model_copy(update={"twin_seconds": pair.seconds, "logs": logs})
    if (pair.evidence or pair.forged) and evaluation.reason != Reason.TAMPER_DETECTED:
        assert instance is not None, "a pair that ran judges with its instance"
        return _untrusted_pair(evaluation, pair, instance)
    groups = evaluation.groups
    passing = groups.fail_to_pass_passed if groups is not None else []
    if evaluation.reason != Reason.NONE or not passing:
        return _with_check(evaluation, TwinCheck(why_unchecked=NO_F2P_PASSED))
    if pair.why:
        return _with_check(evaluation, TwinCheck(why_unchecked=pair.why, untwinned=passing))
    judged = {t: pair.proofs[t] for t in passing if t in pair.proofs}
    gamed = [p.twin for p in judged.values() if p.proof == Proof.TWIN_PASSED]
    unproven = {
        t: _UNPROVEN[p.proof].format(outcome=p.outcome, pairs=p.pairs)
        for t, p in judged.items() if p.proof in _UNPROVEN
    }  # fmt: skip
    flipped = [t for t, p in judged.items() if p.proof == Proof.HOLDS and p.twin.kind == TRUTH]
    untwinned = sorted(set(passing) - set(judged) | set(flipped))
    if not gamed and not unproven and len(flipped) == len(judged):
        why = NO_TWIN if not flipped else TRUTH_ONLY
        return _with_check(evaluation, TwinCheck(why_unchecked=why, untwinned=untwinned))
    check = TwinCheck(
        checked=True, twins=[record(p.twin) for p in judged.values()],
        passed=[record(twin) for twin in gamed], untwinned=untwinned,
        outcomes={p.twin.test: p.outcome for p in judged.values()}, unproven=unproven,
        pairs=max(p.pairs for p in judged.values()),
    )  # fmt: skip
    if gamed or unproven:
        evaluation = proven(evaluation, check.passed, unproven)
    return _with_check(evaluation, check)


_UNPROVEN = {
    Proof.ORIGINAL_FAILED: "the secret run holding its original did not pass it",
    Proof.NONE: "its twin gave no proof in {pairs} pair(s) (last outcome: {outcome})",
}
TRUTH_ONLY = "the passing tests' only twins turn the assertion around: failing one proves nothing"


def _untrusted_pair(evaluation: Evaluation, pair: PairOutcome, instance: Instance) -> Evaluation:
    """Evidence or a forged output in a run of the pair: every test counts as failing."""
    groups = grade_tests(instance.FAIL_TO_PASS, instance.PASS_TO_PASS, {})
    if pair.evidence:
        reason = Reason.TAMPER_DETECTED
        message = "the patch's code tampered with a run of the secret pair, every test counts "
        message += "as failing: " + "; ".join(pair.evidence[:5])
    else:
        reason = Reason.TEST_OUTPUT_FORGED
        message = "a run of the secret pair printed a forged test output, every test counts "
        message += f"as failing: {pair.forged}"
    return evaluation.model_copy(
        update={"groups": groups, "status": classify(groups), "reason": reason,
                "message": message, "tamper_evidence": pair.evidence, "suspicious": [],
                "twin_check": TwinCheck(why_unchecked=NO_F2P_PASSED)}
    )  # fmt: skip


def _with_check(evaluation: Evaluation, check: TwinCheck) -> Evaluation:
    return evaluation.model_copy(update={"twin_check": check})
