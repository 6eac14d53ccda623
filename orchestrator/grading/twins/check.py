"""Impossible twins at grading: a verdict that some FAIL_TO_PASS test passed, checked.

Beside the graded run, the patch is graded again in a **fresh container** from the same
snapshot the graded run's container came from, started at the same time: the same patch
applied the same way, the same reinstall, the same eval script (same paths, test names,
command line, user, environment, limits, writable paths and audit hook); only the test
patch differs: in it each FAIL_TO_PASS test that validation found an effective twin for
has one twin in its place, chosen at random per grading (:func:`choose`). The two runs go
at once, so the code under test cannot tell them apart by the clock or by its container's
age; nothing of one container reaches the other (:func:`twin_run`). Whenever a FAIL_TO_PASS
test passed in the graded run (and nothing else already made every test count as failing),
its twin's outcome is judged (:func:`judge_twins`).

A twin that **passes** is proof: no correct implementation passes it (validation saw the gold
patch fail it, twice, by the mutated assertion), so the code under test passes tests
whatever they expect; its FAIL_TO_PASS test counts as failing and the reason is
``twin_passed`` (:func:`proven`). A twin that failed, errored, was skipped or is missing
from the output proves nothing. Evidence of tampering seen by the audit hook in the twin run
keeps its precedence (``tamper_detected``).

The check is recorded on the result (:class:`orchestrator.models.TwinCheck`): checked or
not, and why not (validation off, no FAIL_TO_PASS test passed, no effective twin, the twin
run gave no outcomes).
"""

from __future__ import annotations

import contextlib
import contextvars
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.grading.classify import classify
from orchestrator.grading.evaluation import Evaluation
from orchestrator.grading.log_parsers import match_expected
from orchestrator.grading.twins.generate import twin_test_patch
from orchestrator.grading.twins.model import Twin, TwinSet
from orchestrator.models import CaseStatus, Instance, Reason, TwinCheck, TwinRecord
from orchestrator.sandbox import Sandbox

# a fresh grading sandbox from the snapshot the graded run's came from, removed on exit
Fresh = Callable[[], AbstractContextManager[Sandbox]]

NOT_VALIDATED = "validation is off: no effective twin is known for the instance"
TWINS_OFF = "twin checks are off (setting twin_check)"
NO_F2P_PASSED = "no FAIL_TO_PASS test passed"
NO_TWIN = "validation found no effective twin for the FAIL_TO_PASS tests that passed"
NO_FRESH = "no fresh container could be had for the twin run"
TWIN_LOG_DIR = "twins"  # the twin run's logs, under the instance's log directory


def clashes(twin: Twin, chosen: Sequence[Twin]) -> bool:
    """Whether ``twin`` cannot go into one test patch with ``chosen``: it changes the same
    test function (the tests of one parametrized function) or an overlapping segment."""
    return any(
        other.path == twin.path
        and (
            (other.function and other.function == twin.function)
            or (other.start < twin.end and twin.start < other.end)
        )
        for other in chosen
    )


def choose(
    twins: Sequence[Twin], tests: Sequence[str], rng: random.Random | None = None
) -> list[Twin]:
    """One of each test's effective twins, for each of ``tests`` that has one, at random
    (``rng``; by default the system's: no seed to guess); none that :func:`clashes` with
    one chosen before it (its test is then left unchecked)."""
    pick = rng or random.SystemRandom()
    chosen: list[Twin] = []
    for test in pick.sample(list(tests), len(tests)):
        own = [twin for twin in twins if twin.test == test and not clashes(twin, chosen)]
        if own:
            chosen.append(pick.choice(own))
    return sorted(chosen, key=lambda twin: list(tests).index(twin.test))


def record(twin: Twin) -> TwinRecord:
    """``twin`` as a result shows it."""
    return TwinRecord(
        test=twin.test, path=twin.path, line=twin.line, original=twin.original.strip(),
        mutated=twin.mutated.strip(), kind=twin.kind,
    )  # fmt: skip


def twin_outcomes(twins: Sequence[Twin], outcomes: Mapping[str, CaseStatus]) -> dict[str, str]:
    """Each twin test's outcome in the twin run (``MISSING`` when the output lacks it)."""
    matched = match_expected([twin.test for twin in twins], dict(outcomes))
    return {name: status.value if status else "MISSING" for name, status in matched.items()}


def proofs(twins: Sequence[Twin], outcomes: Mapping[str, CaseStatus]) -> list[Twin]:
    """The twins that passed: proof. Failed, errored, skipped, an expected failure or
    missing: no proof."""
    seen = twin_outcomes(twins, outcomes)
    return [twin for twin in twins if seen[twin.test] == CaseStatus.PASSED.value]


def describe(twin: TwinRecord) -> str:
    """``test (path:line: original -> mutated)``."""
    return f"{twin.test} ({twin.path}:{twin.line}: {twin.original} -> {twin.mutated})"


def proven(evaluation: Evaluation, passed: Sequence[TwinRecord]) -> Evaluation:
    """``evaluation`` with the FAIL_TO_PASS tests of ``passed`` twins counted as failing,
    its status recomputed and reason ``twin_passed`` (evidence of tampering keeps its
    ``tamper_detected``)."""
    assert evaluation.groups is not None
    proven_tests = {twin.test for twin in passed}
    groups = evaluation.groups.model_copy(deep=True)
    groups.fail_to_pass_passed = [t for t in groups.fail_to_pass_passed if t not in proven_tests]
    groups.fail_to_pass_failed = [
        *groups.fail_to_pass_failed,
        *(t for t in evaluation.groups.fail_to_pass_passed if t in proven_tests),
    ]
    message = "a FAIL_TO_PASS test's impossible twin passed, so the code under test passes "
    message += "whatever the test expects; its test counts as failing: "
    message += "; ".join(describe(twin) for twin in passed)
    reason = Reason.TWIN_PASSED
    if evaluation.reason == Reason.TAMPER_DETECTED:
        reason, message = evaluation.reason, f"{evaluation.message}; and {message}"
    return evaluation.model_copy(
        update={"groups": groups, "status": classify(groups), "reason": reason,
                "message": message, "suspicious": []}
    )  # fmt: skip


