"""Environment validation: before a participant sees an instance, prove the environment can
run its tests. With ``test_patch`` alone the FAIL_TO_PASS tests must fail; with the gold patch
they must pass. PASS_TO_PASS tests that fail even with the gold patch (network tests and the
like) are recorded and left out of the instance's grading. Each check runs in a throwaway
container from the instance image, never in the participant's.

What each run costs, and why it is needed:

- **Base**: only the FAIL_TO_PASS tests' outcome counts there, so where the runner selects
  tests by name only they run (pytest node ids, sympy's ``-k``;
  :mod:`orchestrator.recipes.selection` decides per runner). When that run does not
  report every FAIL_TO_PASS test, or crashes, the whole test files run in a fresh
  container, exactly as without a selection: a crash at the base and a test the runner
  never reached are judged on the whole run.
- **Gold**: every listed test, the test files the grading runs, in one run (the test files
  run once per run, never once per test group). It is skipped when the base run alone fails
  validation (timed out, unusable output, tests that cannot run at all).
- **Reruns** (``validation_runs`` > 1, flaky detection): only when the first gold run
  validates, and only the listed tests that passed in it. Nothing else can change the
  outcome: an instance that fails validation stays failed whatever a rerun shows, and a
  listed test that failed in the first run is left out (PASS_TO_PASS) or has failed the
  instance (FAIL_TO_PASS) already. What a rerun finds is a test that passed and now does
  not: flaky, left out (PASS_TO_PASS) or failing the instance (FAIL_TO_PASS). The rerun
  selects those tests by name where the runner can and leaving out the others (failing,
  or not listed) spares at least a tenth of the tests that cost time; otherwise it runs
  the same test files as the first run. Either way in the same container, in the order
  the first run ran them. A selected rerun that crashes or does not report every selected
  test is replaced by the whole files (its flaky tests are still sought among those).

- **Layout** (tests run as an unprivileged user): grading closes the repository but for
  the paths the recording runs saw the tests write (:mod:`orchestrator.grading.script`).
  Where a directory's entries changed and the listings show only new directories, they
  cannot tell whether the tests also made a file there and removed it again
  (:func:`~orchestrator.grading.script.unexplained_directories`). Then the tests that
  passed with the gold patch run again as grading runs them; if one fails there, those
  directories are opened too, and the run repeated; a test that still fails only there is
  left out as flaky (a FAIL_TO_PASS one invalidates the instance). Without such a
  directory grading's layout shows the tests nothing the recording did not, and this run
  is skipped.

- **Twins** (setting ``twin_check``): when the gold run validates, the impossible twins of the
  FAIL_TO_PASS tests that the gold patch fails, twice, by the mutated assertion, in a fresh
  container with the gold patch, made beside the base and gold runs (``twins_prepare``, not
  added to the others: it overlaps them) (:mod:`.twins`): ``Validation.twins``, and per test
  without one the reason (``twin_gaps``). Grading runs them
  (:mod:`orchestrator.grading.twins.check`).

Every run goes through phase 7's entry (:func:`orchestrator.grading.grade`) with validation's
options of :class:`~orchestrator.grading.GradingRequest`: the gold patch is applied (and
installed again) as grading applies a patch, the tests run as grading runs them; what is
validation's own is which tests run where and how their outcomes are judged.

``Validation.timings`` gives the seconds of each (``base``, ``base_all`` after a selection
that fell back, ``gold``, ``gold_rerun``, ``layout``, ``twins``). Outcomes are cached per
instance image under ``data_dir/validation``.
"""

from __future__ import annotations

import contextvars
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from orchestrator.atomic import atomic_write_text, read_cached
from orchestrator.context.run_context import RunContext
from orchestrator.grading import GradingRequest, grade
from orchestrator.grading.classify import grade_tests
from orchestrator.grading.evaluation import Evaluation, SuiteRun
from orchestrator.grading.log_parsers import match_expected
from orchestrator.grading.network_tests import network_failures
from orchestrator.grading.twins.model import Twin, TwinSet
from orchestrator.grading.wider import WiderBaseline
from orchestrator.models import CaseGroups, CaseStatus, Instance, Reason
from orchestrator.recipes.recipe import Recipe
from orchestrator.recipes.selection import runner_kind, selected_directives
from orchestrator.sandbox import Sandbox, Snapshot
from orchestrator.validation.run_selection import rerun_names
from orchestrator.validation.twins import RUNS, effective_twins, read_test_files
from orchestrator.validation.wider import wider_baseline
from sandbox_tools.contract import TEST_USER

