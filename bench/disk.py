"""Disk budget figures: how fast a runaway writer is stopped, and how much it wrote past the
budget. For each writer (big blocks, 4 KiB files, a dd of 64 MiB blocks), a container with a
budget of --budget MiB runs it until the disk watcher kills the container. The writer logs
(wall clock, bytes written) every 8 MiB; the figures are: the write rate, the seconds from
crossing the budget to the container's stop, the bytes in the writable layer past the budget,
and what one measurement (``du`` of the upper directory) costs.
Run: python bench/disk.py [--budget 200] [--repeat 3] [--image swe-green/base:py3.11];
``--smoke``: a 24 MiB budget, one run per writer, no dd writer (its block is 64 MiB): seconds.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

from orchestrator.housekeeping.gc import gc
from orchestrator.sandbox import DiskLimitExceeded, Limits
from orchestrator.sandbox.docker import DockerSandbox as Sandbox
from orchestrator.sandbox.docker import connect, writable_layer_dir
from orchestrator.settings import EnvironmentConfig

# each writer appends "<time.time()> <bytes written>" to /tmp/progress every 8 MiB
WRITERS = {
    "1 MiB blocks": (
        "import time\nblock = b'x' * (1 << 20)\nn = 0\n"
        "with open('/tmp/big', 'wb', buffering=0) as f, open('/tmp/progress', 'a') as log:\n"
        "    while True:\n        f.write(block); n += len(block)\n"
        "        if n % (8 << 20) == 0: log.write(f'{time.time()} {n}\\n'); log.flush()\n"
    ),
    "4 KiB files": (
        "import os, time\nblock = b'x' * 4096\nn = 0\nlog = open('/tmp/progress', 'a')\n"
        "while True:\n    d = f'/tmp/many/{n >> 22}'\n    os.makedirs(d, exist_ok=True)\n"
        "    with open(f'{d}/{n}', 'wb') as f: f.write(block)\n    n += 4096\n"
        "    if n % (8 << 20) == 0: log.write(f'{time.time()} {n}\\n'); log.flush()\n"
    ),
    "dd 64 MiB blocks": (
        "import subprocess, time\nn = 0\nlog = open('/tmp/progress', 'a')\ni = 0\n"
        "while True:\n    subprocess.run(['dd', 'if=/dev/zero', f'of=/tmp/dd{i}', 'bs=64M',"
        " 'count=1', 'status=none'])\n    n += 64 << 20; i += 1\n"
        "    log.write(f'{time.time()} {n}\\n'); log.flush()\n"
    ),
}


def run_writer(client, image: str, run_id: str, source: str, budget: int) -> dict[str, float]:
    sb = Sandbox.start(
        client, image, run_id=run_id, instance_id="bench-disk",
        limits=Limits(disk=budget, disk_poll=1.0), network=False,
    )  # fmt: skip
    try:
        sb.write_file("/tmp/writer.py", source)
        started = time.time()
        try:
            sb.exec(["python3", "/tmp/writer.py"], timeout=300)
        except DiskLimitExceeded:
            pass
        watcher = sb.disk_watcher
        assert watcher is not None and watcher.exceeded_at is not None, "the writer was not stopped"
        stopped = time.time() - (time.monotonic() - watcher.exceeded_at)
        rows = [line.split() for line in sb.read_file("/tmp/progress").decode().splitlines()]
        points = [(float(t), int(n)) for t, n in rows if t and n]
        if not points:
            raise RuntimeError("the writer was stopped before its first progress line")
        crossed = next((t for t, n in points if n > budget), points[-1][0])
        final = watcher.measure() or watcher.exceeded_size
        rate = points[-1][1] / max(points[-1][0] - started, 1e-6)
        probe = time.perf_counter()
        watcher.measure()
        return {
            "rate": rate,
            "seconds": max(stopped - crossed, 0.0),
            "past": final - budget,
            "du": time.perf_counter() - probe,
        }
    finally:
        sb.remove()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--image", default=EnvironmentConfig().base_image())
    parser.add_argument("--budget", type=int, default=200, help="MiB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="24 MiB, one run, no dd writer")
    args = parser.parse_args()
    if args.smoke:
        args.budget, args.repeat = 24, 1
    writers = {k: v for k, v in WRITERS.items() if not (args.smoke and k.startswith("dd "))}
    backend = connect()
    client = backend.client
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    budget = args.budget << 20
    probe = Sandbox.start(client, args.image, run_id=run_id, instance_id="bench-disk")
    how = "du of the upper directory" if writable_layer_dir(client, probe.id) else "API"
    probe.remove()
    print(f"budget {args.budget} MiB, measured by {how}, {args.repeat} runs per writer")
    print(f"{'writer':18} {'MB/s':>7} {'stop s (med/max)':>18} {'MiB past (med/max)':>20} du ms")
    try:
        for name, source in writers.items():
            runs = [
                run_writer(client, args.image, run_id, source, budget) for _ in range(args.repeat)
            ]
            secs = [r["seconds"] for r in runs]
            past = [r["past"] / (1 << 20) for r in runs]
            print(
                f"{name:18} {statistics.median(r['rate'] for r in runs) / 1e6:7.0f} "
                f"{statistics.median(secs):8.2f} / {max(secs):6.2f}   "
                f"{statistics.median(past):8.0f} / {max(past):6.0f}    "
                f"{statistics.median(r['du'] for r in runs) * 1000:5.1f}"
            )
    finally:
        gc(backend, run_id=run_id)


if __name__ == "__main__":
    main()
