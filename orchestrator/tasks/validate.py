"""Candidates validated into tasks (``swe-green tasks validate``).

Each candidate (:mod:`.collect`) gets its environment built as every instance does
(phases 1-4, the set-up strategy the settings choose: ``infer`` for a repository without a
recipe), then its tests found: the test files of its test patch run at the base with the
test patch (before) and with the gold patch too (after), each in a fresh container, through
phase 7's entry as validation runs them. ``FAIL_TO_PASS``: the tests that fail before and
pass after; ``PASS_TO_PASS``: those that pass both times. The candidate with those lists is
then validated by the validation sweep's own work on one instance
(:func:`~orchestrator.validation.sweep.sweep_instance`): the FAIL_TO_PASS tests fail at the
base and pass with the gold patch, the gold tests run ``validation_runs`` times (flaky
tests left out; a flaky FAIL_TO_PASS test rejects the task), and the effective impossible
twins recorded. A task is kept with at least one FAIL_TO_PASS test; a candidate that is not
keeps its reason. One record per candidate in the run directory: a resumed run skips those
done (asked to, it validates the rejected ones again)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

from orchestrator.atomic import atomic_write_text, read_cached
from orchestrator.context.run_context import RunContext
from orchestrator.environments.build import prepare_instance
from orchestrator.environments.prepared import recipe_of
from orchestrator.grading import GradingRequest, grade
from orchestrator.grading.evaluation import SuiteRun
from orchestrator.models import CaseStatus, Instance
from orchestrator.recipes.recipe import Recipe
from orchestrator.run.runner import LocalRunner
from orchestrator.run.scheduler import drive, interruptible
from orchestrator.sandbox import Snapshot
from orchestrator.setup.plan import SetupFailed
from orchestrator.tasks.collect import Candidate
from orchestrator.validation.sweep import INFRASTRUCTURE, root_cause, sweep_instance

RECORD = "task.json"
_PASSING = (CaseStatus.PASSED, CaseStatus.XFAIL)


class TaskRecord(BaseModel):
    """What became of one candidate."""

    instance_id: str
    repo: str
    version: str
    kept: bool = False
    stage: Literal["setup", "discovery", "validation", "done"] = "setup"
    reason: str = ""  # why it was not kept ("" when kept)
    cause: str = ""  # the root-cause category of an environment failure
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    flaky: list[str] = Field(default_factory=list)
    twins: int = 0
    env_cache_hit: bool = False
    setup_strategy: str = ""
    seconds: float = 0.0
    timings: dict[str, float] = Field(default_factory=dict)


def found_tests(
    before: dict[str, CaseStatus], after: dict[str, CaseStatus]
) -> tuple[list[str], list[str]]:
    """FAIL_TO_PASS (not passing before, passing after) and PASS_TO_PASS (passing both
    times), in the order the after run reported them. A test the before run did not report
    counts as failing there (a test the test patch adds for the fix), unless the before run
    reported the same test function with other parameters: its name changes from run to run
    (a parameter made of the time, a random value, an address), and it is left out."""
    reported = {_function(name) for name in before}
    passed = [name for name, status in after.items() if status in _PASSING]
    f2p = [
        n for n in passed
        if (n in before and before[n] not in _PASSING)
        or (n not in before and not ("[" in n and _function(n) in reported))
    ]  # fmt: skip
    p2p = [n for n in passed if before.get(n) in _PASSING]
    return f2p, p2p


def _function(name: str) -> str:
    """A test's name without its parameters (``test_x[a-1]`` -> ``test_x``)."""
    return name.split("[", 1)[0]


def _run(
    ctx: RunContext, instance: Instance, snapshot: Snapshot, recipe: Recipe, patch: str | None
) -> SuiteRun | str:
    """The test patch's files run at the base (``patch`` None) or with ``patch``, in a
    fresh container; the run, or why there is none."""
    request = GradingRequest(
        timeout=ctx.settings.grading.test_timeout, fuzz=ctx.settings.grading.patch_fuzz,
        audit=False, tests_without_patch=True, reinstall_in_place=True, run_tests=True,
    )  # fmt: skip
    sandbox = ctx.start_sandbox(snapshot, instance, "tasks-discovery", network=False)
    try:
        graded = grade(sandbox, instance, recipe, patch, request)
    finally:
        sandbox.remove()
    if graded.test_run is None:
        return graded.message or "the gold patch does not apply"
    return graded.test_run


