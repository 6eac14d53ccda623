"""What the impossible twins cost: grading with and without the twin run, validation with and
without finding the effective twins, from one run.

A result's ``timings`` hold the whole of grading (``grading``), the twin run's own seconds
(``twins``: a fresh container, the same grading with the twin test patch, beside the graded
run) and what grading waited for it after its own runs (``twins_wait``): grading without the
twins took ``grading - twins_wait``. The validation record of each instance image holds its
phases (``base``, ``gold``, ..., ``twins``; ``twins_prepare``, the twins' container made
beside the base and gold runs, overlaps them and is not added). Per instance: grading
without and with the twins, their ratio, the twin run's seconds (the extra CPU), validation
seconds without and with the twins phase, and the twin check (checked, twins used, passed,
why not). Then the sums over the instances whose verdict was twin-checked (the ones that
need it) and over all.

The twin run shares the host with the graded run, so ``grading - twins_wait`` is the graded
run's time *under* that load. ``--without RUN_DIR``, a run of the same instances with the
setting ``twin_check`` off, gives grading and validation as they are without twins at all
(its grading time; the validation records without ``-tw1`` in the data directory).

Run (after ``swe-green run --participant gold`` with validation on, and the same with
``SWE_GREEN_TWIN_CHECK=false`` for ``--without``):
``python bench/twin_cost.py RUN_DIR [--without RUN_DIR] [--data-dir DIR]`` (``--data-dir``:
where the validation records are, by default ``SWE_GREEN_DATA_DIR``); ``--json`` prints the
rows as JSON; ``--smoke``: the report of a small run directory written here (no Docker).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from orchestrator.models import InstanceResult, Status, TwinCheck, TwinRecord  # noqa: E402


def validation_timings(data_dir: Path | None, twins: bool = True) -> dict[str, dict[str, float]]:
    """Validation record tag (``<instance id, lower case>-<key>...``) -> its phase seconds,
    of the records that hold the twins (``-tw1``), or with ``twins`` False of those that do
    not."""
    if data_dir is None or not (data_dir / "validation").is_dir():
        return {}
    found: dict[str, dict[str, float]] = {}
    paths = [
        path for path in (data_dir / "validation").glob("*.json")
        if path.name.endswith("-tw1.json") == twins
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
        grading = result.timings.get("grading", 0.0) - result.timings.get("twins_wait", 0.0)
        twins = result.timings.get("twins", 0.0)
        wait = result.timings.get("twins_wait", 0.0)
        validation = _validation_of(result.instance_id, records)
        check = result.twin_check
        out.append(
            {
                "instance": result.instance_id,
                "status": result.status.value,
                "reason": result.reason.value,
                "grading": round(grading, 1),
                "with_twins": round(grading + wait, 1),
                "twins": round(twins, 1),
                "ratio": round((grading + wait) / grading, 3) if grading else None,
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
        f"({ratio}; the twin runs {twins:.1f} s beside); validation {without:.1f} s, with "
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
            timings={"grading": 10.0 + twins, "twins": 2 * twins, "twins_wait": twins},
            twin_check=check,
        )  # fmt: skip
        (directory / "instances" / name).mkdir(parents=True)
        (directory / "instances" / name / "result.json").write_text(result.model_dump_json())
    (directory / "data" / "validation").mkdir(parents=True)
    record = {"timings": {"base": 3.0, "gold": 5.0, "twins": 2.0}}
    (directory / "data" / "validation" / "a__a-1-key-uw3-tw1.json").write_text(json.dumps(record))
    return directory, directory / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, nargs="?")
    parser.add_argument("--without", type=Path, help="the same instances, twin_check off")
    parser.add_argument("--data-dir", type=Path, default=os.environ.get("SWE_GREEN_DATA_DIR"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="a small run written here")
    args = parser.parse_args()
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            run_dir, data_dir = _smoke(Path(tmp))
            table = rows(run_dir, data_dir)
            assert [r["ratio"] for r in table] == [1.2, 1.0], table
            assert [r["twins"] for r in table] == [4.0, 0.0], table
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
