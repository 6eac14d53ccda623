"""A run on Ray against the same run on this host: 12 synthetic instances, warm caches.

The three synthetic instances are copied under new ids up to ``--copies`` (default 12). One
unmeasured local run fills the environment, instance and validation caches. Then the same
instances run (a) on this host at concurrency 2 and (b) on a Ray cluster started here: a head
without slots and two worker nodes with one ``sandbox_slots`` each (separate Ray processes,
all on 127.0.0.1, sharing this host's Docker engine), so both runs have two instances at once.

Printed: each run's wall time, joining the cluster, and the per-instance overhead Ray adds:
for each instance, the time the driver saw it in flight (from "started" to "finished") less
the time the instance's own phases took on its node (``timings.total``); on this host that
difference is the scheduler's own bookkeeping, so the Ray overhead is the difference of the
two means. Goal: at most 1 s per instance. Everything created is removed afterwards.

Run: python bench/ray_scaleout.py [--copies 12]; ``--smoke``: one instance, validation off,
no separate warm-up (the run on this host fills the caches).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

# the nodes on 127.0.0.1 (read when ray is first imported)
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import synthetic_bench  # noqa: E402

from orchestrator.context.run_context import RunContext  # noqa: E402
from orchestrator.context.run_dir import RunDir  # noqa: E402
from orchestrator.frontends.reference_participants import make_participant, running  # noqa: E402
from orchestrator.log import configure_logging  # noqa: E402
from orchestrator.models import Instance, InstanceResult  # noqa: E402
from orchestrator.participant.protocol import A2AParticipant  # noqa: E402
from orchestrator.run.ray_runner import RayRunner  # noqa: E402
from orchestrator.run.runner import InstanceRunner, LocalRunner  # noqa: E402
from orchestrator.run.scheduler import ProgressEvent, run_evaluation  # noqa: E402
from orchestrator.sandbox import SandboxBackend  # noqa: E402
from orchestrator.settings import EnvironmentConfig, Settings  # noqa: E402


def timed_run(
    settings: Settings, backend: SandboxBackend, run_id: str, run_dir: Path,
    instances: list[Instance], url: str, runner: InstanceRunner,
) -> tuple[float, list[InstanceResult], dict[str, float]]:  # fmt: skip
    """Wall time, results, and how long the driver saw each instance in flight."""
    ctx = RunContext(settings, backend, run_id, RunDir(run_dir))
    began: dict[str, float] = {}
    in_flight: dict[str, float] = {}

    def on_event(event: ProgressEvent) -> None:
        now = time.perf_counter()
        if event.kind == "started":
            began[event.instance_id] = now
        elif event.kind == "finished":
            in_flight[event.instance_id] = now - began[event.instance_id]

    started = time.perf_counter()
    results = asyncio.run(
        run_evaluation(
            ctx, instances, A2AParticipant(url=url), concurrency=2, on_event=on_event, runner=runner
        )
    )
    return time.perf_counter() - started, results, in_flight


def added(results: list[InstanceResult], in_flight: dict[str, float]) -> list[float]:
    """Per instance: the driver's in-flight time less the instance's own phases."""
    return [in_flight[r.instance_id] - r.timings.get("total", 0.0) for r in results]


def line(label: str, wall: float, results: list[InstanceResult], extra: list[float]) -> None:
    resolved = sum(str(r.status) == "resolved" for r in results)
    print(
        f"{label:24s} wall {wall:7.2f} s  {resolved}/{len(results)} resolved  "
        f"mean phases {statistics.mean(r.timings.get('total', 0.0) for r in results):6.2f} s  "
        f"driver-side extra per instance: mean {statistics.mean(extra):5.3f} s, "
        f"max {max(extra):5.3f} s"
    )


def start_cluster() -> Cluster:
    small = {"object_store_memory": 80 * 1024 * 1024, "num_cpus": 1}
    cluster = Cluster(initialize_head=True, head_node_args={**small, "include_dashboard": False})
    for _ in range(2):
        cluster.add_node(**small, resources={"sandbox_slots": 1})
    cluster.wait_for_nodes()
    return cluster


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--copies", type=int, default=12, help="instances in all (default 12)")
    parser.add_argument("--image", default=EnvironmentConfig().base_image())
    parser.add_argument("--smoke", action="store_true", help="one instance, validation off")
    args = parser.parse_args()
    if args.smoke:
        args.copies = 1
    configure_logging(level="WARNING")
    cluster = None
    with synthetic_bench("bench-ray", args.copies, args.image, validate=not args.smoke) as bench:
        backend, run_id, runs = bench.backend, bench.run_id, bench.root / "runs"
        settings, instances = bench.settings, bench.instances
        try:
            with running(make_participant("gold", dataset=str(bench.dataset))) as url:
                if not args.smoke:
                    wall, _, _ = timed_run(
                        settings, backend, run_id, runs / "warm", instances, url, LocalRunner()
                    )
                    print(f"warm-up on this host (not measured, fills the caches): {wall:6.2f} s")
                local_wall, local, local_flight = timed_run(
                    settings, backend, run_id, runs / "local", instances, url, LocalRunner()
                )
                local_extra = added(local, local_flight)
                line("this host, 2 at once", local_wall, local, local_extra)

                t = time.perf_counter()
                cluster = start_cluster()
                took = time.perf_counter() - t
                print(f"starting the cluster (head + 2 worker nodes): {took:.2f} s")
                ray_settings = settings.replace(ray_address=cluster.address)
                t = time.perf_counter()
                runner = RayRunner.connect(ray_settings)
                print(f"joining it and checking the nodes: {time.perf_counter() - t:.2f} s")
                try:
                    ray_wall, on_ray, ray_flight = timed_run(
                        ray_settings, backend, run_id, runs / "ray", instances, url, runner
                    )
                finally:
                    runner.close()
                ray_extra = added(on_ray, ray_flight)
                line("Ray, 2 nodes x 1 slot", ray_wall, on_ray, ray_extra)
            overhead = statistics.mean(ray_extra) - statistics.mean(local_extra)
            print(
                f"Ray's overhead per instance: {overhead:.3f} s (goal <= 1 s); "
                f"wall Ray / this host: {ray_wall / local_wall:.2f}x"
            )
        finally:
            if ray.is_initialized():
                ray.shutdown()
            if cluster is not None:
                cluster.shutdown()


if __name__ == "__main__":
    main()
