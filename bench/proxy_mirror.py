"""Proxy mirrors for the repositories too large to mirror here (django, scikit-learn,
matplotlib): a bare git repository per repository, built from PyPI release sdists.

For each instance: the release sdist of its version (``pip download --no-deps --no-binary
:all:``) becomes one *release* commit (files the sdist's own ``.gitignore`` ignores, its
``PKG-INFO`` and ``*.egg-info`` left out, so the tree looks like a checkout); the instance's
test patch and then its gold patch are reverse-applied to it (``git apply -R``; then with
less context, ``-C1``; then GNU ``patch -R --fuzz=3``; the method is recorded) and the result
committed as the instance's *proxy base*. A proxy dataset row keeps the instance's id, tests
and patches, with ``base_commit`` = the proxy base and ``environment_setup_commit`` = the
release commit (one environment per version).

Commit dates: a release commit is dated at the sdist's build, its ``PKG-INFO``'s modification
time (pip unpacks the members with their times), as the commit a release is cut from; a proxy
base at the instance's ``created_at`` (its pull request's: the real base commit precedes it
by little), else at its release. Same sdists and rows, same hashes.

Run: python bench/proxy_mirror.py --out proxy [--per-version 3] [--id ID ...]
(``--per-version N``: the first N instances of each version whose proxy base builds)
Then: SWE_GREEN_MIRROR_DIR=<out>/mirrors SWE_GREEN_DATASET=<out>/proxy.jsonl swe-green validate
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel

# the Verified dataset, in the shared data beside the repository
DATASET = Path(__file__).resolve().parents[2] / "shared" / "data" / "swe-bench-verified.jsonl"
REPOS = ("django/django", "scikit-learn/scikit-learn", "matplotlib/matplotlib")
_PYPI_NAME = {
    "django/django": "Django",
    "scikit-learn/scikit-learn": "scikit-learn",
    "matplotlib/matplotlib": "matplotlib",
}
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "proxy",
    "GIT_AUTHOR_EMAIL": "proxy@localhost",
    "GIT_COMMITTER_NAME": "proxy",
    "GIT_COMMITTER_EMAIL": "proxy@localhost",
}


class ProxyRecord(BaseModel):
    """What preparing one instance's proxy did (one line of ``prepare.jsonl``)."""

    instance_id: str
    repo: str
    version: str
    release: str = ""  # the pip requirement, e.g. Django==3.0
    release_commit: str = ""
    proxy_base: str = ""
    test_patch_method: str = ""  # exact | C1 | fuzz | failed
    gold_patch_method: str = ""
    error: str = ""


# the first release of each version on PyPI, in order: a version's own, then the next one's
_RELEASES = {
    "django/django": ["1.11", "2.0", "2.2", "3.0", "3.1", "3.2", "4.0", "4.1", "4.2", "5.0", "5.1"],
    "scikit-learn/scikit-learn": ["0.20.0", "0.21.1", "0.22", "0.23.0", "1.3.0", "1.4.0"],
    "matplotlib/matplotlib": [
        "3.0.0",
        "3.1.0",
        "3.2.0",
        "3.4.0",
        "3.5.0",
        "3.6.0",
        "3.7.0",
        "3.8.0",
    ],
}


def release_candidates(repo: str, version: str) -> list[str]:
    """The pip requirements to try for ``version``: its first release, then the next one."""
    releases = _RELEASES[repo]
    key = tuple(int(p) for p in version.split("."))
    later = [r for r in releases if tuple(int(p) for p in r.split(".")[:2]) >= key]
    return [f"{_PYPI_NAME[repo]}=={r}" for r in later[:2]]


