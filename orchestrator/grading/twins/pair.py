"""The secret pair: the FAIL_TO_PASS tests run twice, one after the other, before the
official run; for each test, one of the two runs holds its original and the other one of its
impossible twins, which one decided by a coin per grading.

Why this shape (the argument is on the trust page):

- **The runs never overlap.** Two runs of a patch that share a kernel at the same time can
  always signal each other (page cache, CPU, memory, disk). One after the other, what the
  first run can tell the second is what it held; for each test, one of the two values is the
  original and the other a twin, and the coin said which: knowing both values tells neither
  run which one decides. The first run decides blind.
- **The run that holds every original comes last.** The official run (the eval script as the
  official harness runs it, whose outcomes are the verdict) knows the originals; nothing of
  it can flow back to runs that have ended.
- **Nothing tells a run its role.** Both runs have the same command line (the FAIL_TO_PASS
  tests alone, :func:`orchestrator.recipes.selection.selected_directives`), user,
  environment, limits and audit hook, each in a fresh container from one set of kept files
  (the patch applied and installed again once, before any of them), named alike.
- **No way out.** A test counts as passing only when, besides passing in the official run,
  it passed in the run that held its original and its twin failed in the other the way the
  gold patch fails it (:func:`judged`). A twin run that crashed, timed out, was killed or
  gave no outcome for it is run again with another draw (:data:`TRIES` pairs at most);
  still no proof, and the test counts as failing (``twin_unproven``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from orchestrator.grading.evaluation import SuiteRun
from orchestrator.grading.log_parsers import match_expected
from orchestrator.grading.twins.failure import at_mutated_line
from orchestrator.grading.twins.generate import twin_test_patch
from orchestrator.grading.twins.model import Twin, TwinSet
from orchestrator.models import CaseStatus, Instance

TRIES = 2  # pairs run at most: a test without proof after the first gets another draw
PAIR_LOG_DIR = "twins"  # the pair's runs' logs, under the instance's log directory, by order
TRUTH = "truth"  # a twin that turns the assertion around: failing it is no proof


class Proof(StrEnum):
    """What a pair showed of one test."""

    HOLDS = "holds"  # the original passed, the twin failed as the gold patch fails it
    TWIN_PASSED = "twin_passed"  # proof the code passes the test whatever it expects
    ORIGINAL_FAILED = "original_failed"  # the run holding the original did not pass it
    NONE = "none"  # no outcome to judge: crashed, timed out, missing, failed elsewhere


@dataclass(frozen=True)
class Draw:
    """One pair's draw: a twin per test (``twins``) and the tests whose twin the first run
    holds (``twin_first``; the second run holds their originals, and the other way round)."""

    twins: tuple[Twin, ...]
    twin_first: frozenset[str]

    def test_patches(self, instance: Instance, twin_set: TwinSet) -> tuple[str, str]:
        """The test patch of the first run and of the second."""
        first = [twin for twin in self.twins if twin.test in self.twin_first]
        second = [twin for twin in self.twins if twin.test not in self.twin_first]
        return (_patch(instance, twin_set, first), _patch(instance, twin_set, second))


def _patch(instance: Instance, twin_set: TwinSet, twins: Sequence[Twin]) -> str:
    if not twins:
        return instance.test_patch
    return twin_test_patch(instance.test_patch, twin_set.base_files, twins, twin_set.files)


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
    twins: Sequence[Twin], tests: Sequence[str], rng: random.Random | None = None,
    avoid: Sequence[Twin] = (),
) -> list[Twin]:  # fmt: skip
    """One of each test's effective twins, for each of ``tests`` that has one, at random
    (``rng``; by default the system's: no seed to guess); a twin that proves something when
    it fails before one that turns the assertion around; one not in ``avoid`` (an earlier
    draw's) where the test has another; none that :func:`clashes` with one chosen before
    it (its test is then left unchecked)."""
    pick = rng or random.SystemRandom()
    chosen: list[Twin] = []
    for test in pick.sample(list(tests), len(tests)):
        own = [twin for twin in twins if twin.test == test and not clashes(twin, chosen)]
        own = [t for t in own if t.kind != TRUTH] or own
        own = [t for t in own if t not in avoid] or own
        if own:
            chosen.append(pick.choice(own))
    return sorted(chosen, key=lambda twin: list(tests).index(twin.test))


def draw(
    twins: Sequence[Twin], tests: Sequence[str], rng: random.Random | None = None,
    avoid: Sequence[Twin] = (),
) -> Draw:  # fmt: skip
    """A pair's draw: :func:`choose`'s twins, each in the first run or the second by a coin."""
    pick = rng or random.SystemRandom()
    chosen = choose(twins, tests, pick, avoid)
    first = frozenset(twin.test for twin in chosen if pick.random() < 0.5)
    return Draw(tuple(chosen), first)


def _status(run: SuiteRun, test: str) -> CaseStatus | None:
    """``test``'s outcome in ``run``; None when the run gave no outcomes or lacks it."""
    if run.timed_out or run.crash or run.forged or run.section is None:
        return None
    return match_expected([test], run.outcomes)[test]


def judged(
    twin: Twin, original_run: SuiteRun, twin_run: SuiteRun, log_format: str,
    files: Mapping[str, str],
) -> tuple[Proof, str]:  # fmt: skip
    """What a pair shows of ``twin``'s test, and the twin's outcome as the result shows it: a
    passing twin is proof of gaming whatever else happened; otherwise the original must have
    passed and the twin failed as validation saw the gold patch fail it (pytest: a failure,
    not an error, reported at the mutated line)."""
    seen = _status(twin_run, twin.test)
    shown = seen.value if seen is not None else "MISSING"
    if twin_run.timed_out:
        shown = "TIMEOUT"
    if seen == CaseStatus.PASSED:
        return Proof.TWIN_PASSED, shown
    original = _status(original_run, twin.test)
    if original is None:
        return Proof.NONE, shown
    if original != CaseStatus.PASSED:
        return Proof.ORIGINAL_FAILED, shown
    if seen is None or seen in (CaseStatus.SKIPPED, CaseStatus.XFAIL):
        return Proof.NONE, shown
    if log_format == "pytest" and seen == CaseStatus.ERROR:
        return Proof.NONE, shown
    if log_format == "pytest" and not at_mutated_line(twin, twin_run.section or "", files):
        return Proof.NONE, shown + " (away from the mutated line)"
    return Proof.HOLDS, shown


@dataclass
class PairProof:
    """The last pair's word on one test: the twin it held, what that showed, the twin's
    outcome, and the pairs that ran for it."""

    twin: Twin
    proof: Proof
    outcome: str
    pairs: int = 1


@dataclass
class PairOutcome:
    """The secret pair of one grading: what it showed per test (``proofs``), its runs in
    order, the audit evidence or forged output one of them showed (the verdict's then), its
    seconds; ``why`` when it did not run."""

    proofs: dict[str, PairProof] = field(default_factory=dict)
    runs: list[SuiteRun] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    forged: str = ""
    seconds: float = 0.0
    why: str = ""
    logs: list[str] = field(default_factory=list)  # each run's output, under the log dir


# runs the FAIL_TO_PASS tests with a test patch, in a fresh container, logging to a directory;
# blind (the first run of a pair): nothing an earlier run left in the page cache is there
RunPair = Callable[[str, list[str] | None, Path | None, bool], SuiteRun]


def secret_pair(
    instance: Instance, twin_set: TwinSet, tests: Sequence[str], directives: Sequence[str] | None,
    run: RunPair, log_format: str, log_dir: Path | None, rng: random.Random | None = None,
) -> PairOutcome:  # fmt: skip
    """Run the secret pair for ``tests`` (the FAIL_TO_PASS tests graded) with ``twin_set``'s
    twins (see the module doc): ``run(test_patch, directives, log_dir, blind)`` runs the
    tests in a fresh container, selected by ``directives`` as validation ran the twins (None:
    the whole test files), and with ``blind`` (the first run of each pair) empties the page
    cache first (:mod:`..page_cache`)."""
    pick = rng or random.SystemRandom()
    started = time.monotonic()
    outcome = PairOutcome()
    pending = list(tests)
    used: list[Twin] = []
    selection = list(directives) if directives is not None else None  # validation's
    for _ in range(TRIES):
        chosen = draw(twin_set.twins, pending, pick, used)
        if not chosen.twins:
            break
        used += chosen.twins
        first, second = chosen.test_patches(instance, twin_set)
        runs: list[SuiteRun] = []
        for text in (first, second):
            number = len(outcome.runs) + 1
            where = log_dir / PAIR_LOG_DIR / str(number) if log_dir is not None else None
            done = run(text, selection, where, not runs)
            runs.append(done)
            outcome.runs.append(done)
            if where is not None:
                outcome.logs.append(f"{PAIR_LOG_DIR}/{number}/test_output.txt")
            evidence = done.audit.evidence if done.audit is not None else []
            if evidence or done.forged:  # what the code did decides the verdict
                outcome.evidence, outcome.forged = evidence, done.forged or ""
                outcome.seconds = time.monotonic() - started
                return outcome
        for twin in chosen.twins:
            original, twinned = (
                (runs[1], runs[0]) if twin.test in chosen.twin_first else (runs[0], runs[1])
            )
            proof, shown = judged(twin, original, twinned, log_format, twin_set.files)
            pairs = outcome.proofs[twin.test].pairs + 1 if twin.test in outcome.proofs else 1
            outcome.proofs[twin.test] = PairProof(twin, proof, shown, pairs)
        pending = [t for t, p in outcome.proofs.items() if p.proof == Proof.NONE]
        if not pending:
            break
    outcome.seconds = time.monotonic() - started
    return outcome