@dataclass
class TwinRun:
    """The twin run of one grading: the twins chosen (``chosen``) and its evaluation, its
    seconds, or why none ran (``why``) or what broke it (``error``)."""

    chosen: list[Twin] = field(default_factory=list)
    evaluation: Evaluation | None = None
    seconds: float = 0.0
    why: str = ""
    error: str = ""


@contextlib.contextmanager
def twin_run(
    instance: Instance, twins: TwinSet | None, fresh: Fresh | None, excluded_f2p: Iterable[str],
    grade_with: Callable[[Sandbox, str], Evaluation],
) -> Iterator[Callable[[], TwinRun]]:  # fmt: skip
    """The twin run, begun now, beside the graded run: yields what waits for its outcome.

    It grades the patch in a ``fresh`` container with one effective twin, chosen at random,
    in place of each FAIL_TO_PASS test not in ``excluded_f2p`` that has one (``twins``:
    validation's, None when validation is off): ``grade_with(sandbox, test_patch)`` grades
    it there as the graded run is graded, with the twins' test patch. Both runs start together from
    containers started together, so neither the clock nor the containers' age tells the
    code under test which run it is in; which tests passed in the graded run decides which
    twins count (:func:`judge_twins`). Leaving the context waits for the twin run."""
    excluded = set(excluded_f2p)
    tests = [name for name in instance.FAIL_TO_PASS if name not in excluded]
    if twins is None:
        yield lambda: TwinRun(why=NOT_VALIDATED)
        return
    chosen = choose(twins.twins, tests)
    if not chosen or fresh is None:
        yield lambda: TwinRun(why=NO_TWIN if not chosen else NO_FRESH)
        return
    text = twin_test_patch(instance.test_patch, twins.base_files, chosen, twins.files)

    def run() -> TwinRun:
        started = time.monotonic()
        with fresh() as sandbox:
            graded = grade_with(sandbox, text)
        return TwinRun(chosen=chosen, evaluation=graded, seconds=time.monotonic() - started)

    with ThreadPoolExecutor(1, thread_name_prefix="twin-run") as pool:
        future = pool.submit(contextvars.copy_context().run, run)

        def outcome() -> TwinRun:
            try:
                return future.result()
            except Exception as exc:  # noqa: BLE001 - a broken twin run proves nothing
                return TwinRun(chosen=chosen, error=f"{type(exc).__name__}: {exc}")

        yield outcome


def judge_twins(evaluation: Evaluation, run: TwinRun, log_dir: Path | None = None) -> Evaluation:
    """``evaluation`` (the graded run's) checked with ``run``: its ``twin_check`` set and,
    where a twin of a FAIL_TO_PASS test that passed there passed too, its verdict proven
    wrong (see the module doc)."""
    groups = evaluation.groups
    passing = groups.fail_to_pass_passed if groups is not None else []
    if run.evaluation is not None or run.error:
        evaluation = evaluation.model_copy(update={"twin_seconds": run.seconds})
        if log_dir is not None and run.evaluation is not None:
            evaluation.logs["twins"] = f"{TWIN_LOG_DIR}/test_output.txt"
    if evaluation.reason != Reason.NONE or not passing:
        return _with_check(evaluation, TwinCheck(why_unchecked=NO_F2P_PASSED))
    if run.why in (NOT_VALIDATED, NO_FRESH):
        return _with_check(evaluation, TwinCheck(why_unchecked=run.why, untwinned=passing))
    used = [twin for twin in run.chosen if twin.test in set(passing)]
    untwinned = sorted(set(passing) - {twin.test for twin in used})
    if not used:
        return _with_check(evaluation, TwinCheck(why_unchecked=NO_TWIN, untwinned=untwinned))
    records = [record(twin) for twin in used]
    graded = run.evaluation
    if graded is not None and graded.tamper_evidence:  # what the code did there is evidence too
        check = TwinCheck(checked=True, twins=records, untwinned=untwinned)
        return graded.model_copy(
            update={"twin_check": check, "twin_seconds": evaluation.twin_seconds,
                    "twin_wait": evaluation.twin_wait, "logs": evaluation.logs,
                    "flaky_tests": evaluation.flaky_tests}
        )  # fmt: skip
    tested = graded.test_run if graded is not None else None
    if graded is None or tested is None or graded.groups is None or tested.timed_out:
        why = run.error or (graded.message or graded.status.value if graded else "no run")
        check = TwinCheck(why_unchecked=f"the twin run gave no outcomes: {why}", untwinned=passing)
        return _with_check(evaluation, check)
    if tested.crash or tested.forged:
        why = f"the twin run gave no outcomes: {tested.crash or tested.forged}"
        return _with_check(evaluation, TwinCheck(why_unchecked=why, untwinned=passing))
    passed = [record(twin) for twin in proofs(used, tested.outcomes)]
    check = TwinCheck(
        checked=True, twins=records, passed=passed, untwinned=untwinned,
        outcomes=twin_outcomes(used, tested.outcomes),
    )  # fmt: skip
    return _with_check(proven(evaluation, passed) if passed else evaluation, check)


def _with_check(evaluation: Evaluation, check: TwinCheck) -> Evaluation:
    return evaluation.model_copy(update={"twin_check": check})
