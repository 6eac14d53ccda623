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

Run: python bench/run.py [--copies 6] [--image swe-green/base:py3.11]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from orchestrator.dataset.instances import load_instances
from orchestrator.dataset.synthetic import build_synthetic
from orchestrator.housekeeping import gc
from orchestrator.log import configure_logging
from orchestrator.models import Instance, InstanceResult
from orchestrator.participant.reference import make_participant, running
from orchestrator.run.context import RunContext
from orchestrator.run.results import RunDir
from orchestrator.run.scheduler import run_evaluation
from orchestrator.sandbox import SandboxBackend
from orchestrator.sandbox.docker import connect
from orchestrator.settings import Settings

PHASES = ("setup", "base_commit", "validation", "participant", "grading", "total")
OUTSIDE = ("setup", "base_commit", "validation", "grading")


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
    results = asyncio.run(run_evaluation(ctx, instances, url, concurrency=concurrency))
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


@contextlib.contextmanager
def synthetic_bench(kind: str, copies: int, image: str) -> Iterator[Bench]:
    """A :class:`Bench` in a temporary directory; its containers and images are removed at
    the end (by run label and prefix)."""
    backend = connect()
    client = backend.client
    run_id = f"{kind}-{uuid.uuid4().hex[:8]}"
    prefix = f"swe-green-bench-{run_id}"
    client.images.get(image).tag(f"{prefix}/base", "py3.11")
    try:
        with tempfile.TemporaryDirectory(prefix="swe-green-bench-") as tmp:
            root = Path(tmp)
            synth = build_synthetic(root / "synth")
            dataset = synth / "instances.jsonl"
            write_copies(dataset, copies)
            settings = Settings(
                data_dir=root / "data", runs_dir=root / "runs", dataset=str(dataset),
                mirror_dir=synth / "mirrors", recipes_file=synth / "recipes.json",
                image_prefix=prefix, setup_strategy="recipe", validate_env=True,
                memory="2g", cpus=1.0,
            )  # fmt: skip
            instances = load_instances(str(dataset))
            yield Bench(backend, run_id, root, dataset, instances, settings)
    finally:
        gc(backend, run_id=run_id, image_kinds=("snapshot", "instance", "env"))
        for img in client.images.list(name=f"{prefix}/*"):
            for tag in img.tags:
                if tag.startswith(prefix + "/"):
                    client.images.remove(tag, force=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--copies", type=int, default=6, help="instances in all (default 6)")
    parser.add_argument("--image", default="swe-green/base:py3.11")
    args = parser.parse_args()
    configure_logging(level="WARNING")
    with synthetic_bench("bench", args.copies, args.image) as bench:
        backend, run_id, runs = bench.backend, bench.run_id, bench.root / "runs"
        settings, instances = bench.settings, bench.instances
        with running(make_participant("gold", dataset=str(bench.dataset))) as url:
            warm_wall, warm, _ = evaluate(
                settings, backend, run_id, runs / "warm", instances, url, 1
            )
            print(
                f"warm-up (not measured, fills the caches): {warm_wall:6.2f} s, "
                f"{sum(str(r.status) == 'resolved' for r in warm)}/{len(warm)} resolved"
            )
            walls = {}
            for concurrency in (1, 2):
                wall, results, run_dir = evaluate(
                    settings, backend, run_id, runs / f"c{concurrency}", instances, url,
                    concurrency,
                )  # fmt: skip
                walls[concurrency] = wall
                report(f"concurrency {concurrency}", wall, results, run_dir)
        print(f"speed-up wall@1 / wall@2: {walls[1] / walls[2]:.2f}x")


if __name__ == "__main__":
    main()
