"""Validation sweeps: build and validate many instances' environments, resumable, with a record
per instance (``instances/<id>/validation.json``) from which ``docs/validation.md`` is made.

A sweep is the benchmark of the environments (phases 1-4 and the gold-patch check): it says
which instances the evaluator can score, why the others cannot, and what each phase costs.
"""

from __future__ import annotations

import contextlib
import re
import statistics
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from orchestrator.atomic import atomic_write_text, read_cached
from orchestrator.models import Instance
from orchestrator.run.context import RunContext

RECORD = "validation.json"
# a gold-validated instance that leaves out more than this share of its PASS_TO_PASS tests is
# flagged: gold-relative grading must not hide a regression
P2P_EXCLUDED_FLAG = 0.10


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
        "the recipe's install fails on the base image's Python",
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
    from orchestrator.environments.plan import SetupFailed, find_recipe, plan_environment
    from orchestrator.environments.validation import validate_instance
    from orchestrator.run.pipeline import test_recipe

    recipe = find_recipe(ctx, instance)
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
        cause, used = root_cause(str(exc)), ""
        with contextlib.suppress(SetupFailed):
            plan = plan_environment(ctx, instance)
            used = plan.python
            if cause == "install failed" and not plan.python_exact:
                cause = PYTHON_UNAVAILABLE  # it failed on a stand-in for the spec's Python
        return SweepRecord(
            **base, ok=False, stage="setup", message=str(exc), cause=cause, python_used=used
        )
    common = base | {
        "python_used": prepared.python_used or prepared.plan.python,
        "env_cache_hit": prepared.env_cache_hit,
        "instance_cache_hit": prepared.instance_cache_hit,
    }
    timings = dict(prepared.timings)
    started = time.monotonic()
    try:
        check = validate_instance(ctx, instance, prepared.instance_image, test_recipe(prepared))
    finally:
        prepared.discard()
    timings["validation"] = time.monotonic() - started
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
        timings={k: round(v, 1) for k, v in timings.items()},
    )


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


def run_sweep(
    ctx: RunContext,
    instances: list[Instance],
    concurrency: int,
    on_done: Callable[[SweepRecord], None] | None = None,
) -> list[SweepRecord]:
    """Sweep ``instances``, breadth first (:func:`breadth_first`); those already recorded in
    the run directory are kept, not redone: a sweep resumes where it stopped. An instance
    that met an infrastructure failure (an exception, not a verdict) is redone."""
    records: list[SweepRecord] = []
    todo = []
    for instance in breadth_first(instances):
        done = load_record(ctx.instance_dir(instance) / RECORD)
        if done is not None and done.cause != INFRASTRUCTURE:
            records.append(done)
        else:
            todo.append(instance)
    lock = threading.Lock()

    def one(instance: Instance) -> SweepRecord:
        try:
            record = sweep_instance(ctx, instance)
        except Exception as exc:  # an infrastructure failure: recorded, redone on resume
            record = SweepRecord(
                instance_id=instance.instance_id, repo=instance.repo, version=instance.version,
                ok=False, stage="setup", message=f"{type(exc).__name__}: {exc}",
                cause=INFRASTRUCTURE,
            )  # fmt: skip
        path = ctx.instance_dir(instance) / RECORD
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, record.model_dump_json(indent=1))
        return record

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        futures = [pool.submit(one, instance) for instance in todo]
        for future in as_completed(futures):
            record = future.result()
            with lock:
                records.append(record)
            if on_done is not None:
                on_done(record)
    return records


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


