"""Environment cache figures for a synthetic instance: cold setup (phases 1-4 from the base
image) against a cache hit (the same instance again: cache look-up + a container started
from the cached instance image). Run: python bench/setup.py [--instance demo__calc-1] [--runs 3];
``--smoke``: one run (under ``scripts/bench-smoke``, its images stay for the next smoke runs).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from run import ALL_KINDS, SMOKE_CACHE, synthetic_place

from orchestrator.context.run_context import RunContext
from orchestrator.context.run_dir import RunDir
from orchestrator.dataset.instances import load_instances
from orchestrator.environments.build import prepare_instance
from orchestrator.housekeeping.gc import gc
from orchestrator.log import configure_logging
from orchestrator.sandbox.docker import DockerSandbox as Sandbox
from orchestrator.sandbox.docker import connect
from orchestrator.settings import Settings


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--instance", default="demo__calc-1")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="one run")
    args = parser.parse_args()
    configure_logging(level="WARNING")  # the figures alone on stdout
    if args.smoke:
        args.runs = 1
    backend = connect()
    client = backend.client
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    shared = os.environ.get(SMOKE_CACHE)
    warm_already = False
    with (
        synthetic_place("setup", "swe-green/base:py3.11") as (root, synth, prefix),
        tempfile.TemporaryDirectory() as tmp,
    ):
        instance = next(
            i for i in load_instances(str(synth / "instances.jsonl"))
            if i.instance_id == args.instance
        )  # fmt: skip
        cold, warm = [], []
        try:
            for n in range(args.runs):
                settings = Settings(
                    data_dir=root / "data" if shared else Path(tmp) / f"data{n}",
                    mirror_dir=synth / "mirrors", recipes_file=synth / "recipes.json",
                    image_prefix=prefix, setup_strategy="recipe",
                )  # fmt: skip
                ctx = RunContext(settings, backend, run_id, RunDir(Path(tmp) / f"run{n}"))
                gc(backend, run_id=run_id, image_kinds=("env", "instance"))
                t = time.perf_counter()
                prepared = prepare_instance(ctx, instance)
                Sandbox.start(client, prepared.instance_image, run_id=run_id).remove()
                cold.append(time.perf_counter() - t)
                warm_already |= prepared.env_cache_hit
                t = time.perf_counter()
                prepared = prepare_instance(ctx, instance)
                assert prepared.env_cache_hit and prepared.instance_cache_hit
                sandbox = Sandbox.start(client, prepared.instance_image, run_id=run_id)
                sandbox.exec(["true"])
                warm.append(time.perf_counter() - t)
                sandbox.remove()
        finally:
            # the shared smoke cache keeps its images for the next smoke runs
            gc(backend, run_id=run_id, image_kinds=("snapshot",) if shared else ALL_KINDS)
    if warm_already:
        print("note: the environment was cached already (the shared smoke cache): not cold")
    c, w = statistics.median(cold), statistics.median(warm)
    print(f"instance {args.instance}, median of {args.runs} runs")
    print(f"cold setup (phases 1-4, from the base image): {c:7.2f} s")
    print(f"cache hit (look-up + container start + exec): {w:7.2f} s")
    print(f"speed-up: {c / w:.0f}x")


if __name__ == "__main__":
    main()
