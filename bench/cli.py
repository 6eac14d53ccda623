"""How fast the command line answers: ``--help``, ``--version`` and usage errors, whole process.

Each case is the installed ``swe-green`` script (``.venv/bin/swe-green`` beside this checkout,
else the one on PATH) started as a user starts it, timed from its start to its exit, against
``python -c pass`` (the interpreter's own start-up) started the same way in turn. Printed per
case: the median wall and CPU seconds (user + system, the kernel's accounting of the child),
and the median of the pairwise wall ratios. The target is 0.3 s for each: judged on the CPU
seconds, which a quiet machine's wall time approaches (on a loaded one the wall time is
mostly waiting for a core: compare ``x pass``).

Run: python bench/cli.py [--runs 15]; ``--smoke``: three runs of three cases (seconds).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 0.3
ROOT = Path(__file__).resolve().parents[1]

# (what is asked, the arguments): the root's answers, and a usage error of each kind of command
CASES: list[tuple[str, list[str]]] = [
    ("root --help", ["--help"]),
    ("--version", ["--version"]),
    ("no such command", ["nope"]),
    ("group --help", ["images", "--help"]),
    ("gc --help", ["gc", "--help"]),
    ("inspect --help", ["inspect", "--help"]),
    ("run --help", ["run", "--help"]),
    ("run: no such option", ["run", "--nope"]),
    ("serve: no such option", ["serve", "--nope"]),
    ("assess: no such option", ["assess", "--nope"]),
    ("participant gold: no such option", ["participant", "gold", "--nope"]),
    ("report: missing argument", ["report"]),
    ("validate: bad value", ["validate", "--concurrency", "0"]),
]
SMOKE = ["root --help", "--version", "run: no such option"]


def _script() -> str:
    beside = ROOT / ".venv" / "bin" / "swe-green"
    found = str(beside) if beside.exists() else shutil.which("swe-green")
    if found is None:
        sys.exit("no swe-green script: run scripts/setup first")
    return found


def _timed(argv: list[str]) -> tuple[float, float, int]:
    """(wall s, cpu s, exit status) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, env={**os.environ, "COLUMNS": "100"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def measure(cases: list[tuple[str, list[str]]], runs: int) -> list[str]:
    script = _script()
    baseline = [sys.executable, "-c", "pass"]
    lines = [
        f"{'case':34} {'exit':>4} {'wall s':>7} {'cpu s':>6} {'x pass':>7}  target {TARGET_S} cpu s"
    ]
    for name, args in cases:
        _timed([script, *args])  # warm the page cache and the bytecode
        walls, cpus, ratios, codes = [], [], [], set()
        for _ in range(runs):
            wall, cpu, code = _timed([script, *args])
            base, _, _ = _timed(baseline)
            walls.append(wall)
            cpus.append(cpu)
            ratios.append(wall / base)
            codes.add(code)
        wall = statistics.median(walls)
        verdict = "ok" if statistics.median(cpus) <= TARGET_S else "OVER"
        lines.append(
            f"{name:34} {','.join(map(str, sorted(codes))):>4} {wall:7.3f} "
            f"{statistics.median(cpus):6.3f} {statistics.median(ratios):7.1f}  {verdict}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs of each case")
    parser.add_argument("--smoke", action="store_true", help="three runs of three cases")
    args = parser.parse_args()
    cases = [c for c in CASES if c[0] in SMOKE] if args.smoke else CASES
    for line in measure(cases, 3 if args.smoke else args.runs):
        print(line, flush=True)


if __name__ == "__main__":
    main()