def round_robin(rows: list[dict], per_version: int | None) -> list[dict]:
    """Rows ordered so that every (repo, version) comes early: one of each in turn."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows:
        groups[(row["repo"], row["version"])].append(row)
    ordered: list[dict] = []
    depth = 0
    while True:
        layer = [g[depth] for _, g in sorted(groups.items()) if depth < len(g)]
        if not layer or (per_version is not None and depth >= per_version):
            return ordered
        ordered.extend(layer)
        depth += 1


def wanted(row: dict, done: dict[str, ProxyRecord], per_version: int | None) -> bool:
    """Whether ``row``'s proxy is still to be tried: its version has fewer than
    ``per_version`` proxy bases built (an instance whose patches do not reverse-apply gives
    its place to the version's next one)."""
    if per_version is None:
        return True
    built = [
        rec for rec in done.values()
        if (rec.repo, rec.version) == (row["repo"], row["version"]) and rec.proxy_base
    ]  # fmt: skip
    return len(built) < per_version


def _run(args: list[str], cwd: Path | None = None, stdin: str | None = None, date: int = 0) -> str:
    """``args`` run (git with the proxy's identity; a commit dated ``date``, Unix seconds)."""
    stamp = f"@{date} +0000"
    env = {**os.environ, **_GIT_ENV, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    done = subprocess.run(
        args, cwd=cwd, input=stdin, capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])}: {(done.stderr or done.stdout).strip()[-400:]}")
    return done.stdout


def unpacked_release(requirement: str, sdists: Path) -> Path:
    """The unpacked sdist of ``requirement`` under ``sdists`` (downloaded with pip if absent).

    pip prepares an sdist's metadata after the download, which fails for old releases whose
    ``setup.py`` imports numpy; ``--no-clean`` keeps the unpacked tree all the same.
    """
    dest = sdists / requirement.replace("==", "-")
    if (dest / "setup.py").is_file() or (dest / "pyproject.toml").is_file():
        return dest
    sdists.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=sdists) as tmp:
        args = ["pip", "download", "--quiet", "--no-clean", "--no-deps", "--no-build-isolation"]
        args += ["--no-binary", ":all:"]  # isolation would build numpy &c. from source
        env = {**os.environ, "TMPDIR": tmp}
        subprocess.run(
            [*args, requirement, "-d", str(Path(tmp) / "dist")],
            capture_output=True, text=True, env=env, check=False, timeout=900,
        )  # fmt: skip
        trees = [p.parent for p in Path(tmp).glob("pip-download-*/*/setup.py")]
        trees += [p.parent for p in Path(tmp).glob("pip-download-*/*/pyproject.toml")]
        if not trees:
            raise RuntimeError(f"pip could not download the sdist of {requirement}")
        shutil.rmtree(dest, ignore_errors=True)
        shutil.move(str(trees[0]), dest)
    return dest


def build_date(tree: Path) -> int:
    """When the sdist unpacked at ``tree`` was built (Unix seconds): its ``PKG-INFO``'s
    modification time, which the sdist build writes last (pip unpacks members with their
    times; preparing the metadata afterwards may rewrite sources, as matplotlib 3.0-3.4's
    ``setup.py`` does its ``matplotlibrc``, never ``PKG-INFO``); else the newest member's."""
    info = tree / "PKG-INFO"
    if info.is_file():
        return int(info.stat().st_mtime)
    return max((int(p.lstat().st_mtime) for p in tree.rglob("*") if p.is_file()), default=0)


def base_date(row: dict, release_date: int) -> int:
    """The proxy base's date: the instance's ``created_at`` (its pull request's; the real
    base commit precedes it by little), else its release's."""
    created = row.get("created_at")
    if not created:
        return release_date
    return int(datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp())


# the .gitignore of a release whose sdist has none (scikit-learn, matplotlib): what their
# in-place builds leave, as their repositories ignore it. Without it the compiled extensions
# are untracked files that phase 4's `git clean` removes ("sklearn.__check_build._check_build"
# missing at test time, scikit-learn 0.22).
BUILD_PRODUCTS = """# build products: the sdist has no .gitignore; its repository ignores these
*.so
*.o
*.pyd
*.pyc
__pycache__/
build/
*.egg-info/
.eggs/
"""