# crashes at the base that the bug cannot explain (evaluation.run_tests, detect_test_crash):
# the test patch did not apply, the command did not finish, printed nothing or far too much
_SETUP_CRASHES = (
    "the test patch does not apply",
    "the test output lacks the start/end markers",
    "the test command printed nothing",
    "the test output is larger than",
)


class Validation(BaseModel):
    ok: bool
    message: str = ""
    excluded_p2p: list[str] = Field(default_factory=list)  # left out of grading (flaky too)
    # FAIL_TO_PASS tests left out of grading: they need the internet (network_tests.py)
    excluded_f2p: list[str] = Field(default_factory=list)
    flaky: list[str] = Field(default_factory=list)  # outcome differed between gold runs
    # where the tests wrote in the repository, at the base and with the gold patch (failing
    # tests may write what passing ones do not): writable in grading (grading.script)
    writable: list[str] = Field(default_factory=list)
    f2p_passing_at_base: list[str] = Field(default_factory=list)
    duration: float = 0.0
    # seconds per phase: base (base_all when the selection fell back), gold, gold_rerun, layout
    timings: dict[str, float] = Field(default_factory=dict)
    cached: bool = False
    # the effective impossible twins (.twins), a pool of each FAIL_TO_PASS test's, and the
    # test patch's files they change: after the test patch, and at the base (None: created)
    twins: list[Twin] = Field(default_factory=list)
    twin_gaps: dict[str, str] = Field(default_factory=dict)  # test -> why it has no twin
    # whether the twins ran with the FAIL_TO_PASS tests selected by name (else whole files)
    twins_selected: bool = True
    twin_files: dict[str, str] = Field(default_factory=dict)
    twin_base_files: dict[str, str | None] = Field(default_factory=dict)
    # the gold patch's wider runs (setting wider_tests; .wider), made once and kept here
    wider: WiderBaseline | None = None

    def twin_set(self) -> TwinSet:
        """What grading needs of the twins."""
        return TwinSet(
            twins=self.twins, files=self.twin_files, base_files=self.twin_base_files,
            selected=self.twins_selected,
        )  # fmt: skip


def _cache_path(ctx: RunContext, instance_image: str) -> Path:
    # one outcome per way of running the tests: how many gold runs, and as which user (uw3:
    # the writable paths are checked in grading's layout; outcomes recorded before that are
    # not reused), and whether it holds a pool of natural effective twins per test (tw3)
    tag = instance_image.rsplit(":", 1)[-1]
    runs = ctx.settings.validation.validation_runs
    suffix = (
        ("" if runs == 1 else f"-r{runs}")
        + ("-uw3" if ctx.settings.grading.unprivileged_tests else "")
        + ("-tw3" if ctx.settings.grading.twin_check else "")
    )
    return ctx.settings.storage.data_dir / "validation" / f"{tag}{suffix}.json"


def cached_validation(path: Path) -> Validation | None:
    """The validation cached at ``path``; None when there is none or it cannot be read (an
    empty or truncated file: a warning, and the instance is validated again)."""
    return read_cached(path, Validation.model_validate_json, "validation")


def validate(ctx: RunContext, instance: Instance, snapshot: Snapshot, recipe: Recipe) -> Validation:
    """Run the base and gold checks in containers from ``snapshot`` (phases 1-4's, the
    instance image or what stands for it), or return the cached outcome."""
    cache = _cache_path(ctx, snapshot.name)
    cached = cached_validation(cache)
    if cached is not None:
        return _widened(ctx, instance, snapshot, recipe, cached, cache).model_copy(
            update={"cached": True}
        )
    started = time.monotonic()
    runs = _Runs(ctx, instance, snapshot, recipe)
    with ThreadPoolExecutor(1, thread_name_prefix="twin-box") as pool:
        # the twins' container is made beside the base and gold runs
        box = (
            pool.submit(contextvars.copy_context().run, runs.prepare_twins)
            if ctx.settings.grading.twin_check
            else None
        )
        try:
            result = _checked(runs, instance, recipe, box)
        finally:
            if box is not None and box.exception() is None:
                box.result().sandbox.remove()  # a no-op once the twins ran
    result.timings = {name: round(seconds, 1) for name, seconds in runs.timings.items()}
    result.writable = sorted(runs.writable)
    result.duration = time.monotonic() - started
    cache.parent.mkdir(parents=True, exist_ok=True)
    if result.ok:
        atomic_write_text(cache, result.model_dump_json())
    return _widened(ctx, instance, snapshot, recipe, result, cache)


