"""History hygiene: what the clean ``.git`` of phase 4 costs, against the earlier way.

Usage: ``python bench/hygiene.py MIRROR_DIR INSTANCE_ID [INSTANCE_ID ...]``
(``--dataset``, else ``SWE_GREEN_DATASET`` or ``../shared/data/swe-bench-verified.jsonl``, gives
the commits); ``--smoke``: the synthetic instances' mirrors instead (seconds).

For each instance, on the host (no container needed):
- *now*: :func:`export_clean_git` (a fresh repository with one pack of what the base
  reaches): seconds, pack size (what the instance image's layer holds of ``.git``);
- *before*: a ``--no-hardlinks`` clone of the mirror checked out at the base, remotes and
  refs removed, reflogs expired, ``git gc --prune=now``: seconds and ``.git`` size; and how
  many commits the base does not reach are still readable afterwards (the leak: a partial
  clone's promisor pack is never pruned).
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.dataset.synthetic import build_synthetic  # noqa: E402
from orchestrator.repos.clean_history import export_clean_git  # noqa: E402


def _git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _unreachable_commits(git_dir: Path) -> int:
    objects = _git("cat-file", "--batch-all-objects", "--batch-check=%(objecttype) %(objectname)",
                   cwd=git_dir)  # fmt: skip
    commits = {line.split()[1] for line in objects.splitlines() if line.startswith("commit ")}
    reachable = set(_git("rev-list", "--all", cwd=git_dir).split())
    return len(commits - reachable)


def before(mirror: Path, base: str, work: Path) -> dict[str, float]:
    started = time.monotonic()
    _git("clone", "-q", "--no-hardlinks", "--no-checkout", str(mirror), str(work))
    _git("-c", "advice.detachedHead=false", "checkout", "-q", "--detach", base, cwd=work)
    _git("checkout", "-q", "-B", "main", cwd=work)
    _git("remote", "remove", "origin", cwd=work)
    for ref in _git("for-each-ref", "--format=%(refname)", cwd=work).split():
        if ref != "refs/heads/main":
            _git("update-ref", "-d", ref, cwd=work)
    _git("reflog", "expire", "--expire=now", "--all", cwd=work)
    _git("gc", "-q", "--prune=now", cwd=work)
    seconds = time.monotonic() - started
    return {
        "seconds": round(seconds, 1),
        "git_mb": round(_size(work / ".git") / 1e6, 1),
        "unreachable_commits": _unreachable_commits(work),
    }


def now(mirror: Path, base: str, dest: Path) -> dict[str, float]:
    history = export_clean_git(mirror, base, dest)
    return {
        "seconds": history.seconds,
        "git_mb": round(_size(dest) / 1e6, 1),
        "commits": history.commits,
        "unreachable_commits": _unreachable_commits(dest),
    }


def measure(mirror_dir: Path, ids: list[str], dataset: str) -> None:
    rows = {}
    for line in open(dataset):
        row = json.loads(line)
        if row["instance_id"] in ids:
            rows[row["instance_id"]] = row
    missing = [iid for iid in ids if iid not in rows]
    if missing:
        sys.exit(f"not in {dataset}: {', '.join(missing)}; give instance ids of that dataset")
    print(f"{'instance':32} {'before s':>9} {'before MB':>10} {'leaked':>7}"
          f" {'now s':>7} {'now MB':>7} {'leaked':>7}")  # fmt: skip
    for iid in ids:
        row = rows[iid]
        mirror = mirror_dir / f"{row['repo'].replace('/', '__')}.git"
        with tempfile.TemporaryDirectory() as tmp:
            old = before(mirror, row["base_commit"], Path(tmp) / "old")
            new = now(mirror, row["base_commit"], Path(tmp) / "new.git")
        print(f"{iid:32} {old['seconds']:9.1f} {old['git_mb']:10.1f} "
              f"{old['unreachable_commits']:7d} {new['seconds']:7.1f} {new['git_mb']:7.1f} "
              f"{new['unreachable_commits']:7d}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("mirror_dir", nargs="?", type=Path, help="bare mirrors, owner__name.git")
    parser.add_argument("instance_ids", nargs="*", metavar="INSTANCE_ID")
    parser.add_argument("--dataset", help="JSONL of the instances (default: see above)")
    parser.add_argument("--smoke", action="store_true", help="the synthetic instances, seconds")
    args = parser.parse_args()
    if args.smoke:
        with tempfile.TemporaryDirectory(prefix="swe-green-bench-") as tmp:
            synth = build_synthetic(Path(tmp) / "synth")
            ids = [json.loads(line)["instance_id"] for line in open(synth / "instances.jsonl")]
            measure(synth / "mirrors", ids[:1], str(synth / "instances.jsonl"))
        return
    if args.mirror_dir is None or not args.instance_ids:
        parser.error("give MIRROR_DIR and at least one INSTANCE_ID (or --smoke)")
    default = os.environ.get("SWE_GREEN_DATASET", "../shared/data/swe-bench-verified.jsonl")
    measure(args.mirror_dir, args.instance_ids, args.dataset or default)


if __name__ == "__main__":
    main()
