"""Evaluation throughput: the gold participant on the synthetic instances, with warm caches, at
concurrency 1 and 2.

The three synthetic instances are copied under new ids (``demo__calc-1-copy1``, same repository
and commits) up to ``--copies`` instances. One unmeasured run at concurrency 1 fills the
environment, instance and validation caches; then one run at each concurrency, each in a fresh
run directory, with validation on. Printed per run: wall time, the mean of each phase in the
results' timings, and the per-instance overhead

    overhead = total - setup - base_commit - validation - grading

that is, the participant's container start + tool install + the A2A conversation + the patch
step (``participant`` in the timings covers the first three; the conversation alone comes
from the transcript). Everything created is removed afterwards (by run label and prefix).

Run: python bench/run.py [--copies 6] [--image swe-green/base:py3.11]; ``--smoke``: one
instance, one run at concurrency 1, cold (no warm-up run), validation off.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from orchestrator.context.run_context import RunContext
from orchestrator.context.run_dir import RunDir
from orchestrator.dataset.instances import load_instances
from orchestrator.dataset.synthetic import build_synthetic
from orchestrator.frontends.reference_participants import make_participant, running
from orchestrator.housekeeping.gc import gc
from orchestrator.log import configure_logging
from orchestrator.models import Instance, InstanceResult
from orchestrator.participant.protocol import A2AParticipant
from orchestrator.run.scheduler import run_evaluation
from orchestrator.sandbox import SandboxBackend
from orchestrator.sandbox.docker import connect
from orchestrator.settings import EnvironmentConfig, Settings

PHASES = ("setup", "base_commit", "validation", "participant", "grading", "total")
OUTSIDE = ("setup", "base_commit", "validation", "grading")
ALL_KINDS = ("snapshot", "instance", "env")


def write_copies(dataset: Path, total: int) -> None:
    """Rewrite ``dataset`` with ``total`` rows: its rows, then copies under new ids."""
    rows = [json.loads(line) for line in dataset.read_text().splitlines() if line.strip()]
    out = []
    for n in range(total):
        row = dict(rows[n % len(rows)])
        copy = n // len(rows)
        if copy:
            row["instance_id"] = f"{row['instance_id']}-copy{copy}"
        out.append(json.dumps(row))
    dataset.write_text("\n".join(out) + "\n")


def overhead(result: InstanceResult) -> float:
    t = result.timings
    return t.get("total", 0.0) - sum(t.get(k, 0.0) for k in OUTSIDE)


def conversation(run_dir: RunDir, instance_id: str) -> float | None:
    """``run_participant``'s own time, from the end event of the transcript."""
    path = run_dir.instance_dir(instance_id) / "transcript.jsonl"
    if not path.is_file():
        return None
    for line in reversed(path.read_text().splitlines()):
        event = json.loads(line)
        if event.get("event") == "end":
            return float(event.get("timings", {}).get("participant", 0.0))
    return None


def evaluate(
    settings: Settings,
    backend: SandboxBackend,
    run_id: str,
    run_dir: Path,
    instances: list[Instance],
    url: str,
    concurrency: int,
) -> tuple[float, list[InstanceResult], RunDir]:
    ctx = RunContext(settings, backend, run_id, RunDir(run_dir))
    started = time.perf_counter()
    results = asyncio.run(
        run_evaluation(ctx, instances, A2AParticipant(url=url), concurrency=concurrency)
    )
    return time.perf_counter() - started, results, ctx.run_dir


def report(label: str, wall: float, results: list[InstanceResult], run_dir: RunDir) -> None:
    statuses: dict[str, int] = {}
    for r in results:
        statuses[str(r.status)] = statuses.get(str(r.status), 0) + 1
    print(f"{label}: wall {wall:6.2f} s for {len(results)} instances   statuses {statuses}")
    talks = [c for r in results if (c := conversation(run_dir, r.instance_id)) is not None]
    for phase in PHASES:
        values = [r.timings[phase] for r in results if phase in r.timings]
        if not values:
            continue
        line = f"  mean {phase:12s} {statistics.mean(values):6.2f} s"
        if phase == "participant" and talks:
            start = statistics.mean(values) - statistics.mean(talks)
            line += (
                f"   (container start + tools install {start:4.2f} s, "
                f"A2A conversation {statistics.mean(talks):4.2f} s)"
            )
        print(line)
    extra = [overhead(r) for r in results]
    print(
        f"  overhead per instance (total - setup - base_commit - validation - grading): "
        f"mean {statistics.mean(extra):5.2f} s, max {max(extra):5.2f} s"
    )