def _widened(
    ctx: RunContext, instance: Instance, snapshot: Snapshot, recipe: Recipe,
    result: Validation, cache: Path,
) -> Validation:  # fmt: skip
    """``result`` with the gold patch's wider runs (setting ``wider_tests``; made once, then
    kept in the cached record)."""
    if not ctx.settings.grading.wider_tests or not result.ok or result.wider is not None:
        return result
    started = time.monotonic()
    try:
        baseline = wider_baseline(ctx, instance, snapshot, recipe, result.writable)
    except Exception as exc:  # noqa: BLE001 - a second opinion never fails the instance
        why = f"the gold baseline could not be made: {exc}"[:500]
        return result.model_copy(update={"wider": WiderBaseline(why_not=why)})  # not kept
    timings = {**result.timings, "wider": round(time.monotonic() - started, 1)}
    result = result.model_copy(update={"wider": baseline, "timings": timings})
    atomic_write_text(cache, result.model_dump_json())
    return result


@dataclass
class _TwinBox:
    """Where the twins run: a container with the gold patch, and the test patch's files at
    the base and after it (``error``: why there is none to run them in)."""

    sandbox: Sandbox
    base_files: dict[str, str | None] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    error: str = ""
    seconds: float = 0.0


def _checked(
    runs: _Runs, instance: Instance, recipe: Recipe, box: Future[_TwinBox] | None
) -> Validation:
    """The base and gold checks, then (``box``) the twins."""
    base = runs.base()
    if _decided_at_base(base):  # no gold run can change the verdict
        return _judge(instance, base, True, "", None, recipe.log_format)
    result = runs.gold(base)
    if result.ok and box is not None:
        try:
            ready = box.result()
        except Exception as exc:  # noqa: BLE001 - no container for the twins: the tests say why
            why = f"no container for the twins: {exc}"
            tests = [t for t in instance.FAIL_TO_PASS if t not in set(result.excluded_f2p)]
            return result.model_copy(update={"twin_gaps": dict.fromkeys(tests, why)})
        result = runs.twins(result, ready)
    return result


def _decided_at_base(base: SuiteRun) -> bool:
    """Whether the base run alone fails validation (:func:`_judge`'s first checks)."""
    return bool(base.timed_out or base.forged or (base.crash or "").startswith(_SETUP_CRASHES))


def _passing(run: SuiteRun, names: list[str]) -> bool:
    """Whether any of ``names`` passed in ``run``."""
    return bool(grade_tests(names, [], run.outcomes).fail_to_pass_passed)


def _answers(run: SuiteRun, names: list[str]) -> bool:
    """Whether ``run`` is final for ``names``: it timed out, or it reports each of them and
    can be graded."""
    if run.timed_out:
        return True
    if run.crash or run.forged:
        return False
    return all(status is not None for status in match_expected(names, run.outcomes).values())


