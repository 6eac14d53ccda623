"""The inferred set-up strategy against the recipes, on the same instances: the share each
validates, per repository and version, the time per environment built, and every failure
class of the inferred environments with its cause.

Reads two ``swe-green validate`` sweeps (run directories, each instance's
``validation.json``; or records files, JSON lines, e.g. ``docs/validation-records.jsonl``):
``INFERRED`` made with ``--strategy infer`` (no recipe is read: the environments come from
the repositories' own files), ``RECIPES`` with ``--strategy recipe``. Only the instances of
the inferred sweep count; an instance the recipe sweep lacks is shown as ``-`` and left out
of the shares. Time per environment: the set-up (phases 1-3) of the instances that built
their environment (not a cache hit), inferred over recipe.

Run: ``python bench/infer_sweep.py INFERRED RECIPES [--recipe-times RUN]``; ``--smoke``:
two made-up sweeps (what CI runs).
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

from orchestrator.validation.sweep import INFRASTRUCTURE, ROOT_CAUSES, SweepRecord, load_records

CAUSES = {category: fix for category, _, fix in ROOT_CAUSES}
# what an inferred environment's failure message says of its cause, before the sweep's
# root causes (which speak of recipes)
INFERRED_CAUSES: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"No solution found|unsatisfiable", re.I),
        "the requirements the repository lists do not resolve together, as of any cut-off",
    ),
    (
        re.compile(r"Failed to build|build backend returned an error|use_2to3", re.I),
        "a dependency of the commit's day has no wheel for the Python and its sources no "
        "longer build on it",
    ),
    (
        re.compile(r"install failed|install command", re.I),
        "the inferred install fails: see the example's set-up log",
    ),
]


# a set-up killed by the host (exit 137: out of memory on a loaded host), or a failure of the
# host itself (its disk full, its engine gone: infrastructure): no verdict on the
# environment, in either sweep; such an instance is left out of the comparison and listed
KILLED = re.compile(r"\(exit 137\)")


def _records(source: Path) -> dict[str, SweepRecord]:
    return {r.instance_id: r for r in load_records(source)}


def _killed(records: dict[str, SweepRecord]) -> set[str]:
    return {
        i for i, r in records.items()
        if not r.ok and (KILLED.search(r.message) or r.cause == INFRASTRUCTURE)
    }  # fmt: skip


def _built(record: SweepRecord) -> float | None:
    """The seconds of phases 1-3 when this instance built its environment, else None."""
    if record.env_cache_hit or "setup" not in record.timings:
        return None
    return record.timings["setup"]


def _mean(values: list[float]) -> str:
    return f"{statistics.mean(values):.0f}" if values else "-"


def report(
    inferred: dict[str, SweepRecord],
    recipes: dict[str, SweepRecord],
    recipe_times: dict[str, SweepRecord] | None = None,
    evidence: Path | None = None,
) -> None:
    killed = _killed(inferred)
    if killed:
        print(f"left out, no verdict (the set-up killed by the host, exit 137; or the host "
              f"failed: {INFRASTRUCTURE}): {', '.join(sorted(killed))}\n")  # fmt: skip
    inferred = {i: r for i, r in inferred.items() if i not in killed}
    pairs: dict[tuple[str, str], list[str]] = defaultdict(list)
    for iid, record in sorted(inferred.items()):
        pairs[(record.repo, record.version)].append(iid)
    print("| repository | version | instances | inferred valid | recipe valid | "
          "inferred build s | recipe build s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    both = [i for i in inferred if i in recipes]
    for (repo, version), ids in sorted(pairs.items()):
        mine = sum(inferred[i].ok for i in ids)
        theirs = [recipes[i].ok for i in ids if i in recipes]
        builds = [b for i in ids if (b := _built(inferred[i])) is not None]
        timed_rows = recipes if recipe_times is None else recipe_times
        recipe_builds = [
            b for i in ids if i in timed_rows and (b := _built(timed_rows[i])) is not None
        ]
        print(
            f"| {repo} | {version} | {len(ids)} | {mine} | "
            f"{sum(theirs) if theirs else '-'} | {_mean(builds)} | {_mean(recipe_builds)} |"
        )
    mine = sum(inferred[i].ok for i in both)
    theirs = sum(recipes[i].ok for i in both)
    both_ok = sum(inferred[i].ok and recipes[i].ok for i in both)
    print(
        f"\non the {len(both)} instances both sweeps hold: inferred valid {mine}, recipes "
        f"valid {theirs}; inferred valid on {both_ok} of the recipes' {theirs} "
        f"({both_ok / theirs:.0%})"
        if theirs
        else f"\n{len(both)} instances in both sweeps"
    )
    timed = recipes if recipe_times is None else recipe_times
    both_timed = [i for i in inferred if i in timed]
    builds = [b for i in both_timed if (b := _built(inferred[i])) is not None]
    recipe_builds = [b for i in both_timed if (b := _built(timed[i])) is not None]
    if builds and recipe_builds:
        ratio = statistics.mean(builds) / statistics.mean(recipe_builds)
        print(
            f"time per environment built (phases 1-3), on the {len(both_timed)} instances "
            f"the timed recipe sweep holds: inferred {_mean(builds)} s over "
            f"{len(builds)}, recipes {_mean(recipe_builds)} s over {len(recipe_builds)}: "
            f"ratio {ratio:.2f}"
        )
    used = defaultdict(int)
    for record in inferred.values():
        used[record.setup_strategy or "?"] += 1
    print("environments made by: " + ", ".join(f"{k} {v}" for k, v in sorted(used.items())))
    failures(inferred, evidence)


ERROR_LINE = re.compile(r"^(E\s+)?[\w.]*(Error|Exception)\b.*\S")


CONTAINER_PATH = re.compile(r"/(?:root|home)/\S*/([^/\s)]+)")


def _evidence(run_dir: Path | None, iid: str) -> str:
    """The last error line of a failed instance's test output or set-up log (a run
    directory only): what the runner or the install died of."""
    if run_dir is None or not run_dir.is_dir():
        return ""
    folder = run_dir / "instances" / iid
    for name in ("validation_gold_output.txt", "validation_base_output.txt", "setup.log"):
        path = folder / name
        if path.is_file():
            lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines()]
            found = [ln for ln in lines if ERROR_LINE.match(ln)]
            if found:
                # a container's own paths (uv's build cache) shortened to their file
                line = CONTAINER_PATH.sub(r"\1", found[-1])
                return line[:140].replace("|", "/")
    return ""


def failures(inferred: dict[str, SweepRecord], evidence: Path | None = None) -> None:
    """One row per failure class of the inferred sweep: the class, the failing step, how
    many, an example, and the cause (from the message, else the sweep's root-cause
    table)."""
    classes: dict[tuple[str, str, str], list[SweepRecord]] = defaultdict(list)
    for record in inferred.values():
        if not record.ok:
            cause = record.cause or "other"
            why = next(
                (why for pattern, why in INFERRED_CAUSES if pattern.search(record.message)),
                CAUSES.get(cause, "see the example's set-up log"),
            )
            classes[(cause, record.failed_step or record.stage, why)].append(record)
    if not classes:
        print("no inferred environment failed")
        return
    print("\n| failure class | step | instances | example | cause |\n|---|---|---|---|---|")
    for (cause, step, why), records in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        example = records[0]
        message = " ".join(example.message.split())[:160].replace("|", "/")
        print(f"| {cause} | {step} | {len(records)} | {example.instance_id}: {message} | {why} |")
    died = [
        (r.instance_id, _evidence(evidence, r.instance_id)) for rs in classes.values() for r in rs
    ]
    if any(line for _, line in died):
        print("\nwhat each failed instance's tests or install died of (its last error line):")
        for iid, line in sorted(died):
            print(f"- {iid}: {line or '(no error line)'}")


def smoke() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        made = {
            "inferred": [("a__a-1", True, 60.0, "infer", ""), ("a__a-2", False, 70.0, "infer",
                          "environment setup: install failed (install command): no solution")],
            "recipes": [("a__a-1", True, 40.0, "recipe", ""), ("a__a-2", True, 50.0, "recipe", "")],
        }  # fmt: skip
        sources = {}
        for name, rows in made.items():
            path = Path(tmp) / f"{name}.jsonl"
            records = [
                SweepRecord(
                    instance_id=iid, repo="a/a", version="1", ok=ok,
                    stage="done" if ok else "setup", message=message,
                    cause="" if ok else "install failed", timings={"setup": setup},
                    setup_strategy=strategy,
                    failed_step="" if ok else "install: install command",
                )
                for iid, ok, setup, strategy, message in rows
            ]  # fmt: skip
            path.write_text("".join(r.model_dump_json() + "\n" for r in records))
            sources[name] = _records(path)
        assert [r.ok for r in sources["inferred"].values()] == [True, False]
        report(sources["inferred"], sources["recipes"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("inferred", nargs="?", type=Path, help="the --strategy infer sweep")
    parser.add_argument("recipes", nargs="?", type=Path, help="the --strategy recipe sweep")
    parser.add_argument(
        "--recipe-times", type=Path,
        help="a recipe sweep run beside the inferred one (same host, same load): the time "
        "per environment comes from it (its instances only); its outcomes replace RECIPES'",
    )  # fmt: skip
    parser.add_argument("--smoke", action="store_true", help="two made-up sweeps (CI)")
    args = parser.parse_args()
    if args.smoke:
        smoke()
        return
    if args.inferred is None or args.recipes is None:
        parser.error("give the inferred and the recipe sweeps, or --smoke")
    recipes, times = _records(args.recipes), None
    if args.recipe_times is not None:  # its killed set-ups are no verdict: RECIPES' stand
        times = _records(args.recipe_times)
        times = {i: r for i, r in times.items() if i not in _killed(times)}
        recipes |= times
    report(_records(args.inferred), recipes, times, args.inferred)


if __name__ == "__main__":
    main()