# ----------------------------------------------------------------------------- the report
def _fmt_stats(values: Iterable[float]) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    return f"{statistics.median(values):.0f} / {max(values):.0f}"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def validation_markdown(
    records: list[SweepRecord],
    title: str,
    command: str,
    selection_total: int | None = None,
    notes: str | None = None,
) -> str:
    """``docs/validation.md`` from a sweep's records (pure); ``notes``, a hand-written
    Markdown analysis kept in its own file, goes at the end, so regenerating keeps it."""
    ok = [r for r in records if r.ok]
    snapshot = [r for r in records if r.cause == "snapshot lacks an object"]
    complete = len(records) - len(snapshot)
    share = 100 * len(ok) / complete if complete else 0.0
    flagged = [r for r in ok if r.p2p_excluded_share > P2P_EXCLUDED_FLAG]
    offline = [r for r in ok if r.excluded_f2p]
    lines = [
        f"# {title}",
        "",
        f"**{len(ok)} of {len(records)} instances validate** "
        f"({share:.1f} % of the {complete} whose repository snapshot is complete); "
        f"{len(records) - len(ok)} do not, each with its root cause below. "
        + (f"{selection_total - len(records)} of the selection were not swept. "
           if selection_total and selection_total > len(records) else "")
        + f"{len(flagged)} validated instance(s) leave out more than "
        f"{P2P_EXCLUDED_FLAG:.0%} of their PASS_TO_PASS tests (flagged); "
        f"{len(offline)} leave out FAIL_TO_PASS tests that need the internet (listed below).",
        "",
        "Validation = the environment is built from the recipe (phases 1-4, network on for "
        "set-up only), then with the network off the FAIL_TO_PASS tests fail at the base "
        "commit and pass with the gold patch. PASS_TO_PASS tests that fail with the gold "
        "patch, or whose outcome differs between gold runs (flaky), are left out of grading; "
        "so are FAIL_TO_PASS tests whose failure with the gold patch is the internet being "
        "out of reach, when the instance keeps other FAIL_TO_PASS tests.",
        "",
        f"Regenerate: `{command}`",
        "",
        "## Failures by root cause",
        "",
        "| root cause | instances | whose problem, and the fix |",
        "|---|---|---|",
    ]  # fmt: skip
    by_cause: dict[str, list[SweepRecord]] = defaultdict(list)
    for r in records:
        if not r.ok:
            by_cause[r.cause or "other"].append(r)
    fixes = {category: fix for category, _, fix in ROOT_CAUSES}
    for cause, items in sorted(by_cause.items(), key=lambda kv: -len(kv[1])):
        ids = ", ".join(r.instance_id for r in items[:8]) + (" …" if len(items) > 8 else "")
        lines.append(f"| {cause} | {len(items)}: {ids} | {fixes.get(cause, 'see the message')} |")
    if not by_cause:
        lines.append("| – | 0 | |")
    lines += [
        "",
        "## Time per repository (seconds, median / max)",
        "",
        "| repository | instances | cold set-up | phase 4 | validation | cache hit (set-up) |",
        "|---|---|---|---|---|---|",
    ]
    by_repo: dict[str, list[SweepRecord]] = defaultdict(list)
    for r in records:
        by_repo[r.repo].append(r)
    for repo, items in sorted(by_repo.items()):
        cold = [r.timings["setup"] for r in items if "setup" in r.timings and not r.env_cache_hit]
        hit = [r.timings["setup"] for r in items if "setup" in r.timings and r.env_cache_hit]
        phase4 = [r.timings["base_commit"] for r in items if "base_commit" in r.timings]
        val = [r.timings["validation"] for r in items if "validation" in r.timings]
        lines.append(
            f"| {repo} | {len(items)} | {_fmt_stats(cold)} | {_fmt_stats(phase4)} | "
            f"{_fmt_stats(val)} | {_fmt_stats(hit)} |"
        )
    lines += [
        "",
        "## Per (repository, version)",
        "",
        "| repository | version | Python spec → used | instances | validated | P2P left out "
        "| errors |",
        "|---|---|---|---|---|---|---|",
    ]
    by_pair: dict[tuple[str, str], list[SweepRecord]] = defaultdict(list)
    for r in records:
        by_pair[(r.repo, r.version)].append(r)
    for (repo, version), items in sorted(
        by_pair.items(), key=lambda kv: (kv[0][0], _version_key(kv[0][1]))
    ):
        pythons = Counter(f"{r.python_spec} → {r.python_used or '?'}" for r in items)
        left_out = sum(len(r.excluded_p2p) for r in items if r.ok)
        errors = Counter(r.cause for r in items if not r.ok)
        lines.append(
            f"| {repo} | {version} | {', '.join(pythons)} | {len(items)} | "
            f"{sum(r.ok for r in items)} | {left_out} | "
            f"{', '.join(f'{n} × {c}' for c, n in errors.items()) or '–'} |"
        )
    lines += ["", "## Instances that do not validate", ""]
    for r in sorted((r for r in records if not r.ok), key=lambda r: r.instance_id):
        lines.append(f"- `{r.instance_id}` ({r.cause}, at {r.stage}): {_one_line(r.message)}")
    at_base = [r for r in ok if r.f2p_at_base]
    if at_base:
        lines += ["", "## FAIL_TO_PASS tests that already pass at the base", "",
                  "Valid (other FAIL_TO_PASS tests fail at the base and pass with the gold "
                  "patch), but these tests cannot tell a fix from none here:", ""]  # fmt: skip
        for r in sorted(at_base, key=lambda r: r.instance_id):
            lines.append(f"- `{r.instance_id}`: {', '.join(f'`{n}`' for n in r.f2p_at_base)}")
    if offline:
        lines += ["", "## FAIL_TO_PASS tests left out: they need the internet", "",
                  "Their failure with the gold patch is a name that does not resolve or a "
                  "network out of reach (they call a public service); the instance is graded "
                  "on its other FAIL_TO_PASS tests:", ""]  # fmt: skip
        for r in sorted(offline, key=lambda r: r.instance_id):
            lines.append(f"- `{r.instance_id}`: {', '.join(f'`{n}`' for n in r.excluded_f2p)}")
    lines += ["", "## PASS_TO_PASS tests left out of grading", ""]
    for r in sorted(ok, key=lambda r: r.instance_id):
        if r.excluded_p2p:
            flag = " **flagged**" if r in flagged else ""
            flaky = f"; flaky: {', '.join(r.flaky)}" if r.flaky else ""
            names = ", ".join(f"`{n}`" for n in r.excluded_p2p[:10])
            more = f" and {len(r.excluded_p2p) - 10} more" if len(r.excluded_p2p) > 10 else ""
            lines.append(
                f"- `{r.instance_id}`: {len(r.excluded_p2p)} of {r.p2p_total}{flag}: "
                f"{names}{more}{flaky}"
            )
    if notes:
        lines += ["", notes.strip()]
    return "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300].replace("|", "\\|")
