"""The test-time audit hook's cost on test time: each instance's tests with and without it.

For each instance (phases 1-4 first: built, or cache hits when the images are there), one
grading container from its environment with the gold patch applied runs the instance's tests
``--runs`` times with the audit hook and as often without, alternating which goes first (as
root: the test user's writable paths are validation's, which this does not run). The figure
is the test run's own time (``SuiteRun.duration``). Printed per instance: the median of
each, their ratio, and whether the hook reported anything on the gold patch (it must not);
then the ratio of the sums over the sample. Goal: ≤ 1.05.

Settings come from the environment as for ``swe-green`` (``SWE_GREEN_MIRROR_DIR``,
``SWE_GREEN_DATASET``, ``SWE_GREEN_DATA_DIR``, ...). Run:
``python bench/audit_cost.py --ids ID ID ... [--runs 3]``; ``--smoke``: the synthetic
demo__calc-1, one run each.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import synthetic_bench  # noqa: E402

from orchestrator.context.run_context import RunContext  # noqa: E402
from orchestrator.context.run_dir import RunDir  # noqa: E402
from orchestrator.dataset.instances import load_instances  # noqa: E402
from orchestrator.diffs.apply import apply_patch  # noqa: E402
from orchestrator.environments.build import prepare_instance  # noqa: E402
from orchestrator.environments.prepared import recipe_of  # noqa: E402
from orchestrator.grading.audit import AUDIT_DIR, audit_config  # noqa: E402
from orchestrator.grading.evaluation import run_tests  # noqa: E402
from orchestrator.housekeeping.gc import gc  # noqa: E402
from orchestrator.log import configure_logging  # noqa: E402
from orchestrator.models import Instance  # noqa: E402
from orchestrator.sandbox.docker import connect  # noqa: E402
from orchestrator.settings import Settings  # noqa: E402
from sandbox_tools.contract import EVAL_DIR, TESTBED  # noqa: E402


def measure(
    ctx: RunContext, instance: Instance, runs: int
) -> tuple[list[float], list[float], list[str]]:
    """(seconds with the hook, seconds without, what the hook reported on the gold patch)."""
    prepared = prepare_instance(ctx, instance)
    recipe = recipe_of(prepared)
    sandbox = ctx.start_sandbox(prepared.snapshot, instance, "grading", network=False)
    timeout = ctx.settings.grading.test_timeout
    try:
        applied = apply_patch(sandbox, instance.patch, repo_dir=TESTBED)
        if not applied.applied:
            raise SystemExit(f"{instance.instance_id}: the gold patch does not apply")
        watched = audit_config(sandbox, instance, recipe, instance.patch, TESTBED, EVAL_DIR)
        with_hook: list[float] = []
        without: list[float] = []
        reported: list[str] = []
        for i in range(runs * 2):
            audited = (i % 2 == 0) == (i // 2 % 2 == 0)  # ABBA: neither always goes first
            sandbox.exec(["rm", "-rf", AUDIT_DIR], timeout=30)  # an earlier run's set-up
            run = run_tests(
                sandbox, instance, recipe, timeout=timeout, audit=watched if audited else None
            )
            (with_hook if audited else without).append(run.duration)
            if run.audit is not None:
                reported += [e for e in run.audit.evidence if e not in reported]
        return with_hook, without, reported
    finally:
        sandbox.remove()


def report(ctx: RunContext, instances: list[Instance], runs: int) -> float:
    """Print each instance's figures and return the ratio of the sums."""
    print(f"{'instance':<36} {'with s':>8} {'without s':>10} {'ratio':>6}  reported on gold")
    sums = [0.0, 0.0]
    for instance in instances:
        with_hook, without, reported = measure(ctx, instance, runs)
        a, b = statistics.median(with_hook), statistics.median(without)
        sums[0] += a
        sums[1] += b
        said = "; ".join(reported) or "nothing"
        print(f"{instance.instance_id:<36} {a:>8.2f} {b:>10.2f} {a / b:>6.3f}  {said}")
    ratio = sums[0] / sums[1] if sums[1] else 0.0
    print(f"sample: {len(instances)} instances, {runs} run(s) each way; Σ with / Σ without "
          f"= {sums[0]:.2f} / {sums[1]:.2f} = {ratio:.3f}")  # fmt: skip
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ids", nargs="*", default=[], help="instance ids of the sample")
    parser.add_argument("--runs", type=int, default=3, help="test runs each way (default 3)")
    parser.add_argument("--smoke", action="store_true", help="synthetic, one instance (CI)")
    args = parser.parse_args()
    configure_logging(level="WARNING")
    if args.smoke:
        with synthetic_bench("auditcost", 1, "swe-green/base:py3.11", validate=False) as bench:
            ctx = RunContext(bench.settings, bench.backend, bench.run_id, RunDir(bench.root / "a"))
            report(ctx, bench.instances[:1], 1)
        return
    if not args.ids:
        parser.error("give --ids, or --smoke")
    settings = Settings()
    by_id = {i.instance_id: i for i in load_instances(settings.dataset.dataset)}
    root = settings.storage.runs_dir / f"audit-cost-{time.strftime('%Y%m%d-%H%M%S')}"
    ctx = RunContext(settings, connect(), f"auditcost-{uuid.uuid4().hex[:8]}", RunDir(root))
    try:
        report(ctx, [by_id[i] for i in args.ids], args.runs)
    finally:
        gc(ctx.backend, run_id=ctx.run_id, image_kinds=("snapshot",))


if __name__ == "__main__":
    main()
