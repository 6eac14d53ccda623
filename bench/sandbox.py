"""Sandbox figures: container start, exec round trip (p50/p95 over 200 calls), snapshot,
start from snapshot. Run: python bench/sandbox.py [--image swe-green/base:py3.11] [--calls 200]
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

from orchestrator.housekeeping import gc
from orchestrator.sandbox.docker import DockerSandbox as Sandbox
from orchestrator.sandbox.docker import connect


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--image", default="swe-green/base:py3.11")
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    backend = connect()
    client = backend.client
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    try:
        starts = []
        for _ in range(5):
            t = time.perf_counter()
            sb = Sandbox.start(client, args.image, run_id=run_id, instance_id="bench")
            starts.append(time.perf_counter() - t)
            sb.remove()
        sb = Sandbox.start(client, args.image, run_id=run_id, instance_id="bench")
        sb.exec(["true"])
        rtts = []
        for _ in range(args.calls):
            t = time.perf_counter()
            sb.exec(["true"])
            rtts.append(time.perf_counter() - t)
        sb.exec("mkdir -p /testbed && head -c 50000000 /dev/urandom > /testbed/blob")
        t = time.perf_counter()
        sb.snapshot("swe-green-bench/snap", run_id)
        snap = time.perf_counter() - t
        t = time.perf_counter()
        clone = Sandbox.start(client, f"swe-green-bench/snap:{run_id}", run_id=run_id)
        clone.exec(["true"])
        from_snap = time.perf_counter() - t
        print(f"container start (median of 5):  {statistics.median(starts) * 1000:7.0f} ms")
        print(
            f"exec round trip over {args.calls}:    p50 {percentile(rtts, 0.5) * 1000:5.1f} ms"
            f"   p95 {percentile(rtts, 0.95) * 1000:5.1f} ms"
        )
        print(f"snapshot (50 MB written):       {snap * 1000:7.0f} ms")
        print(f"start from snapshot + 1 exec:   {from_snap * 1000:7.0f} ms")
    finally:
        gc(backend, run_id=run_id)


if __name__ == "__main__":
    main()
