"""Validation cost before/after, and warm re-grade throughput, on a sample of real instances.

For each instance of the sample (phases 1-4 first: built, or cache hits when the images are
there), validation runs twice with an empty validation cache and ``--runs`` gold runs: with
the validation module of ``--baseline-ref`` (the previous layout, loaded from git; it runs
the whole test files at the base and every gold run) and with this checkout's (the base
selects the FAIL_TO_PASS tests, reruns only when they can change the verdict). The two
alternate which goes first. Printed per instance: each variant's seconds per phase (base,
gold, gold reruns) and its verdict, which must agree; then the slot time per phase summed
over the sample, before and after.

Then the warm re-grade: the gold participant over the sample, validation cached (the run
above left it), at ``--concurrency``: wall time, instances per minute per core (the host's
cores, ``os.cpu_count()``), and the overhead beyond the tests: Σ total / Σ tests and the
median of ``total - tests`` per instance (``tests`` is the test run's own time).

Settings come from the environment as for ``swe-green`` (``SWE_GREEN_IMAGE_PREFIX``,
``SWE_GREEN_MIRROR_DIR``, ``SWE_GREEN_DATASET``, ...). Run:
``python bench/throughput.py --ids ID ID ... [--runs 2] [--concurrency 1]`` (or
``--ids-file``); ``--smoke``: the synthetic demo__calc-1, one gold run, no baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import synthetic_bench  # noqa: E402

from orchestrator.context.run_context import RunContext  # noqa: E402
from orchestrator.context.run_dir import RunDir  # noqa: E402
from orchestrator.dataset.instances import load_instances  # noqa: E402
from orchestrator.environments.build import prepare_instance  # noqa: E402
from orchestrator.environments.prepared import recipe_of  # noqa: E402
from orchestrator.frontends.reference_participants import make_participant, running  # noqa: E402
from orchestrator.housekeeping.gc import gc  # noqa: E402
from orchestrator.log import configure_logging  # noqa: E402
from orchestrator.models import Instance, InstanceResult  # noqa: E402
from orchestrator.participant.protocol import A2AParticipant  # noqa: E402
from orchestrator.run.scheduler import run_evaluation  # noqa: E402
from orchestrator.sandbox.docker import connect  # noqa: E402
from orchestrator.settings import Settings  # noqa: E402
from orchestrator.validation import validation as current  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODULE = "orchestrator/environments/validation.py"
# main before validation selected its tests: the published figures were measured
# against 6d48e3f, the same validation before the package moves this one follows
BASELINE_REF = "30037a2"
PHASES = ("setup", "base_commit", "base", "gold", "gold_rerun")


def load_baseline(ref: str) -> ModuleType | None:
    """The validation module as it was at ``ref``, its ``run_tests`` timed per call (the first
    call of a validation is its base run, the second its gold run, the rest reruns)."""
    shown = subprocess.run(
        ["git", "show", f"{ref}:{MODULE}"], cwd=ROOT, capture_output=True, text=True
    )
    if shown.returncode != 0:
        print(f"baseline {ref} unavailable ({shown.stderr.strip()}): after only")
        return None
    path = Path(tempfile.mkdtemp(prefix="swe-green-baseline-")) / "baseline_validation.py"
    path.write_text(shown.stdout)
    spec = importlib.util.spec_from_file_location("baseline_validation", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:  # a ref older than the package layout of this checkout
        print(f"baseline {ref} does not import here ({exc}): after only")
        return None
    calls: list[float] = []
    inner = module.run_tests

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return inner(*args, **kwargs)
        finally:
            calls.append(time.monotonic() - started)

    module.run_tests = timed
    module.calls = calls  # type: ignore[attr-defined]
    return module


def validate_with(
    module: ModuleType, ctx: RunContext, instance: Instance, prepared: Any
) -> tuple[bool, str, dict[str, float]]:
    """(ok, message, seconds per phase) of one validation with an empty cache."""
    current._cache_path(ctx, prepared.instance_image).unlink(missing_ok=True)
    if hasattr(module, "calls"):
        module.calls.clear()
    # the baseline predates snapshots: it starts from the instance image's name
    source = prepared.snapshot if module is current else prepared.instance_image
    validate = module.validate if module is current else module.validate_instance
    check = validate(ctx, instance, source, recipe_of(prepared))
    if hasattr(module, "calls"):  # the baseline: base, gold, then reruns
        calls = module.calls
        phases = {"base": calls[0], "gold": sum(calls[1:2]), "gold_rerun": sum(calls[2:])}
    else:  # base_all: the whole files after a selection that did not answer
        phases = {"base": 0.0, **check.timings}
    return check.ok, check.message, phases


def compare(
    ctx: RunContext, instances: list[Instance], baseline: ModuleType | None, after: bool = True
) -> dict[str, dict[str, float]]:
    """Validate each instance with both modules (or one); the slot seconds per phase, summed."""
    totals: dict[str, dict[str, float]] = {"before": {}, "after": {}}
    variants = ({"after": current} if after else {}) | ({"before": baseline} if baseline else {})
    for number, instance in enumerate(instances):
        prepared = prepare_instance(ctx, instance)
        try:
            build = {k: prepared.timings.get(k, 0.0) for k in ("setup", "base_commit")}
            order = sorted(variants, reverse=bool(number % 2))
            verdicts = {}
            for name in order:
                ok, message, phases = validate_with(variants[name], ctx, instance, prepared)
                verdicts[name] = (ok, message)
                for phase, seconds in (build | phases).items():
                    phase = "base" if phase == "base_all" else phase
                    totals[name][phase] = totals[name].get(phase, 0.0) + seconds
                shown = " ".join(f"{k} {v:6.1f}" for k, v in phases.items())
                print(f"{instance.instance_id:32s} {name:6s} ok={ok!s:5s} {shown}", flush=True)
            if len({v for v in verdicts.values()}) > 1:
                print(f"  VERDICTS DIFFER: {verdicts}", flush=True)
        finally:
            prepared.discard()
    return totals


def print_split(totals: dict[str, dict[str, float]]) -> None:
    print("slot seconds per phase (summed over the sample):")
    print(f"  {'':8s}" + "".join(f"{p:>12s}" for p in PHASES) + f"{'validation':>12s}")
    for name, phases in totals.items():
        if not phases:
            continue
        validation = sum(phases.get(p, 0.0) for p in ("base", "gold", "gold_rerun"))
        cells = "".join(f"{phases.get(p, 0.0):12.1f}" for p in PHASES)
        print(f"  {name:8s}{cells}{validation:12.1f}")
    if totals["before"] and totals["after"]:
        ratio = sum(totals["after"].get(p, 0.0) for p in ("base", "gold", "gold_rerun")) / max(
            1e-9, sum(totals["before"].get(p, 0.0) for p in ("base", "gold", "gold_rerun"))
        )
        print(f"  validation after / before: {ratio:.2f}")


def regrade(
    settings: Settings, instances: list[Instance], dataset: str, concurrency: int, root: Path
) -> list[InstanceResult]:
    """The gold participant over ``instances`` with the validation cached; prints throughput."""
    backend, run_id = connect(), f"throughput-{uuid.uuid4().hex[:8]}"
    ctx = RunContext(settings, backend, run_id, RunDir(root / run_id))
    try:
        with running(make_participant("gold", dataset=dataset)) as url:
            started = time.perf_counter()
            results = asyncio.run(
                run_evaluation(ctx, instances, A2AParticipant(url=url), concurrency=concurrency)
            )
            wall = time.perf_counter() - started
    finally:
        gc(backend, run_id=run_id, image_kinds=("snapshot",))
    cores = os.cpu_count() or 1
    statuses = [str(r.status) for r in results]
    print(f"warm re-grade: {len(results)} instances, concurrency {concurrency}, wall {wall:.1f} s")
    print(f"  statuses {dict((s, statuses.count(s)) for s in sorted(set(statuses)))}")
    print(f"  {len(results) / (wall / 60) / cores:.2f} instances per minute per core ({cores})")
    tested = [r for r in results if r.timings.get("tests")]
    if tested:
        total = sum(r.timings["total"] for r in tested)
        tests = sum(r.timings["tests"] for r in tested)
        beyond = [r.timings["total"] - r.timings["tests"] for r in tested]
        print(f"  Σ total / Σ tests = {total:.1f} / {tests:.1f} = {total / tests:.3f}")
        print(
            f"  beyond the tests per instance: median {statistics.median(beyond):.2f} s,"
            f" mean {statistics.mean(beyond):.2f} s"
        )
        print_beyond_split(tested)
    return results


def print_beyond_split(tested: list[InstanceResult]) -> None:
    """Medians per instance of where the time beyond the tests goes: until the participant
    answered, the grading beyond its test run, and the rest (set-up lookups, the result)."""

    def median(part: Callable[[dict[str, float]], float]) -> float:
        return statistics.median(part(r.timings) for r in tested)

    participant = median(lambda t: t.get("participant", 0.0))
    grading = median(lambda t: t.get("grading", 0.0) - t["tests"])
    rest = median(lambda t: t["total"] - t.get("participant", 0.0) - t.get("grading", 0.0))
    print(
        f"  of which (medians): participant {participant:.2f} s, grading beyond the tests"
        f" {grading:.2f} s, the rest {rest:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ids", nargs="*", default=[], help="instance ids of the sample")
    parser.add_argument("--ids-file", type=Path, help="a file of instance ids, one a line")
    parser.add_argument("--runs", type=int, default=2, help="gold runs (default 2)")
    parser.add_argument("--concurrency", type=int, default=1, help="re-grade concurrency")
    parser.add_argument("--baseline-ref", default=BASELINE_REF, help="the previous layout")
    parser.add_argument("--no-regrade", action="store_true", help="validation only")
    parser.add_argument("--no-compare", action="store_true", help="the re-grade only")
    parser.add_argument("--only", choices=("before", "after"), help="validate with one layout")
    parser.add_argument("--smoke", action="store_true", help="synthetic, one instance (CI)")
    args = parser.parse_args()
    configure_logging(level="WARNING")
    if args.smoke:
        smoke()
        return
    ids = list(args.ids) + (args.ids_file.read_text().split() if args.ids_file else [])
    if not ids:
        parser.error("give --ids or --ids-file, or --smoke")
    settings = Settings().replace(validation_runs=args.runs)
    dataset = settings.dataset.dataset
    by_id = {i.instance_id: i for i in load_instances(dataset)}
    instances = [by_id[i] for i in ids]
    root = settings.storage.runs_dir / f"throughput-{time.strftime('%Y%m%d-%H%M%S')}"
    ctx = RunContext(settings, connect(), f"throughput-{uuid.uuid4().hex[:8]}", RunDir(root))
    print(f"sample: {len(instances)} instances, runs {args.runs}, run dir {root.name}")
    if not args.no_compare:
        try:
            baseline = None if args.only == "after" else load_baseline(args.baseline_ref)
            print_split(compare(ctx, instances, baseline, args.only != "before"))
        finally:
            gc(ctx.backend, run_id=ctx.run_id, image_kinds=("snapshot",))
    if not args.no_regrade:
        regrade(settings, instances, dataset, args.concurrency, root)


def smoke() -> None:
    """demo__calc-1: validation (this checkout's), then the warm re-grade; seconds."""
    with synthetic_bench("throughput", 1, "swe-green/base:py3.11") as bench:
        settings = bench.settings.replace(validation_runs=1, validate_env=True)
        ctx = RunContext(settings, bench.backend, bench.run_id, RunDir(bench.root / "v"))
        print_split(compare(ctx, bench.instances[:1], None))
        results = regrade(settings, bench.instances[:1], str(bench.dataset), 1, bench.root)
        if [str(r.status) for r in results] != ["resolved"]:
            sys.exit(f"smoke: the gold patch did not resolve: {results}")


if __name__ == "__main__":
    main()