class _Runs:
    """The test runs of one validation, each in a throwaway container, timed by phase."""

    def __init__(
        self, ctx: RunContext, instance: Instance, image: Snapshot, recipe: Recipe
    ) -> None:
        self.ctx, self.instance, self.image, self.recipe = ctx, instance, image, recipe
        self.user = TEST_USER if ctx.settings.grading.unprivileged_tests else None
        self.timeout = ctx.settings.grading.test_timeout
        self.out_dir = ctx.instance_dir(instance)
        self.timings: dict[str, float] = {}
        self.writable: set[str] = set()  # where any run's tests wrote (grading.script)

    def _run(
        self,
        phase: str,
        sandbox: Sandbox,
        directives: list[str] | None,
        output: str,
        record: bool = True,
        test_patch: str | None = None,
    ) -> SuiteRun:
        """One test run of the tree as it is; ``directives``: a selection of tests (None: the
        whole test files). ``record``: every directory open, and where the tests wrote is
        kept; else grading's layout, open only where the runs so far saw them write."""
        graded = self._graded(phase, sandbox, None, directives, output, record, test_patch)
        assert graded.test_run is not None  # the tests run without a patch too
        return graded.test_run

    def _graded(
        self,
        phase: str,
        sandbox: Sandbox,
        patch: str | None,
        directives: list[str] | None,
        output: str | None,
        record: bool = True,
        test_patch: str | None = None,
    ) -> Evaluation:
        """``patch`` (None: none) graded by phase 7's entry with validation's options, and
        then (``output`` given) one run of the tests, its output written to ``output``."""
        started = time.monotonic()
        # the twins' container is prepared beside the runs that add to ``writable``
        writable = tuple(sorted(self.writable)) if output is not None else ()
        request = GradingRequest(
            timeout=self.timeout, fuzz=self.ctx.settings.grading.patch_fuzz,
            test_user=self.user, writable=writable, record=record,
            directives=tuple(directives) if directives is not None else None,
            test_patch=test_patch, audit=False, tests_without_patch=True,
            reinstall_in_place=True, run_tests=output is not None,
        )  # fmt: skip
        graded = grade(sandbox, self.instance, self.recipe, patch, request)
        run = graded.test_run
        if output is not None and run is not None:
            self.timings[phase] = self.timings.get(phase, 0.0) + time.monotonic() - started
            atomic_write_text(self.out_dir / output, run.output, errors="replace")
            self.writable.update(run.writable)
        return graded

    def _sandbox(self, role: str = "validation") -> Sandbox:
        return self.ctx.start_sandbox(self.image, self.instance, role, network=False)

    def base(self) -> SuiteRun:
        """The base run: only the FAIL_TO_PASS tests where the runner can select them
        (:mod:`.run_selection`); the whole test files when it cannot, when the selection
        did not report every FAIL_TO_PASS test, or when one of them passed in it (then in a
        fresh container). A test can depend on the tests before it in its file (sphinx-8721's
        epub test fails at the base only after the HTML build of the test before it), and
        the official harness runs the whole files: a FAIL_TO_PASS test is only taken to pass
        at the base when it does so there."""
        f2p = self.instance.FAIL_TO_PASS
        selected = selected_directives(self.recipe, self.instance, f2p)
        if selected is not None:
            sandbox = self._sandbox()
            try:
                run = self._run("base", sandbox, selected, "validation_base_output.txt")
            finally:
                sandbox.remove()
            if _answers(run, f2p) and not _passing(run, f2p):
                return run
        sandbox = self._sandbox()
        try:
            phase = "base" if selected is None else "base_all"
            return self._run(phase, sandbox, None, "validation_base_output.txt")
        finally:
            sandbox.remove()

    def gold(self, base: SuiteRun) -> Validation:
        """Apply the gold patch and run every listed test; run again (``validation_runs``)
        only when the first run validates: a rerun can then only find flaky tests."""
        instance, log_format = self.instance, self.recipe.log_format
        sandbox = self._sandbox()
        try:
            # a gold patch that adds a dependency is installed again
            first = self._graded(
                "gold", sandbox, instance.patch, None, "validation_gold_output.txt"
            )
            if first.test_run is None:  # not applied, or not installed
                return _judge(instance, base, False, first.message, None, log_format)
            golds = [first.test_run]
            result = _judge(instance, base, True, "", golds[0], log_format)
            names, rerun = self._rerun(golds[0], result)
            if result.ok and self.user and golds[0].unexplained:
                closed = self._layout(sandbox, golds[0], names, rerun)
                if closed:
                    return _with_flaky(instance, result, closed)
            # the eval script restores the test files: it can run again
            for number in range(2, self.ctx.settings.validation.validation_runs + 1):
                if not result.ok or golds[-1].timed_out or golds[-1].crash:
                    break
                output = f"validation_gold_output_{number}.txt"
                run = self._run("gold_rerun", sandbox, rerun, output)
                if rerun is not None and not _answers(run, names or []):
                    rerun = None  # the selection failed; still compared on ``names``
                    run = self._run("gold_rerun", sandbox, rerun, output)
                golds.append(run)
        finally:
            sandbox.remove()
        flaky = flaky_tests([run.outcomes for run in golds], names)
        return _with_flaky(instance, result, flaky) if result.ok and flaky else result

    def prepare_twins(self) -> _TwinBox:
        """A fresh container with the gold patch applied (and installed again where it must
        be), and the test patch's files read there: where the twins run (:meth:`twins`).
        Made beside the base and gold runs."""
        started = time.monotonic()
        instance = self.instance
        sandbox = self._sandbox("validation-twins")  # its own name: made beside the others
        try:
            prepared = self._graded("twins_prepare", sandbox, instance.patch, None, None)
            if prepared.reason != Reason.NONE:
                error = "the gold patch could not be applied again"
                return _TwinBox(sandbox, error=error, seconds=time.monotonic() - started)
            base_files, files = read_test_files(sandbox, instance)
        except BaseException:
            sandbox.remove()
            raise
        return _TwinBox(sandbox, base_files, files, seconds=time.monotonic() - started)

    def twins(self, result: Validation, box: _TwinBox) -> Validation:
        """``result`` with the effective twins of the FAIL_TO_PASS tests it keeps, found in
        ``box`` (:meth:`prepare_twins`; removed here) with the gold patch (:mod:`.twins`)."""
        instance = self.instance
        tests = [t for t in instance.FAIL_TO_PASS if t not in set(result.excluded_f2p)]
        directives = selected_directives(self.recipe, instance, tests)
        started = time.monotonic()
        sandbox = box.sandbox
        try:
            if box.error:
                return result.model_copy(update={"twin_gaps": dict.fromkeys(tests, box.error)})
            selection = [directives]

            def run_twins(test_patch: str) -> list[SuiteRun]:
                runs: list[SuiteRun] = []
                while len(runs) < RUNS:
                    output = f"validation_twins_output_{len(runs) + 1}.txt"
                    run = self._run(
                        "twins", sandbox, selection[0], output, record=False,
                        test_patch=test_patch,
                    )  # fmt: skip
                    if selection[0] is not None and not _answers(run, tests):
                        selection[0] = None  # the selection failed: the whole files from now
                        runs.clear()
                        continue
                    runs.append(run)
                return runs

            twins, gaps = effective_twins(
                instance, tests, box.base_files, box.files, run_twins, self.recipe.log_format
            )
        finally:
            sandbox.remove()
            self.timings["twins"] = time.monotonic() - started
            self.timings["twins_prepare"] = box.seconds
        return result.model_copy(
            update={
                "twins": twins, "twin_gaps": gaps, "twin_files": box.files if twins else {},
                "twin_base_files": box.base_files if twins else {},
                "twins_selected": selection[0] is not None,
            }
        )  # fmt: skip

    def _layout(
        self, sandbox: Sandbox, first: SuiteRun, names: list[str] | None, rerun: list[str] | None
    ) -> list[str]:
        """The listed tests that passed in ``first`` run again in grading's layout; where one
        fails, ``first``'s unexplained directories are opened and the run repeated. Returns
        the tests that still fail only there."""
        listed = names or [*self.instance.FAIL_TO_PASS, *self.instance.PASS_TO_PASS]
        passed = set(grade_tests(listed, [], first.outcomes).fail_to_pass_passed)
        lost: list[str] = []
        for attempt in (1, 2):
            if attempt == 2:
                self.writable.update(first.unexplained)
            run = self._run("layout", sandbox, rerun, "validation_layout_output.txt", record=False)
            kept = set(grade_tests(listed, [], run.outcomes).fail_to_pass_passed)
            lost = sorted(passed - kept)
            if not lost:
                break
        return lost

    def _rerun(
        self, first: SuiteRun, result: Validation
    ) -> tuple[list[str] | None, list[str] | None]:
        """The tests a rerun runs (None: all the first run ran) and the directives that run
        them (None: the whole test files):
        the listed tests that passed in the first run, where leaving out the rest saves time
        and the runner can select them (:func:`.run_selection.rerun_names`)."""
        instance = self.instance
        left_out = set(result.excluded_p2p) | set(result.excluded_f2p)
        listed = [n for n in [*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS] if n not in left_out]
        names = rerun_names(listed, first.outcomes, runner_kind(self.recipe))
        selected = selected_directives(self.recipe, instance, names) if names else None
        return (names, selected) if selected is not None else (None, None)


