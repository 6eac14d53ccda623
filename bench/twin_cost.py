"""What the impossible twins cost: grading with and without the secret pair, validation with
and without finding the effective twins, from one run; and, as a whole, the same predictions
re-graded warm with twin checks on and off, alternated.

A result's ``timings`` hold the whole of grading (``grading``) and the secret pair's own
seconds (``twins``: its two runs of the FAIL_TO_PASS tests, before the official run, and the
containers they start in): grading without the twins took about ``grading - twins`` (the
kept files' commit aside). The validation record of each instance image holds its
phases (``base``, ``gold``, ..., ``twins``; ``twins_prepare``, the twins' container made
beside the base and gold runs, overlaps them and is not added). Per instance: grading
without and with the twins, their ratio, the twin run's seconds (the extra CPU), validation
seconds without and with the twins phase, and the twin check (checked, twins used, passed,
why not). Then the sums over the instances whose verdict was twin-checked (the ones that
need it) and over all.

``--without RUN_DIR``, a run of the same instances with the setting ``twin_check`` off,
gives grading and validation as they are without twins at all (its grading time; the
validation records without ``-tw3`` in the data directory).

``--alternate PREDICTIONS``: the whole cost, as a user pays it. The predictions are graded
once with twin checks on and once off first (environments, and each setting's validation
records: the records with twins are their own), then re-graded warm in the order
on, off, off, on (``--rounds`` times that), each a fresh ``swe-green run --predictions`` at
``--concurrency`` (the cores by default), and the wall times compared: the ratio of the
runs with twins to those without. The settings (dataset, mirrors, data and runs
directories) come from the environment as for ``swe-green`` itself.

Run (after ``swe-green run --participant gold`` with validation on, and the same with
``SWE_GREEN_TWIN_CHECK=false`` for ``--without``):
``python bench/twin_cost.py RUN_DIR [--without RUN_DIR] [--data-dir DIR]`` (``--data-dir``:
where the validation records are, by default ``SWE_GREEN_DATA_DIR``); ``--json`` prints the
rows as JSON; ``python bench/twin_cost.py --alternate PREDICTIONS [--rounds N]
[--concurrency N]``; ``--smoke``: the report of a small run directory written here and the
alternation's schedule (no Docker).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from orchestrator.models import InstanceResult, Status, TwinCheck, TwinRecord  # noqa: E402


def validation_timings(data_dir: Path | None, twins: bool = True) -> dict[str, dict[str, float]]:
    """Validation record tag (``<instance id, lower case>-<key>...``) -> its phase seconds,
    of the records that hold the twins (``-tw3``), or with ``twins`` False of those that do
    not."""
    if data_dir is None or not (data_dir / "validation").is_dir():
        return {}
    found: dict[str, dict[str, float]] = {}
    paths = [
        path for path in (data_dir / "validation").glob("*.json")
        if path.name.endswith("-tw3.json") == twins
    ]  # fmt: skip
    for path in sorted(paths, key=lambda p: p.stat().st_mtime):
        try:
            found[path.name.removesuffix(".json")] = json.loads(path.read_text()).get("timings", {})
        except (OSError, json.JSONDecodeError):
            continue
    return found


def _validation_of(instance_id: str, records: dict[str, dict[str, float]]) -> dict[str, float]:
    """The newest validation timings of ``instance_id``'s image, or {}."""
    prefix = instance_id.lower() + "-"
    matching = [timings for tag, timings in records.items() if tag.startswith(prefix)]
    return matching[-1] if matching else {}


def _grading_of(run_dir: Path | None) -> dict[str, float]:
    """Instance id -> its grading seconds in ``run_dir`` (a run without twins)."""
    if run_dir is None:
        return {}
    found = {}
    for path in run_dir.glob("instances/*/result.json"):
        result = InstanceResult.model_validate_json(path.read_text())
        if "grading" in result.timings:
            found[result.instance_id] = result.timings["grading"]
    return found


