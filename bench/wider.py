"""What the wider runs found and cost, over one or more run directories (runs made with
``--wider``, or ``SWE_GREEN_WIDER_TESTS=true``).

Per repository: the resolved verdicts, how many had their wider run compared, how many were
clean and how many had regressions beyond the task's tests (the share, beside PatchDiff's
7.8 % of test-passing patches that fail the developers' full suite), and how many could not
be compared (why). Each regression by instance and test name, with the last line of its
failure; per instance, how many tests of what the gold patch changes differ from gold's
outcome either way (``differs``). Cost per repository: the median wider run's seconds
against the median official run's (``timings["tests"]``) and their median ratio per
instance, and the gold baseline's seconds at validation (``timings["wider"]`` of the
validation records, paid once per instance image).

Run: ``python bench/wider.py RUN_DIR [RUN_DIR ...] [--data-dir DIR ...] [--json]``
(``--data-dir``: where the validation records are, once per data directory, by default
``SWE_GREEN_DATA_DIR``);
``--smoke``: the report of a small run directory written here (no Docker).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from orchestrator.grading.wider import EMPTY_SCOPE, NOTHING_BEYOND  # noqa: E402
from orchestrator.models import InstanceResult, Status, WiderCheck, WiderTest  # noqa: E402

PATCHDIFF_SHARE = 0.078  # PatchDiff: test-passing patches failing the developers' full suite


def load_results(run_dirs: list[Path]) -> list[tuple[str, InstanceResult]]:
    """(run name, result) of every result.json under the run directories."""
    found = []
    for run_dir in run_dirs:
        for path in sorted((run_dir / "instances").glob("*/result.json")):
            result = InstanceResult.model_validate_json(path.read_text())
            found.append((run_dir.name, result))
    return found


def baseline_seconds(data_dir: Path | None) -> dict[str, float]:
    """Validation record name -> the gold baseline's seconds (records that hold one)."""
    if data_dir is None or not (data_dir / "validation").is_dir():
        return {}
    seconds = {}
    for path in (data_dir / "validation").glob("*.json"):
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if record.get("wider") is not None and "wider" in record.get("timings", {}):
            seconds[path.name.lower()] = float(record["timings"]["wider"])
    return seconds


def _baseline_of(instance_id: str, seconds: dict[str, float]) -> float | None:
    key = instance_id.lower()
    return next((s for name, s in seconds.items() if name.startswith(key)), None)


def report(
    results: list[tuple[str, InstanceResult]], baselines: dict[str, float]
) -> dict[str, Any]:
    """The figures, per repository and overall."""
    repos: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"resolved": 0, "compared": 0, "clean": 0, "regressed": 0, "not_compared": {},
                 "regressions": [], "wider_s": [], "tests_s": [], "ratio": [], "baseline_s": {},
                 "instances": []}
    )  # fmt: skip
    for run, result in results:
        if result.status != Status.RESOLVED or result.wider is None:
            continue
        row = repos[result.repo]
        row["resolved"] += 1
        wider = result.wider
        if not wider.ran:
            why = NOTHING_BEYOND if EMPTY_SCOPE in wider.why_not else wider.why_not.split(":", 1)[0]
            row["not_compared"][why] = row["not_compared"].get(why, 0) + 1
            continue
        row["compared"] += 1
        row["clean"] += not wider.regressions
        row["regressed"] += bool(wider.regressions)
        row["regressions"] += [
            {"run": run, "instance": result.instance_id, "test": t.name, "patch": t.patch,
             "last_line": _last_line(t)}
            for t in wider.regressions
        ]  # fmt: skip
        tests = result.timings.get("tests")
        seconds = _baseline_of(result.instance_id, baselines)
        row["instances"].append(
            {"run": run, "instance": result.instance_id, "official_s": tests,
             "wider_s": wider.seconds, "modules": len(wider.files), "compared": wider.compared,
             "left_out": wider.left_out, "differs": len(wider.differs), "baseline_s": seconds}
        )  # fmt: skip
        row["wider_s"].append(wider.seconds)
        if tests:
            row["tests_s"].append(tests)
            row["ratio"].append(wider.seconds / tests)
        if seconds is not None:
            row["baseline_s"][result.instance_id] = seconds
    for row in repos.values():
        for key in ("wider_s", "tests_s", "ratio"):
            row[f"median_{key}"] = round(statistics.median(row[key]), 2) if row[key] else None
            del row[key]
        row["share"] = row["regressed"] / row["compared"] if row["compared"] else None
        row["baseline_s"] = round(sum(row["baseline_s"].values()), 1)
    compared = sum(r["compared"] for r in repos.values())
    regressed = sum(r["regressed"] for r in repos.values())
    ratios = [one["wider_s"] / one["official_s"] for r in repos.values()
              for one in r["instances"] if one["official_s"]]  # fmt: skip
    return {
        "median_ratio": round(statistics.median(ratios), 2) if ratios else None,
        "repos": dict(sorted(repos.items())),
        "resolved": sum(r["resolved"] for r in repos.values()),
        "compared": compared,
        "regressed": regressed,
        "share": regressed / compared if compared else None,
        "patchdiff_share": PATCHDIFF_SHARE,
    }


