"""The inferred set-up strategy against the recipes on the release-sdist proxies of django,
scikit-learn and matplotlib (``bench/proxy_mirror.py``: one release commit per version, dated
at its sdist's build, which the inference resolves dependencies as of; one proxy base per
instance, dated at its pull request's creation).

Reads the two ``swe-green validate`` sweeps of the proxy dataset, ``--strategy infer`` and
``--strategy recipe`` (run beside each other: the recipe sweep gives the outcomes and the
times), and the proxy's build directory (``--proxy``: its ``prepare.jsonl`` and mirrors) for
the release each version stands on and the date the inference resolved as of. Then the
tables of ``bench/infer_sweep.py``: per repository and version, the time ratio, every
failure class with its cause.

Run: ``python bench/infer_proxy.py INFER_RUN RECIPE_RUN --proxy OUT``; ``--smoke``: made-up
sweeps and proxy records (what CI runs).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from infer_sweep import _records, report  # noqa: E402

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
    inferred = _records(args.inferred)
    releases(args.proxy, set(inferred))
    report(inferred, _records(args.recipes), None, args.inferred)


if __name__ == "__main__":
    main()