def rows(run_dir: Path, data_dir: Path | None, without: Path | None = None) -> list[dict[str, Any]]:
    """One row per instance result under ``run_dir`` (``without``: the same instances'
    run with twin checks off)."""
    records = validation_timings(data_dir)
    plain = validation_timings(data_dir, twins=False)
    graded_plain = _grading_of(without)
    out = []
    for path in sorted(run_dir.glob("instances/*/result.json")):
        result = InstanceResult.model_validate_json(path.read_text())
        twins = result.timings.get("twins", 0.0)
        grading = result.timings.get("grading", 0.0) - twins
        validation = _validation_of(result.instance_id, records)
        check = result.twin_check
        out.append(
            {
                "instance": result.instance_id,
                "status": result.status.value,
                "reason": result.reason.value,
                "grading": round(grading, 1),
                "with_twins": round(grading + twins, 1),
                "twins": round(twins, 1),
                "ratio": round((grading + twins) / grading, 3) if grading else None,
                "validation_without": round(
                    sum(v for k, v in validation.items() if not k.startswith("twins")), 1
                ),
                "validation_twins": round(validation.get("twins", 0.0), 1),
                "grading_off": round(graded_plain.get(result.instance_id, 0.0), 1),
                "validation_off": round(sum(_validation_of(result.instance_id, plain).values()), 1),
                "checked": bool(check and check.checked),
                "used": len(check.twins) if check else 0,
                "passed": len(check.passed) if check else 0,
                "why_unchecked": check.why_unchecked if check else "no twin check recorded",
            }
        )
    return out


def _sums(selected: list[dict[str, Any]], label: str) -> str:
    grading = sum(r["grading"] for r in selected)
    with_twins = sum(r["with_twins"] for r in selected)
    twins = sum(r["twins"] for r in selected)
    without = sum(r["validation_without"] for r in selected)
    found = sum(r["validation_twins"] for r in selected)
    ratio = f"{with_twins / grading:.3f}x" if grading else "-"
    vratio = f"{(without + found) / without:.3f}x" if without else "-"
    line = (
        f"{label} ({len(selected)}): grading {grading:.1f} s, with twins {with_twins:.1f} s "
        f"({ratio}; the secret pairs {twins:.1f} s); validation {without:.1f} s, with "
        f"twins {without + found:.1f} s ({vratio})"
    )
    off = sum(r["grading_off"] for r in selected)
    if off and all(r["grading_off"] for r in selected):
        line += f"; twin checks off: grading {off:.1f} s (with twins {with_twins / off:.3f}x)"
    voff = sum(r["validation_off"] for r in selected)
    if voff and all(r["validation_off"] for r in selected):
        line += f", validation {voff:.1f} s (with twins {(without + found) / voff:.3f}x)"
    return line


def _smoke(directory: Path) -> tuple[Path, Path]:
    """A run directory of two results (one twin-checked) and a validation record."""
    checked = TwinCheck(checked=True, twins=[TwinRecord(test="t", path="p", line=1,
                        original="== 1", mutated="== 2")])  # fmt: skip
    for name, twins, check in (("a__a-1", 2.0, checked), ("b__b-1", 0.0, TwinCheck())):
        result = InstanceResult(
            instance_id=name, status=Status.RESOLVED,
            timings={"grading": 10.0 + twins, "twins": twins},
            twin_check=check,
        )  # fmt: skip
        (directory / "instances" / name).mkdir(parents=True)
        (directory / "instances" / name / "result.json").write_text(result.model_dump_json())
    (directory / "data" / "validation").mkdir(parents=True)
    record = {"timings": {"base": 3.0, "gold": 5.0, "twins": 2.0}}
    (directory / "data" / "validation" / "a__a-1-key-uw3-tw3.json").write_text(json.dumps(record))
    return directory, directory / "data"


SCHEDULE = (True, False, False, True)  # twin checks on, off, off, on: drift cancels out


def schedule(rounds: int) -> list[bool]:
    """Twin checks on or off for each timed re-grade: ``rounds`` times on, off, off, on."""
    return [on for _ in range(rounds) for on in SCHEDULE]