def _last_line(test: WiderTest) -> str:
    lines = [line.strip() for line in test.excerpt.splitlines() if line.strip()]
    return lines[-1][:160] if lines else ""


def print_report(figures: dict[str, Any]) -> None:
    """The figures as Markdown tables."""
    print(
        "| repository | resolved | compared | clean | with regressions | share | "
        "not compared | median wider s | median official s | median ratio | baseline s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for repo, r in figures["repos"].items():
        share = f"{r['share']:.1%}" if r["share"] is not None else "–"
        why = ", ".join(f"{n} {w}" for w, n in r["not_compared"].items()) or "0"
        print(f"| {repo} | {r['resolved']} | {r['compared']} | {r['clean']} | {r['regressed']} | "
              f"{share} | {why} | {_shown(r['median_wider_s'])} | {_shown(r['median_tests_s'])} | "
              f"{_shown(r['median_ratio'])} | {r['baseline_s']} |")  # fmt: skip
    share = figures["share"]
    shown = f"{share:.1%}" if share is not None else "–"
    print(f"\nall: {figures['regressed']} of {figures['compared']} compared resolved verdicts "
          f"({figures['resolved']} resolved) with regressions beyond the task's tests: {shown} "
          f"(PatchDiff: {figures['patchdiff_share']:.1%}); the wider run's seconds against the "
          f"official run's on the median verdict: {_shown(figures['median_ratio'])}")  # fmt: skip
    print("\n| run | instance | official s | wider s | ratio | modules | compared | left out "
          "| differs | baseline s |\n|---|---|---|---|---|---|---|---|---|---|")  # fmt: skip
    for r in figures["repos"].values():
        for one in r["instances"]:
            official, baseline = one["official_s"], one["baseline_s"]
            ratio = f"{one['wider_s'] / official:.1f}" if official else "–"
            print(f"| {one['run']} | {one['instance']} | {_whole(official)} | "
                  f"{_whole(one['wider_s'])} | {ratio} | {one['modules']} | {one['compared']} | "
                  f"{one['left_out']} | {one['differs']} | {_whole(baseline)} |")  # fmt: skip
    for r in figures["repos"].values():
        for reg in r["regressions"]:
            print(f"- {reg['run']} {reg['instance']}: {reg['test']} ({reg['patch']}) "
                  f"{reg['last_line']}")  # fmt: skip


def _whole(value: float | None) -> str:
    return "–" if value is None else str(round(value))


def _shown(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def _smoke() -> None:
    """A run directory of three results written here, reported."""
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "smoke"
        regression = WiderTest(name="t.py::test_x", gold="PASSED", patch="FAILED",
                               excerpt="____ test_x ____\nE  assert 1 == 2")  # fmt: skip
        rows = [
            InstanceResult(instance_id="a__a-1", repo="a/a", status=Status.RESOLVED,
                           timings={"tests": 10.0},
                           wider=WiderCheck(ran=True, compared=5, seconds=20.0)),
            InstanceResult(instance_id="a__a-2", repo="a/a", status=Status.RESOLVED,
                           timings={"tests": 5.0},
                           wider=WiderCheck(ran=True, compared=4, seconds=5.0,
                                            regressions=[regression], differs=[regression])),
            InstanceResult(instance_id="b__b-1", repo="b/b", status=Status.RESOLVED,
                           wider=WiderCheck(why_not="no gold baseline: none")),
        ]  # fmt: skip
        for result in rows:
            (run / "instances" / result.instance_id).mkdir(parents=True)
            path = run / "instances" / result.instance_id / "result.json"
            path.write_text(result.model_dump_json())
        figures = report(load_results([run]), {})
        assert figures["compared"] == 2 and figures["regressed"] == 1, figures
        assert figures["repos"]["a/a"]["median_ratio"] == 1.5, figures
        assert figures["median_ratio"] == 1.5, figures
        assert [one["differs"] for one in figures["repos"]["a/a"]["instances"]] == [0, 1]
        print_report(figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", type=Path)
    parser.add_argument("--data-dir", type=Path, action="append")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        _smoke()
        return
    default = os.environ.get("SWE_GREEN_DATA_DIR")
    data_dirs = args.data_dir or ([Path(default)] if default else [])
    seconds = {k: v for data_dir in data_dirs for k, v in baseline_seconds(data_dir).items()}
    figures = report(load_results(args.runs), seconds)
    if args.json:
        print(json.dumps(figures, indent=1))
    else:
        print_report(figures)


if __name__ == "__main__":
    main()
