"""Validation sweeps: build and validate many instances' environments, resumable, with a record
per instance (``instances/<id>/validation.json``) from which ``docs/validation.md`` is made
(:mod:`orchestrator.frontends.report.validation`). A sweep is a run of the scheduler
(:mod:`orchestrator.run.validation_sweep`); this module is its work on one instance.

A sweep is the benchmark of the environments (phases 1-4 and the gold-patch check): it says
which instances the evaluator can score, why the others cannot, and what each phase costs.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections import Counter
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from orchestrator.atomic import atomic_write_text, read_cached
from orchestrator.context.run_context import RunContext
from orchestrator.models import Instance

RECORD = "validation.json"


class SweepRecord(BaseModel):
    """The outcome of one instance in a sweep."""

    instance_id: str
    repo: str
    version: str
    ok: bool
    stage: Literal["setup", "validation", "done"]
    message: str = ""
    cause: str = ""  # the root-cause category of a failure (see ROOT_CAUSES)
    excluded_p2p: list[str] = Field(default_factory=list)
    excluded_f2p: list[str] = Field(default_factory=list)  # FAIL_TO_PASS needing the internet
    flaky: list[str] = Field(default_factory=list)
    f2p_at_base: list[str] = Field(default_factory=list)  # FAIL_TO_PASS passing at the base
    p2p_total: int = 0
    python_spec: str = ""
    python_used: str = ""
    env_cache_hit: bool = False
    instance_cache_hit: bool = False
    validation_cached: bool = False
    timings: dict[str, float] = Field(default_factory=dict)
    setup_strategy: str = ""  # what made the environment: recipe, infer or llm
    # a set-up that failed: its failing step ("install: install command"), else ""
    failed_step: str = ""
    # effective impossible twins validation kept, and per FAIL_TO_PASS test without one why
    twins: int = 0
    twin_gaps: dict[str, str] = Field(default_factory=dict)

    @property
    def p2p_excluded_share(self) -> float:
        return len(self.excluded_p2p) / self.p2p_total if self.p2p_total else 0.0


PYTHON_UNAVAILABLE = "Python not available offline"
# (category, pattern on the failure message, whose problem it is and what fixes it)
ROOT_CAUSES: list[tuple[str, re.Pattern[str], str]] = [
    (
        "snapshot lacks an object",
        re.compile(r"missing blob|promisor|bad object|unable to read|did not send all", re.I),
        "the repository snapshot here lacks a blob (not ours): with internet, mirror the full "
        "repository (`git clone --mirror`)",
    ),
    (
        PYTHON_UNAVAILABLE,
        re.compile(
            r"requires[- ]python|Python>=3\.1\d|not supported on this Python|"
            r"python_requires|No matching distribution.*Requires-Python",
            re.I,
        ),
        "the spec's Python cannot be had offline here and the install fails on the nearest "
        "base image's: with internet, SWE_GREEN_FETCH_PYTHON=true (uv, Python 3.7+) or a "
        "local mirror of Python builds (SWE_GREEN_PYTHON_MIRROR); for 3.5/3.6 a base image "
        "tagged swe-green/base:py3.6 made from Docker Hub's python:3.6-slim",
    ),  # fmt: skip
    (
        "set-up host out of reach",
        re.compile(
            r"unable to resolve host|Could not resolve host|Name or service not known|"
            r"Temporary failure in name resolution|Network is unreachable",
            re.I,
        ),
        "a set-up step downloads from a host out of this machine's reach (not ours, not the "
        "Python's): e.g. matplotlib's recipes fetch qhull from www.qhull.org; give set-up that "
        "host (or a proxy) and the build proceeds",
    ),
    (
        "install failed",
        re.compile(r"install command|pre-install|build tools|reinstall", re.I),
        "the environment's install (the recipe's, or the inferred plan's) fails on the base "
        "image's Python: its setup.log names the step and the error",
    ),
    (
        "needs the internet",
        re.compile(r"\(they need the internet\)"),
        "every FAIL_TO_PASS test calls a public site (not ours): no offline evaluator can grade "
        "it; the official harness runs it with the internet on",
    ),
    (
        "gold patch fails",
        re.compile(r"FAIL_TO_PASS tests fail even with the gold patch", re.I),
        "FAIL_TO_PASS tests do not pass with the gold patch in this environment",
    ),
    (
        "flaky FAIL_TO_PASS",
        re.compile(r"FAIL_TO_PASS tests are flaky", re.I),
        "a FAIL_TO_PASS test's outcome differs between runs",
    ),
    (
        "passes without a fix",
        re.compile(r"FAIL_TO_PASS tests pass without any fix", re.I),
        "FAIL_TO_PASS tests already pass at the base commit in this environment",
    ),
    (
        "tests do not run",
        re.compile(r"tests do not run|test patch does not apply", re.I),
        "the test command crashes or prints nothing gradeable",
    ),
    (
        "gold patch does not apply",
        re.compile(r"gold patch does not apply", re.I),
        "the gold patch does not apply at the base commit",
    ),
    ("timeout", re.compile(r"timed out", re.I), "a phase ran past its time limit"),
]


# an engine or host failure (the Docker engine lost its bridge, went away): no verdict on the
# instance; a resumed sweep runs it again
INFRASTRUCTURE = "infrastructure (run again)"


def root_cause(message: str) -> str:
    """The category of a failure message (``other`` when none matches)."""
    for category, pattern, _ in ROOT_CAUSES:
        if pattern.search(message):
            return category
    return "other"


def sweep_instance(ctx: RunContext, instance: Instance) -> SweepRecord:
    """Phases 1-4 and validation for one instance; never raises for an instance's failure."""
    from orchestrator.environments.build import prepare_instance
    from orchestrator.environments.prepared import recipe_of
    from orchestrator.setup.plan import (
        SetupFailed,
        fallback_note,
        find_recipe,
        llm_fallback_available,
        plan_environment,
    )
    from orchestrator.validation.validation import validate

    recipe = find_recipe(ctx.settings, instance)
    base = {
        "instance_id": instance.instance_id,
        "repo": instance.repo,
        "version": instance.version,
        "p2p_total": len(instance.PASS_TO_PASS),
        "python_spec": recipe.python if recipe else "",
    }
    try:
        prepared = prepare_instance(ctx, instance)
    except SetupFailed as exc:
        cause, used, strategy = root_cause(str(exc)), "", ""
        with contextlib.suppress(SetupFailed):
            plan = plan_environment(ctx, instance)
            used, strategy = plan.python, plan.strategy
            if cause == "install failed" and not plan.python_exact:
                cause = PYTHON_UNAVAILABLE  # it failed on a stand-in for the spec's Python
        return SweepRecord(
            **base, ok=False, stage="setup", message=str(exc), cause=cause, python_used=used,
            setup_strategy=strategy, failed_step=failed_step(str(exc)),
        )  # fmt: skip
    common = base | {
        "python_used": prepared.python_used or prepared.plan.python,
        "env_cache_hit": prepared.env_cache_hit,
        "instance_cache_hit": prepared.instance_cache_hit,
    }
    timings = dict(prepared.timings)
    started = time.monotonic()
    try:
        check = validate(ctx, instance, prepared.snapshot, recipe_of(prepared))
    finally:
        prepared.discard()
    timings["validation"] = time.monotonic() - started
    if not check.ok and prepared.plan.strategy == "infer" and llm_fallback_available(ctx.settings):
        # auto: the LLM agent starts from the inferred environment that failed validation
        note = fallback_note(prepared.plan, f"environment validation: {check.message}")
        try:
            prepared = prepare_instance(ctx, instance, note)
        except SetupFailed as exc:
            return SweepRecord(
                **common, ok=False, stage="setup", message=str(exc), cause=root_cause(str(exc)),
                setup_strategy="llm", failed_step=failed_step(str(exc)),
            )  # fmt: skip
        try:
            check = validate(ctx, instance, prepared.snapshot, recipe_of(prepared))
        finally:
            prepared.discard()
    return SweepRecord(
        **common,
        ok=check.ok,
        stage="done" if check.ok else "validation",
        message=check.message,
        cause="" if check.ok else root_cause(check.message),
        excluded_p2p=check.excluded_p2p,
        excluded_f2p=check.excluded_f2p,
        flaky=check.flaky,
        f2p_at_base=check.f2p_passing_at_base,
        validation_cached=check.cached,
        timings={k: round(v, 1) for k, v in {**timings, **_twin_time(check.timings)}.items()},
        twins=len(check.twins),
        twin_gaps=check.twin_gaps,
        setup_strategy=prepared.plan.strategy,
    )