def regrade(predictions: Path, twins: bool, concurrency: int, output: Path) -> float:
    """Seconds of one ``swe-green run --predictions`` with twin checks on or off."""
    env = {**os.environ, "SWE_GREEN_TWIN_CHECK": "true" if twins else "false"}
    command = [
        str(Path(sys.executable).with_name("swe-green")), "run", "--predictions", str(predictions),
        "--concurrency", str(concurrency), "--output", str(output),
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"the run failed ({done.returncode}): {done.stdout[-2000:]}")
    return time.monotonic() - started


def alternate(predictions: Path, rounds: int, concurrency: int, out: Path) -> None:
    """The whole cost: a warm-up grading of each setting, then the alternated re-grades
    (module doc)."""
    for on in (True, False):  # environments, and the validation records of both settings
        took = regrade(predictions, on, concurrency, out / f"warm-{'on' if on else 'off'}")
        print(f"# warm-up (twin checks {'on' if on else 'off'}): {took:.1f} s", flush=True)
    seconds: dict[bool, list[float]] = {True: [], False: []}
    for number, on in enumerate(schedule(rounds), 1):
        took = regrade(predictions, on, concurrency, out / f"{number}-{'on' if on else 'off'}")
        seconds[on].append(took)
        print(f"run {number}: twin checks {'on ' if on else 'off'} {took:.1f} s", flush=True)
    with_twins, without = sum(seconds[True]), sum(seconds[False])
    print(
        f"with twins {with_twins:.1f} s, without {without:.1f} s: "
        f"{with_twins / without:.3f}x ({len(seconds[True])} runs each, concurrency {concurrency})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, nargs="?")
    parser.add_argument("--without", type=Path, help="the same instances, twin_check off")
    parser.add_argument("--data-dir", type=Path, default=os.environ.get("SWE_GREEN_DATA_DIR"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--alternate",
        type=Path,
        metavar="PREDICTIONS",
        help="re-grade these predictions with twin checks on and off",
    )
    parser.add_argument("--rounds", type=int, default=1, help="on, off, off, on: this often")
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, help="where --alternate's runs go (a temp dir)")
    parser.add_argument("--smoke", action="store_true", help="a small run written here")
    args = parser.parse_args()
    if args.alternate is not None:
        out = args.out or Path(tempfile.mkdtemp(prefix="twin-cost-"))
        alternate(args.alternate, args.rounds, args.concurrency, out)
        return
    if args.smoke:
        assert schedule(2) == [True, False, False, True] * 2
        with tempfile.TemporaryDirectory() as tmp:
            run_dir, data_dir = _smoke(Path(tmp))
            table = rows(run_dir, data_dir)
            assert [r["ratio"] for r in table] == [1.2, 1.0], table
            assert [r["twins"] for r in table] == [2.0, 0.0], table
            assert table[0]["validation_without"] == 8.0, table
            _print(table)
        return
    if args.run_dir is None:
        parser.error("RUN_DIR is required (or --smoke)")
    table = rows(args.run_dir, args.data_dir, args.without)
    if args.json:
        print(json.dumps(table, indent=1))
        return
    _print(table)


def _print(table: list[dict[str, Any]]) -> None:
    head = ("instance", "status", "grading", "+twins", "ratio", "twin run", "val", "val+twins",
            "checked")  # fmt: skip
    print("  ".join(f"{h:>10}" if i else f"{h:<36}" for i, h in enumerate(head)))
    for r in table:
        cells = [
            r["status"], r["grading"], r["with_twins"], r["ratio"] or "-", r["twins"],
            r["validation_without"],
            round(r["validation_without"] + r["validation_twins"], 1),
            "yes" if r["checked"] else r["why_unchecked"][:40],
        ]  # fmt: skip
        print(f"{r['instance']:<36}" + "".join(f"  {str(c):>10}" for c in cells))
    print(_sums([r for r in table if r["checked"]], "twin-checked verdicts"))
    print(_sums(table, "all"))


if __name__ == "__main__":
    main()