def release_commit(requirement: str, work: Path, sdists: Path) -> str:
    """The commit of ``requirement``'s release tree in ``work`` (a branch release/<version>)."""
    branch = "release/" + requirement.split("==")[1]
    if not (work / ".git").is_dir():
        work.mkdir(parents=True, exist_ok=True)
        _run(["git", "init", "--quiet", str(work)])
    known = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", branch],
        cwd=work,
        capture_output=True,
        text=True,
    )
    if known.returncode == 0:
        return known.stdout.strip()
    tree = unpacked_release(requirement, sdists)
    date = build_date(tree)
    _run(["git", "checkout", "--quiet", "--orphan", branch], work)
    _run(["git", "rm", "-r", "-q", "-f", "--ignore-unmatch", "."], work)
    _run(["git", "clean", "-q", "-fdx"], work)
    shutil.copytree(tree, work, dirs_exist_ok=True)
    (work / "PKG-INFO").unlink(missing_ok=True)
    if not (work / ".gitignore").is_file():
        (work / ".gitignore").write_text(BUILD_PRODUCTS)
    for egg in work.glob("*.egg-info"):
        shutil.rmtree(egg)
    _run(["git", "add", "-A", "."], work)
    message = f"release {requirement}"
    _run(["git", "commit", "--quiet", "--no-verify", "-m", message], work, date=date)
    return _run(["git", "rev-parse", "HEAD"], work).strip()


def reverse_apply(patch: str, work: Path) -> str:
    """Reverse-apply ``patch`` in ``work``; the method that worked (exact, C1, fuzz)."""
    attempts = {
        "exact": ["git", "apply", "-R", "--whitespace=nowarn", "-"],
        "C1": ["git", "apply", "-R", "-C1", "--whitespace=nowarn", "-"],
    }
    for method, args in attempts.items():
        try:
            _run(args, work, stdin=patch)
            return method
        except RuntimeError:
            continue
    check = ["patch", "-R", "-p1", "--fuzz=3", "--force", "--no-backup-if-mismatch"]
    try:
        _run([*check, "--dry-run", "--quiet"], work, stdin=patch)
    except RuntimeError as exc:
        raise RuntimeError(f"does not reverse-apply: {exc}") from exc
    _run([*check, "--quiet"], work, stdin=patch)
    return "fuzz"


def proxy_base(row: dict, release: str, work: Path) -> tuple[str, str, str]:
    """The proxy base commit of ``row`` (branch proxy/<id>) and the two patches' methods."""
    branch = f"proxy/{row['instance_id']}"
    _run(["git", "checkout", "--quiet", "-f", "-B", branch, release], work)
    _run(["git", "clean", "-q", "-fdx"], work)
    test_method = reverse_apply(row["test_patch"], work)
    gold_method = reverse_apply(row["patch"], work)
    _run(["git", "add", "-A", "."], work)
    message = f"proxy base of {row['instance_id']} (test {test_method}, gold {gold_method})"
    date = base_date(row, int(_run(["git", "show", "-s", "--format=%ct", release], work)))
    commit = ["git", "commit", "--quiet", "--no-verify", "--allow-empty", "-m", message]
    _run(commit, work, date=date)
    return _run(["git", "rev-parse", "HEAD"], work).strip(), test_method, gold_method


def prepare(row: dict, out: Path) -> ProxyRecord:
    """Build (or reuse) the proxy of one instance and push it to the bare mirror."""
    record = ProxyRecord(instance_id=row["instance_id"], repo=row["repo"], version=row["version"])
    owner_name = row["repo"].replace("/", "__")
    work = out / "work" / owner_name
    mirror = out / "mirrors" / f"{owner_name}.git"
    errors = []
    for requirement in release_candidates(row["repo"], row["version"]):
        try:
            release = release_commit(requirement, work, out / "sdists")
            record.release, record.release_commit = requirement, release
            base, record.test_patch_method, record.gold_patch_method = proxy_base(
                row, release, work
            )
            record.proxy_base = base
            break
        except RuntimeError as exc:
            errors.append(f"{requirement}: {exc}")
    else:
        record.error = " | ".join(errors)[:1500]
        record.test_patch_method = record.test_patch_method or "failed"
        return record
    if not mirror.is_dir():
        _run(["git", "init", "--quiet", "--bare", str(mirror)])
    push = ["git", "push", "--quiet", "--force", str(mirror), "refs/heads/*:refs/heads/*"]
    try:
        _run(push, work)
    except RuntimeError:  # a ref lock left by an interrupted push: once more
        time.sleep(2)
        _run(push, work)
    return record


_DIFF_PATHS = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)


def recontexted(patch: str, base: str, release: str, work: Path) -> str:
    """``patch`` re-made from the proxy (base -> release diff of its files): the same change
    with the release's context lines, so that it applies exactly where it was reversed with
    less context or fuzz."""
    paths = sorted({p for pair in _DIFF_PATHS.findall(patch) for p in pair})
    return _run(["git", "diff", "--binary", "--no-renames", base, release, "--", *paths], work)