def _twin_time(timings: dict[str, float]) -> dict[str, float]:
    """The validation's twins phase, as ``validation_twins`` (when it ran)."""
    return {"validation_twins": timings["twins"]} if "twins" in timings else {}


def failed_step(message: str) -> str:
    """The set-up step a failure message names (``install: install command`` from
    "install failed (install command): ..."), else ""."""
    match = re.search(r"\b([\w-]+) (?:failed|timed out) \(([^)]*)\)", message)
    if match:
        return f"{match.group(1)}: {match.group(2)}"
    match = re.search(r"\b([\w-]+) timed out after", message)
    return f"{match.group(1)}: timed out" if match else ""


def breadth_first(instances: list[Instance]) -> list[Instance]:
    """``instances`` reordered round-robin over their (repo, version) pairs: the first
    instance of every pair, then the second ones, ... so that a sweep stopped early still
    covers every environment (and later instances of a pair hit its cached image)."""
    seen: Counter[tuple[str, str]] = Counter()
    ranked = []
    for position, instance in enumerate(instances):
        key = (instance.repo, instance.version)
        ranked.append((seen[key], position, instance))
        seen[key] += 1
    return [instance for _, _, instance in sorted(ranked, key=lambda item: item[:2])]


def pending(ctx: RunContext, instances: list[Instance]) -> tuple[list[SweepRecord], list[Instance]]:
    """The records ``instances`` already have in the run directory, and the instances still
    to sweep, breadth first (:func:`breadth_first`): a sweep resumes where it stopped. An
    instance that met an infrastructure failure (an exception, not a verdict) is redone."""
    records: list[SweepRecord] = []
    todo = []
    for instance in breadth_first(instances):
        done = load_record(ctx.instance_dir(instance) / RECORD)
        if done is not None and done.cause != INFRASTRUCTURE:
            records.append(done)
        else:
            todo.append(instance)
    return records, todo