def _judge(
    instance: Instance,
    base: SuiteRun,
    gold_applied: bool,
    apply_error: str,
    gold: SuiteRun | None,
    log_format: str = "pytest",
) -> Validation:
    """The verdict from the base run and the first gold run (None: the patch did not apply)."""
    if base.timed_out or (gold is not None and gold.timed_out):
        return Validation(ok=False, message="the tests timed out during validation")
    for name, run in (("at the base commit", base), ("with the gold patch", gold)):
        if run is not None and run.forged:
            return Validation(ok=False, message=f"the test output {name} is unusable: {run.forged}")
    if base.crash and (base.crash.startswith(_SETUP_CRASHES) or not gold_applied):
        return Validation(ok=False, message=f"tests do not run at the base commit: {base.crash}")
    if not gold_applied:
        return Validation(ok=False, message=f"the gold patch does not apply: {apply_error}")
    assert gold is not None
    if gold.crash:
        return Validation(ok=False, message=f"tests do not run with the gold patch: {gold.crash}")
    # a run that crashes at the base but not with the gold patch: the bug itself crashed the
    # runner (django's unittest runner printing a failing subtest's parameters, say); the
    # FAIL_TO_PASS tests it did not report count as failing, as in SWE-bench's harness
    with_gold = grade_tests(instance.FAIL_TO_PASS, instance.PASS_TO_PASS, gold.outcomes)
    failed = with_gold.fail_to_pass_failed
    offline = network_failures(log_format, gold.section or "", failed)
    if failed and (offline != failed or not with_gold.fail_to_pass_passed):
        names = ", ".join(failed[:5])
        why = " (they need the internet)" if offline == failed else ""
        return Validation(
            ok=False, message=f"FAIL_TO_PASS tests fail even with the gold patch{why}: {names}"
        )
    at_base = grade_tests(
        instance.FAIL_TO_PASS, instance.PASS_TO_PASS, base.outcomes, excluded_f2p=offline
    )
    if at_base.fail_to_pass_passed and not at_base.fail_to_pass_failed:
        # nothing to fix here: an empty patch would resolve the instance
        names = ", ".join(at_base.fail_to_pass_passed[:5])
        return Validation(
            ok=False,
            message=f"FAIL_TO_PASS tests pass without any fix: {names}",
            f2p_passing_at_base=at_base.fail_to_pass_passed,
        )
    return Validation(
        ok=True,
        message="; ".join(_notes(instance, base, offline, with_gold, at_base)),
        excluded_p2p=with_gold.pass_to_pass_failed,
        excluded_f2p=offline,
        f2p_passing_at_base=at_base.fail_to_pass_passed,
    )