def proxy_row(row: dict, rec: ProxyRecord, out: Path) -> dict:
    """The proxy dataset row of ``row``: base and set-up commits at the proxy, patches
    re-made from the proxy when they needed less context or fuzz to reverse."""
    proxy = {**row, "base_commit": rec.proxy_base, "environment_setup_commit": rec.release_commit}
    work = out / "work" / row["repo"].replace("/", "__")
    for key, method in (("test_patch", rec.test_patch_method), ("patch", rec.gold_patch_method)):
        if method != "exact":
            proxy[key] = recontexted(row[key], rec.proxy_base, rec.release_commit, work)
    return proxy


def write_dataset(rows: list[dict], done: dict[str, ProxyRecord], out: Path) -> None:
    """The proxy dataset (out/proxy.jsonl): the rows whose proxy base was built, in order."""
    lines = []
    for row in rows:
        rec = done.get(row["instance_id"])
        if rec is not None and rec.proxy_base:
            lines.append(json.dumps(proxy_row(row, rec, out)) + "\n")
    path = out / "proxy.jsonl"
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(lines))
    tmp.replace(path)


_SMOKE_GOLD = """\
diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""
_SMOKE_TEST = """\
diff --git a/tests/test_calc.py b/tests/test_calc.py
new file mode 100644
--- /dev/null
+++ b/tests/test_calc.py
@@ -0,0 +1,2 @@
+def test_add():
+    assert True
"""


def smoke() -> None:
    """A proxy of one made-up django instance from a release tree put where pip would leave
    it (no PyPI): the proxy base holds the bug and not the test file."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        requirement = release_candidates("django/django", "3.0")[0]
        tree = out / "sdists" / requirement.replace("==", "-")
        (tree / "tests").mkdir(parents=True)
        (tree / "setup.py").write_text("from setuptools import setup\nsetup()\n")
        (tree / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        (tree / "tests" / "test_calc.py").write_text("def test_add():\n    assert True\n")
        row = {"instance_id": "django__django-0", "repo": "django/django", "version": "3.0",
               "patch": _SMOKE_GOLD, "test_patch": _SMOKE_TEST}  # fmt: skip
        record = prepare(row, out)
        assert record.proxy_base and not record.error, record.error
        write_dataset([row], {row["instance_id"]: record}, out)
        work = out / "work" / "django__django"
        shown = _run(["git", "show", f"{record.proxy_base}:calc.py"], work)
        assert "a - b" in shown and (out / "proxy.jsonl").read_text().count("\n") == 1
        print(f"smoke: proxy base {record.proxy_base[:12]} of {requirement} "
              f"(test {record.test_patch_method}, gold {record.gold_patch_method})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--dataset", type=Path, default=DATASET, help="the Verified dataset (default: %(default)s)"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--per-version", type=int, default=None, help="the first N of each version that build"
    )
    parser.add_argument("--id", action="append", default=[], help="only these instances")
    parser.add_argument("--smoke", action="store_true", help="one made-up instance, no PyPI")
    args = parser.parse_args()
    if args.smoke:
        smoke()
        return
    if args.out is None:
        parser.error("--out is required")
    rows = [json.loads(line) for line in Path(args.dataset).read_text().splitlines() if line]
    rows = [r for r in rows if r["repo"] in REPOS and (not args.id or r["instance_id"] in args.id)]
    rows = round_robin(rows, None)
    args.out.mkdir(parents=True, exist_ok=True)
    records_path = args.out / "prepare.jsonl"
    done = {}
    if records_path.exists():
        for line in records_path.read_text().splitlines():
            rec = ProxyRecord.model_validate_json(line)
            done[rec.instance_id] = rec
    for row in rows:
        if row["instance_id"] in done or not wanted(row, done, args.per_version):
            continue
        record = prepare(row, args.out)
        done[row["instance_id"]] = record
        with records_path.open("a") as f:
            f.write(record.model_dump_json() + "\n")
        status = record.error[:200] or f"{record.test_patch_method}/{record.gold_patch_method}"
        print(row["instance_id"], record.release, status, flush=True)
        write_dataset(rows, done, args.out)
    write_dataset(rows, done, args.out)


if __name__ == "__main__":
    main()
