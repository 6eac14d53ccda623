"""Cold validation sweep: what a measured sweep of a sample cost, and what the same sweep of a
larger selection would cost on this host, extrapolated from it.

Reads the ``validation.json`` of every instance of a ``swe-green validate`` run directory
(each holds ``timings``: ``setup`` = phases 1-3, ``base_commit`` = phase 4, ``validation``;
and ``env_cache_hit``: whether its environment was built by another instance) and the wall
time of the sweep (``--wall`` seconds, or the first ``validation.json``'s directory's
creation to the last one written). Prints the slot time per phase and the measured wall.

With ``--target FILE`` (instance ids, one a line) and ``--dataset`` (the rows, for their
repository, version and the recipes' instance pins), it extrapolates, and says so: per
repository, the mean build time of the sample's environments times the target's number of
environments, plus the mean per-instance time (phase 4, validation, set-up when the
environment was cached) times the target's number of instances; the target's slot time over
the sample's gives the wall time at the sample's own parallel efficiency. A repository
missing from the sample is reported and counted at the sample's overall means.

Run: ``python bench/cold_sweep.py RUN_DIR [--wall S] [--target IDS --dataset JSONL]``;
``--smoke``: a made-up run directory of four instances (seconds; what CI runs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

RECIPES = Path(__file__).resolve().parent.parent / "orchestrator" / "data" / "recipes.json"


@dataclass(frozen=True)
class Row:
    """One instance of the measured sweep."""

    instance_id: str
    repo: str
    ok: bool
    setup: float
    phase4: float
    validation: float
    built_env: bool

    @property
    def total(self) -> float:
        return self.setup + self.phase4 + self.validation


def read_run(run_dir: Path) -> tuple[list[Row], float]:
    """The rows of a sweep's run directory, and its wall time from the files' times."""
    rows, times = [], []
    for path in sorted(run_dir.glob("instances/*/validation.json")):
        data = json.loads(path.read_text())
        t = data.get("timings") or {}
        rows.append(
            Row(
                instance_id=data["instance_id"],
                repo=data["repo"],
                ok=bool(data["ok"]),
                setup=float(t.get("setup", 0.0)),
                phase4=float(t.get("base_commit", 0.0)),
                validation=float(t.get("validation", 0.0)),
                built_env=not data.get("env_cache_hit", True),
            )  # fmt: skip
        )
        times.append(path.stat().st_mtime)
    config = run_dir / "config.json"
    start = config.stat().st_mtime if config.exists() else min(times, default=0.0)
    return rows, (max(times) - start) if times else 0.0


def env_keys(rows: list[dict], recipes: dict[tuple[str, str], dict]) -> set[tuple[str, str, str]]:
    """The environments a selection needs: one per repository version, and one more for each
    instance with frozen pins of its own."""
    keys = set()
    for row in rows:
        recipe = recipes.get((row["repo"], row["version"])) or {}
        own = (recipe.get("instance_pins") or {}).get(row["instance_id"])
        keys.add((row["repo"], row["version"], json.dumps(own, sort_keys=True) if own else ""))
    return keys


def extrapolate(
    sample: list[Row], target_rows: list[dict], recipes: dict[tuple[str, str], dict]
) -> dict[str, object]:
    """The target's slot time from the sample's per-repository means (see the module doc)."""
    builds: dict[str, list[float]] = defaultdict(list)
    per_instance: dict[str, list[float]] = defaultdict(list)
    for row in sample:
        if row.built_env:
            builds[row.repo].append(row.setup)
        per_instance[row.repo].append(
            row.phase4 + row.validation + (0 if row.built_env else row.setup)
        )
    all_builds = [t for ts in builds.values() for t in ts] or [0.0]
    all_instances = [t for ts in per_instance.values() for t in ts] or [0.0]
    envs_by_repo: dict[str, int] = defaultdict(int)
    for repo, _, _ in env_keys(target_rows, recipes):
        envs_by_repo[repo] += 1
    instances_by_repo: dict[str, int] = defaultdict(int)
    for row in target_rows:
        instances_by_repo[row["repo"]] += 1
    lines, slot, missing = [], 0.0, []
    for repo in sorted(instances_by_repo):
        if repo not in per_instance:
            missing.append(repo)
        build = statistics.mean(builds.get(repo) or all_builds)
        each = statistics.mean(per_instance.get(repo) or all_instances)
        repo_slot = build * envs_by_repo[repo] + each * instances_by_repo[repo]
        slot += repo_slot
        lines.append((repo, envs_by_repo[repo], build, instances_by_repo[repo], each, repo_slot))
    return {"lines": lines, "slot": slot, "missing": missing}


def report(rows: list[Row], wall: float, target: dict[str, object] | None) -> None:
    slot = {
        "set-up, phases 1-3 (environment builds)": sum(r.setup for r in rows if r.built_env),
        "set-up, phases 1-3 (environment cached)": sum(r.setup for r in rows if not r.built_env),
        "phase 4": sum(r.phase4 for r in rows),
        "validation": sum(r.validation for r in rows),
    }
    total = sum(slot.values())
    envs = sum(r.built_env for r in rows)
    print(f"measured: {len(rows)} instances ({sum(r.ok for r in rows)} valid), {envs} "
          f"environments built; wall {wall:.0f} s ({wall / 3600:.2f} h)")  # fmt: skip
    print("| phase | slot s | share |\n|---|---|---|")
    for name, seconds in slot.items():
        print(
            f"| {name} | {seconds:,.0f} | {seconds / total:.0%} |" if total else f"| {name} | 0 | |"
        )
    print(f"| **all** | **{total:,.0f}** | slot/wall = {total / wall:.2f} |" if wall else "")
    if target is None:
        return
    print("\nEXTRAPOLATED (not measured) to the target selection:")
    print("| repository | envs | mean build s | instances | mean per instance s | slot s |")
    print("|---|---|---|---|---|---|")
    for repo, n_env, build, n_inst, each, repo_slot in target["lines"]:  # type: ignore[attr-defined]
        print(f"| {repo} | {n_env} | {build:.0f} | {n_inst} | {each:.0f} | {repo_slot:,.0f} |")
    target_slot = float(target["slot"])  # type: ignore[arg-type]
    factor = target_slot / total if total else 0.0
    hours = wall * factor / 3600
    print(f"target slot {target_slot:,.0f} s = {factor:.2f} x the sample's; at the sample's "
          f"slot/wall, wall about {wall * factor:,.0f} s ({hours:.2f} h)")  # fmt: skip
    if target["missing"]:
        print(f"repositories not in the sample (counted at its overall means): {target['missing']}")


def smoke() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "validate-smoke"
        made = [
            ("a__a-1", "a/a", "1", False, 100.0), ("a__a-2", "a/a", "1", True, 2.0),
            ("b__b-1", "b/b", "1", False, 50.0), ("b__b-2", "b/b", "2", False, 60.0),
        ]  # fmt: skip
        for iid, repo, version, hit, setup in made:
            (run / "instances" / iid).mkdir(parents=True)
            (run / "instances" / iid / "validation.json").write_text(json.dumps({
                "instance_id": iid, "repo": repo, "version": version, "ok": True,
                "env_cache_hit": hit,
                "timings": {"setup": setup, "base_commit": 5.0, "validation": 10.0},
            }))  # fmt: skip
        rows, _ = read_run(run)
        target_rows = [
            {"instance_id": f"a__a-{i}", "repo": "a/a", "version": str(i % 2)} for i in range(4)
        ]
        result = extrapolate(rows, target_rows, {})
        # a/a: 2 environments of 100 s, 4 instances of (15 + 2 cached set-up) / 2 ... mean 16
        assert abs(float(result["slot"]) - (2 * 100 + 4 * statistics.mean([15.0, 17.0]))) < 1e-6, (
            result
        )  # type: ignore[arg-type]
        report(rows, 120.0, result)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dir", nargs="?", type=Path, help="a swe-green validate run directory")
    parser.add_argument("--wall", type=float, help="the sweep's wall time, seconds")
    parser.add_argument("--target", type=Path, help="instance ids to extrapolate to, one a line")
    parser.add_argument("--dataset", type=Path, help="the dataset rows (.jsonl) of the target")
    parser.add_argument("--smoke", action="store_true", help="a made-up run directory (CI)")
    args = parser.parse_args()
    if args.smoke:
        smoke()
        return
    if args.run_dir is None:
        parser.error("give a run directory, or --smoke")
    rows, wall = read_run(args.run_dir)
    wall = args.wall or wall
    target = None
    if args.target is not None:
        if args.dataset is None:
            parser.error("--target needs --dataset")
        ids = set(args.target.read_text().split())
        dataset = [
            json.loads(line) for line in args.dataset.read_text().splitlines() if line.strip()
        ]
        recipes = {(r["repo"], r["version"]): r for r in json.loads(RECIPES.read_text())["recipes"]}
        target = extrapolate(rows, [r for r in dataset if r["instance_id"] in ids], recipes)
    report(rows, wall, target)


if __name__ == "__main__":
    main()
