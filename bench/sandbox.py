"""Sandbox figures: container start, exec round trip (p50/p95 over 200 calls), snapshot,
start from snapshot. Run: python bench/sandbox.py [--image swe-green/base:py3.11] [--calls 200]
[--starts 5] [--snapshot-mb 50]; ``--smoke``: 3 calls, 1 start, 1 MB (seconds).
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

from orchestrator.housekeeping.gc import gc
from orchestrator.sandbox.docker import DockerSandbox as Sandbox
from orchestrator.sandbox.docker import connect
from orchestrator.settings import EnvironmentConfig
from sandbox_tools.contract import TESTBED


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--image", default=EnvironmentConfig().base_image())
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--starts", type=int, default=5, help="container starts timed")
    parser.add_argument("--snapshot-mb", type=int, default=50, help="MB written before it")
    parser.add_argument("--smoke", action="store_true", help="3 calls, 1 start, 1 MB")
    args = parser.parse_args()
    if args.smoke:
        args.calls, args.starts, args.snapshot_mb = 3, 1, 1
    backend = connect()
    client = backend.client
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    try:
        starts = []
        for _ in range(args.starts):
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
        blob = f"head -c {args.snapshot_mb * 1_000_000} /dev/urandom > {TESTBED}/blob"
        sb.exec(f"mkdir -p {TESTBED} && {blob}")
        t = time.perf_counter()
        sb.snapshot("swe-green-bench/snap", run_id)
        snap = time.perf_counter() - t
        t = time.perf_counter()
        clone = Sandbox.start(client, f"swe-green-bench/snap:{run_id}", run_id=run_id)
        clone.exec(["true"])
        from_snap = time.perf_counter() - t
        start_ms = statistics.median(starts) * 1000
        print(f"container start (median of {args.starts}):  {start_ms:7.0f} ms")
        print(
            f"exec round trip over {args.calls}:    p50 {percentile(rtts, 0.5) * 1000:5.1f} ms"
            f"   p95 {percentile(rtts, 0.95) * 1000:5.1f} ms"
        )
        print(f"snapshot ({args.snapshot_mb} MB written):       {snap * 1000:7.0f} ms")
        print(f"start from snapshot + 1 exec:   {from_snap * 1000:7.0f} ms")
    finally:
        gc(backend, run_id=run_id)


if __name__ == "__main__":
    main()