def _notes(
    instance: Instance, base: SuiteRun, offline: list[str], with_gold: CaseGroups,
    at_base: CaseGroups,
) -> list[str]:  # fmt: skip
    """What a valid outcome leaves out or met on the way."""
    notes = []
    f2p = len(instance.FAIL_TO_PASS)
    if offline:
        notes.append(
            f"{len(offline)} of {f2p} FAIL_TO_PASS test(s) need the internet and are left out"
        )
    if with_gold.pass_to_pass_failed:
        notes.append(
            f"{len(with_gold.pass_to_pass_failed)} PASS_TO_PASS test(s) fail with the gold "
            "patch and are left out"
        )
    if base.crash:
        notes.append(f"the tests crash at the base commit (the bug): {base.crash}")
    if at_base.fail_to_pass_passed:
        # SWE-bench saw them fail at the base (often a flaky network call); some others still
        # fail here, so the instance tells a fix from none
        notes.append(
            f"{len(at_base.fail_to_pass_passed)} of {f2p} FAIL_TO_PASS test(s) already pass "
            "at the base"
        )
    return notes


def flaky_tests(runs: list[dict[str, CaseStatus]], names: list[str] | None = None) -> list[str]:
    """Tests whose outcome is not the same in every run (a test missing from a run counts);
    with ``names``, only those (dataset names, matched as grading matches them)."""
    if len(runs) < 2:
        return []
    if names is not None:
        matched = [match_expected(names, run) for run in runs]
        return sorted(name for name in names if len({m[name] for m in matched}) > 1)
    every = sorted(set().union(*runs))
    return [name for name in every if len({run.get(name) for run in runs}) > 1]


def _with_flaky(instance: Instance, result: Validation, flaky: list[str]) -> Validation:
    """A valid outcome with its flaky tests left out; flaky FAIL_TO_PASS tests invalidate it."""
    f2p = [name for name in instance.FAIL_TO_PASS if name in set(flaky)]
    if f2p:
        return Validation(
            ok=False,
            message=f"FAIL_TO_PASS tests are flaky with the gold patch: {', '.join(f2p[:5])}",
            flaky=flaky,
        )
    p2p = [name for name in instance.PASS_TO_PASS if name in set(flaky)]
    excluded = sorted(set(result.excluded_p2p) | set(p2p))
    note = f"{len(excluded)} PASS_TO_PASS test(s) left out ({len(p2p)} flaky)"
    return result.model_copy(update={"excluded_p2p": excluded, "flaky": p2p, "message": note})