@dataclass
class Bench:
    """The synthetic instances copied to ``copies``, settings for them, and the run id and
    image prefix everything the bench makes carries."""

    backend: SandboxBackend
    run_id: str
    root: Path
    dataset: Path
    instances: list[Instance]
    settings: Settings


# set by scripts/bench-smoke: the smoke runs share one synthetic cache (built by the first,
# reused by the next) whose images carry the directory's name as their prefix; the runner
# removes both at the end
SMOKE_CACHE = "SWE_GREEN_BENCH_SMOKE_CACHE"


@contextlib.contextmanager
def synthetic_place(kind: str, image: str) -> Iterator[tuple[Path, Path, str]]:
    """(root, synthetic instances, image prefix) with the base image tagged under the prefix:
    a temporary directory and a fresh prefix, removed at the end; or, with ``SMOKE_CACHE``
    set, the shared smoke cache, kept."""
    backend = connect()
    client = backend.client
    shared = os.environ.get(SMOKE_CACHE)
    prefix = Path(shared).name if shared else f"swe-green-bench-{kind}-{uuid.uuid4().hex[:8]}"
    client.images.get(image).tag(f"{prefix}/base", "py3.11")
    if shared:
        root = Path(shared)
        if not (root / "synth" / "instances.jsonl").is_file():
            build_synthetic(root / "synth")
        yield root, root / "synth", prefix
        return
    try:
        with tempfile.TemporaryDirectory(prefix="swe-green-bench-") as tmp:
            yield Path(tmp), build_synthetic(Path(tmp) / "synth"), prefix
    finally:
        for img in client.images.list(name=f"{prefix}/*"):
            for tag in img.tags:
                if tag.startswith(prefix + "/"):
                    client.images.remove(tag, force=True)


@contextlib.contextmanager
def synthetic_bench(kind: str, copies: int, image: str, validate: bool = True) -> Iterator[Bench]:
    """A :class:`Bench` in a temporary directory (or the shared smoke cache); its containers
    and images are removed at the end (by run label and prefix; the smoke cache's images are
    the runner's to remove)."""
    backend = connect()
    run_id = f"{kind}-{uuid.uuid4().hex[:8]}"
    with synthetic_place(kind, image) as (root, synth, prefix):
        runs = Path(tempfile.mkdtemp(prefix="swe-green-bench-runs-"))
        dataset = runs / "instances.jsonl"
        dataset.write_text((synth / "instances.jsonl").read_text())
        write_copies(dataset, copies)
        settings = Settings(
            data_dir=root / "data", runs_dir=runs, dataset=str(dataset),
            mirror_dir=synth / "mirrors", recipes_file=synth / "recipes.json",
            image_prefix=prefix, setup_strategy="recipe", validate_env=validate,
            memory="2g", cpus=1.0,
        )  # fmt: skip
        try:
            instances = load_instances(str(dataset))
            yield Bench(backend, run_id, runs, dataset, instances, settings)
        finally:
            shared = os.environ.get(SMOKE_CACHE)
            gc(backend, run_id=run_id, image_kinds=("snapshot",) if shared else ALL_KINDS)
            shutil.rmtree(runs, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--copies", type=int, default=6, help="instances in all (default 6)")
    parser.add_argument("--image", default=EnvironmentConfig().base_image())
    parser.add_argument("--smoke", action="store_true", help="one instance, concurrency 1")
    args = parser.parse_args()
    concurrencies = (1,) if args.smoke else (1, 2)
    if args.smoke:
        args.copies = 1
    configure_logging(level="WARNING")
    with synthetic_bench("bench", args.copies, args.image, validate=not args.smoke) as bench:
        backend, run_id, runs = bench.backend, bench.run_id, bench.root / "runs"
        settings, instances = bench.settings, bench.instances
        with running(make_participant("gold", dataset=str(bench.dataset))) as url:
            if not args.smoke:
                warm_wall, warm, _ = evaluate(
                    settings, backend, run_id, runs / "warm", instances, url, 1
                )
                print(
                    f"warm-up (not measured, fills the caches): {warm_wall:6.2f} s, "
                    f"{sum(str(r.status) == 'resolved' for r in warm)}/{len(warm)} resolved"
                )
            walls = {}
            for concurrency in concurrencies:
                wall, results, run_dir = evaluate(
                    settings, backend, run_id, runs / f"c{concurrency}", instances, url,
                    concurrency,
                )  # fmt: skip
                walls[concurrency] = wall
                report(f"concurrency {concurrency}", wall, results, run_dir)
        if 2 in walls:
            print(f"speed-up wall@1 / wall@2: {walls[1] / walls[2]:.2f}x")


if __name__ == "__main__":
    main()
