"""The inferred set-up strategy against the recipes on the release-sdist proxies of django,
scikit-learn and matplotlib (``bench/proxy_mirror.py``: one release commit per version, dated
at its sdist's build, which the inference resolves dependencies as of; one proxy base per
instance, dated at its pull request's creation).

Reads the two ``swe-green validate`` sweeps of the proxy dataset, ``--strategy infer`` and
``--strategy recipe`` (run beside each other: the recipe sweep gives the outcomes and the
times), and the proxy's build directory (``--proxy``: its ``prepare.jsonl`` and mirrors) for
the release each version stands on and the date the inference resolved as of. Then the
tables of ``bench/infer_sweep.py``: per repository and version, the time ratio, every
failure class; then each instance either sweep failed, with both outcomes and its cause.

Run: ``python bench/infer_proxy.py INFER_RUN RECIPE_RUN --proxy OUT``; ``--smoke``: made-up
sweeps and proxy records (what CI runs).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from infer_sweep import _evidence, _records, report  # noqa: E402

from orchestrator.validation.sweep import SweepRecord  # noqa: E402


def _commit_day(mirror: Path, commit: str) -> str:
    """The day ``commit`` is dated at in ``mirror`` (``-`` when the mirror lacks it)."""
    shown = subprocess.run(
        ["git", "--git-dir", str(mirror), "show", "-s", "--format=%cs", commit],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return shown.stdout.strip() if shown.returncode == 0 else "-"


def releases(proxy: Path, ids: set[str]) -> None:
    """One row per instance of the sweep: its version, the release standing for it, the day
    the release commit is dated at (the inference's cut-off) and the base's."""
    path = proxy / "prepare.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    print("| instance | version | release | release commit (resolved as of) | proxy base |")
    print("|---|---|---|---|---|")
    for rec in sorted(
        records, key=lambda r: (r["repo"], [int(p) for p in r["version"].split(".")])
    ):
        if rec["instance_id"] not in ids or not rec["proxy_base"]:
            continue
        mirror = proxy / "mirrors" / f"{rec['repo'].replace('/', '__')}.git"
        print(
            f"| {rec['instance_id']} | {rec['version']} | {rec['release']} | "
            f"{_commit_day(mirror, rec['release_commit'])} | "
            f"{_commit_day(mirror, rec['proxy_base'])} |"
        )
    print()


# what a failed instance's evidence (its last error line) says of the cause, on these proxies
PROXY_CAUSES: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"SyntaxError: Generator expression must be parenthesized"),
        "the release's code does not compile on Python 3.9, the stand-in for the 3.5-3.7 "
        "of its day (a generator argument not parenthesized, an error from 3.8 on)",
    ),
]


def causes(
    inferred: dict[str, SweepRecord], recipes: dict[str, SweepRecord], runs: list[Path]
) -> None:
    """One row per instance either sweep failed: both outcomes and the cause (a known
    pattern of its last error line in the inferred run, else the recipe run; else the line
    itself)."""
    failed = sorted(i for i in inferred if not inferred[i].ok or not recipes.get(i, inferred[i]).ok)
    if not failed:
        return
    print("\n| instance | inferred | recipe | cause |\n|---|---|---|---|")
    for iid in failed:
        line = next((found for run in runs if (found := _evidence(run, iid))), "")
        why = next((why for pattern, why in PROXY_CAUSES if pattern.search(line)), line or "-")
        mine = "valid" if inferred[iid].ok else inferred[iid].cause
        theirs = recipes[iid] if iid in recipes else None
        other = "-" if theirs is None else "valid" if theirs.ok else theirs.cause
        print(f"| {iid} | {mine} | {other} | {why} |")


def smoke() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        (out / "prepare.jsonl").write_text(
            json.dumps(
                {
                    "instance_id": "django__django-1",
                    "repo": "django/django",
                    "version": "3.0",
                    "release": "Django==3.0",
                    "release_commit": "a" * 40,
                    "proxy_base": "b" * 40,
                }
            )
            + "\n"  # fmt: skip
        )
        sources = {}
        for name, ok in (("inferred", False), ("recipes", True)):
            record = SweepRecord(
                instance_id="django__django-1", repo="django/django", version="3.0", ok=ok,
                stage="done" if ok else "setup", timings={"setup": 60.0},
                message="" if ok else "environment setup: install failed (install command)",
                cause="" if ok else "install failed", setup_strategy=name,
            )  # fmt: skip
            path = out / f"{name}.jsonl"
            path.write_text(record.model_dump_json() + "\n")
            sources[name] = _records(path)
        releases(out, set(sources["inferred"]))
        report(sources["inferred"], sources["recipes"])
        causes(sources["inferred"], sources["recipes"], [])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("inferred", nargs="?", type=Path, help="the --strategy infer sweep")
    parser.add_argument("recipes", nargs="?", type=Path, help="the --strategy recipe sweep")
    parser.add_argument("--proxy", type=Path, help="bench/proxy_mirror.py's --out directory")
    parser.add_argument("--smoke", action="store_true", help="made-up sweeps (CI)")
    args = parser.parse_args()
    if args.smoke:
        smoke()
        return
    if args.inferred is None or args.recipes is None or args.proxy is None:
        parser.error("give the inferred and the recipe sweeps and --proxy, or --smoke")
    inferred, recipes = _records(args.inferred), _records(args.recipes)
    releases(args.proxy, set(inferred))
    report(inferred, recipes, None, args.inferred)
    causes(inferred, recipes, [args.inferred, args.recipes])


if __name__ == "__main__":
    main()