def sweep_and_record(ctx: RunContext, instance: Instance) -> SweepRecord:
    """:func:`sweep_instance`, its record written to the instance's directory; an exception
    (an infrastructure failure) is recorded too, as such, so that a resumed sweep redoes it,
    and so is an instance the sweep's interruption ended (its containers removed under it:
    what it met then is no verdict on its environment)."""
    try:
        record = sweep_instance(ctx, instance)
    except Exception as exc:  # noqa: BLE001 - recorded, as infrastructure, for a resume to redo
        record = _infrastructure(instance, f"{type(exc).__name__}: {exc}")
    if ctx.cancelled.is_set():
        record = _infrastructure(instance, "interrupted: the sweep stopped while it ran")
    path = ctx.instance_dir(instance) / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, record.model_dump_json(indent=1))
    return record


def _infrastructure(instance: Instance, message: str) -> SweepRecord:
    return SweepRecord(
        instance_id=instance.instance_id, repo=instance.repo, version=instance.version,
        ok=False, stage="setup", message=message, cause=INFRASTRUCTURE,
    )  # fmt: skip


def load_record(path: Path) -> SweepRecord | None:
    return read_cached(path, SweepRecord.model_validate_json, "sweep record")


def load_records(source: Path) -> list[SweepRecord]:
    """Every instance record of a sweep: its run directory, or a records file (JSON lines,
    :func:`save_records`) that keeps them beyond the run directory's machine."""
    if source.is_file():
        lines = source.read_text().splitlines()
        return [SweepRecord.model_validate_json(line) for line in lines if line.strip()]
    paths = sorted((source / "instances").glob(f"*/{RECORD}"))
    return [r for r in (load_record(p) for p in paths) if r is not None]


def merge_records(*sources: list[SweepRecord]) -> list[SweepRecord]:
    """One record per instance, sorted by id; a later source's record replaces an earlier's."""
    merged = {record.instance_id: record for records in sources for record in records}
    return [merged[key] for key in sorted(merged)]


def save_records(records: list[SweepRecord], path: Path) -> None:
    """The records as JSON lines: small enough to keep in the repository, so that a sweep
    split over several machines (sessions) adds up to one report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "".join(record.model_dump_json() + "\n" for record in records))