def discover(ctx: RunContext, candidate: Candidate, record: TaskRecord) -> Instance | None:
    """The candidate with its FAIL_TO_PASS and PASS_TO_PASS tests, or None (``record``
    says why)."""
    started = time.monotonic()
    try:
        prepared = prepare_instance(ctx, candidate)
    except SetupFailed as exc:
        record.reason, record.cause = f"environment: {exc}", root_cause(str(exc))
        return None
    record.timings.update(prepared.timings)
    record.setup_strategy = prepared.plan.strategy
    record.stage = "discovery"
    try:
        recipe = recipe_of(prepared)
        before = _run(ctx, candidate, prepared.snapshot, recipe, None)
        after = _run(ctx, candidate, prepared.snapshot, recipe, candidate.patch)
    finally:
        prepared.discard()
    record.timings["discovery"] = round(
        time.monotonic() - started - sum(prepared.timings.values()), 1
    )
    for name, run in (("before", before), ("after", after)):
        if isinstance(run, str):
            record.reason = f"no test run {name} the fix: {run}"
            return None
        if run.timed_out:
            record.reason = f"the tests time out {name} the fix"
            return None
        if run.forged:
            record.reason = f"the test output {name} the fix is unusable: {run.forged}"
            return None
    assert isinstance(before, SuiteRun) and isinstance(after, SuiteRun)
    if after.crash:
        record.reason = f"tests do not run with the gold patch: {after.crash}"
        return None
    f2p, p2p = found_tests(before.outcomes, after.outcomes)
    if not f2p:
        record.reason = "no test fails before the fix and passes after it"
        return None
    return candidate.model_copy(update={"FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p})


def validate_candidate(ctx: RunContext, candidate: Candidate) -> tuple[TaskRecord, Instance | None]:
    """One candidate, discovered then validated: its record, and the task when kept."""
    started = time.monotonic()
    record = TaskRecord(
        instance_id=candidate.instance_id, repo=candidate.repo, version=candidate.version
    )
    task = discover(ctx, candidate, record)
    if task is not None:
        record.stage = "validation"
        swept = sweep_instance(ctx, task)
        record.timings.update(
            {f"validation_{k}": v for k, v in swept.timings.items() if k not in record.timings}
        )
        record.env_cache_hit = swept.env_cache_hit
        record.twins, record.flaky = swept.twins, swept.flaky
        left_out = set(swept.excluded_f2p) | set(swept.excluded_p2p) | set(swept.flaky)
        f2p = [t for t in task.FAIL_TO_PASS if t not in left_out]
        p2p = [t for t in task.PASS_TO_PASS if t not in left_out]
        if not swept.ok:
            record.reason, record.cause = f"validation: {swept.message}", swept.cause
            task = None
        elif not f2p:
            record.reason = "every FAIL_TO_PASS test is left out (internet, flaky)"
            task = None
        else:
            record.kept, record.stage = True, "done"
            record.FAIL_TO_PASS, record.PASS_TO_PASS = f2p, p2p
            task = task.model_copy(update={"FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p})
    record.seconds = round(time.monotonic() - started, 1)
    return record, task


def validate_and_record(ctx: RunContext, candidate: Candidate) -> TaskRecord:
    """:func:`validate_candidate`, its record (and the task, kept) written to the
    candidate's directory; an exception is recorded as infrastructure, to be redone."""
    try:
        record, task = validate_candidate(ctx, candidate)
    except Exception as exc:  # noqa: BLE001 - recorded, as infrastructure, for a resume to redo
        record, task = _infrastructure(candidate, f"{type(exc).__name__}: {exc}"), None
    if ctx.cancelled.is_set():  # its containers were removed under it: no verdict
        record, task = _infrastructure(candidate, "interrupted while it ran"), None
    folder = ctx.instance_dir(candidate)
    folder.mkdir(parents=True, exist_ok=True)
    if task is not None:
        atomic_write_text(folder / "task.jsonl", task.model_dump_json() + "\n")
    atomic_write_text(folder / RECORD, record.model_dump_json(indent=1))
    return record


def _infrastructure(candidate: Candidate, message: str) -> TaskRecord:
    return TaskRecord(
        instance_id=candidate.instance_id, repo=candidate.repo, version=candidate.version,
        reason=message, cause=INFRASTRUCTURE,
    )  # fmt: skip


def validate_all(
    ctx: RunContext,
    candidates: list[Candidate],
    on_done: Callable[[TaskRecord], None],
    again: bool = False,
) -> list[TaskRecord]:
    """Every candidate validated, one at a time, driven as a validation sweep is (the run
    marked in progress, interruption removing the containers in flight); those a resumed
    run already holds are kept (``again``: only the kept tasks, the rejected candidates are
    validated again). The records in the candidates' order."""
    records: dict[str, TaskRecord] = {}
    todo = []
    for candidate in candidates:
        done = load_task_record(ctx, candidate, again)
        if done is None:
            todo.append(candidate)
        else:
            records[candidate.instance_id] = done

    async def one(instance: Instance) -> None:
        assert isinstance(instance, Candidate)
        record = await asyncio.to_thread(validate_and_record, ctx, instance)
        records[instance.instance_id] = record
        on_done(record)

    asyncio.run(interruptible(drive(ctx, LocalRunner(), candidates, todo, one, 1, records)))
    return [records[c.instance_id] for c in candidates if c.instance_id in records]


def load_task_record(ctx: RunContext, instance: Instance, again: bool = False) -> TaskRecord | None:
    """The record a run already holds for ``instance`` (None: none, or infrastructure; with
    ``again``, a rejection too)."""
    record = read_cached(
        ctx.instance_dir(instance) / RECORD, TaskRecord.model_validate_json, "task record"
    )
    if record is None or record.cause == INFRASTRUCTURE or (again and not record.kept):
        return None
    return record
