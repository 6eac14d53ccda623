"""bench/proxy_mirror.py: proxy bases from a release tree, with real git (no PyPI: the release
tree is put where the download would leave it)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("proxy_mirror", ROOT / "bench" / "proxy_mirror.py")
assert _spec is not None and _spec.loader is not None
proxy_mirror = importlib.util.module_from_spec(_spec)
sys.modules["proxy_mirror"] = proxy_mirror
_spec.loader.exec_module(proxy_mirror)

FIXED = "def add(a, b):\n    return a + b\n"
BROKEN = "def add(a, b):\n    return a - b\n"
GOLD = proxy_mirror._SMOKE_GOLD  # the smoke mode's gold patch: the bug fixed in calc.py
TEST_PATCH = """\
diff --git a/tests/test_calc.py b/tests/test_calc.py
new file mode 100644
--- /dev/null
+++ b/tests/test_calc.py
@@ -0,0 +1,4 @@
+from calc import add
+
+def test_add():
+    assert add(1, 2) == 3
"""


def _release_tree(out: Path, requirement: str) -> None:
    tree = out / "sdists" / requirement.replace("==", "-")
    (tree / "tests").mkdir(parents=True)
    (tree / "setup.py").write_text("from setuptools import setup\nsetup(name='calc')\n")
    (tree / "calc.py").write_text(FIXED)
    (tree / "tests" / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    (tree / "PKG-INFO").write_text("Metadata-Version: 2.1\n")
    (tree / "Django.egg-info").mkdir()
    (tree / ".gitignore").write_text("*.c\n")
    (tree / "generated.c").write_text("/* cythonized */\n")


def _git(mirror: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(mirror), *args], capture_output=True, text=True, check=True
    ).stdout


def test_proxy_base_is_the_release_with_both_patches_reversed(tmp_path: Path) -> None:
    _release_tree(tmp_path, "Django==3.0")
    row = {"instance_id": "django__django-1", "repo": "django/django", "version": "3.0"}
    record = proxy_mirror.prepare({**row, "patch": GOLD, "test_patch": TEST_PATCH}, tmp_path)
    assert record.error == ""
    assert (record.test_patch_method, record.gold_patch_method) == ("exact", "exact")
    mirror = tmp_path / "mirrors" / "django__django.git"
    assert _git(mirror, "show", f"{record.proxy_base}:calc.py") == BROKEN
    files = _git(mirror, "ls-tree", "-r", "--name-only", record.proxy_base).split()
    assert "tests/test_calc.py" not in files  # the test patch added it: reversed, it is gone
    release = _git(mirror, "ls-tree", "-r", "--name-only", record.release_commit).split()
    # what a checkout would not hold: sdist metadata, files the .gitignore leaves out
    assert not {"PKG-INFO", "generated.c"} & set(release)
    assert _git(mirror, "rev-parse", "release/3.0").strip() == record.release_commit
    assert _git(mirror, "rev-parse", f"{record.proxy_base}^").strip() == record.release_commit


def test_a_patch_that_does_not_reverse_apply_is_recorded(tmp_path: Path) -> None:
    for requirement in proxy_mirror.release_candidates("django/django", "3.0"):
        _release_tree(tmp_path, requirement)
    other = GOLD.replace("return a - b", "return a * b").replace("return a + b", "return 0")
    row = {"instance_id": "django__django-2", "repo": "django/django", "version": "3.0"}
    record = proxy_mirror.prepare({**row, "patch": other, "test_patch": TEST_PATCH}, tmp_path)
    assert record.proxy_base == ""
    assert "Django==3.0: does not reverse-apply" in record.error
    assert "Django==3.1: does not reverse-apply" in record.error


def test_fuzz_is_used_and_recorded(tmp_path: Path) -> None:
    _release_tree(tmp_path, "Django==3.0")
    tree = tmp_path / "sdists" / "Django-3.0"
    (tree / "calc.py").write_text("# header\n\n\n" + FIXED + "\n\ndef sub(a, b):\n    return 0\n")
    # context lines that differ from the release: only patch's fuzz reverses it
    fuzzy = GOLD.replace(" def add(a, b):\n", " def add(x, y):\n")
    row = {"instance_id": "django__django-3", "repo": "django/django", "version": "3.0"}
    record = proxy_mirror.prepare({**row, "patch": fuzzy, "test_patch": TEST_PATCH}, tmp_path)
    assert record.gold_patch_method in ("C1", "fuzz")
    assert "return a - b" in _git(
        tmp_path / "mirrors" / "django__django.git", "show", f"{record.proxy_base}:calc.py"
    )


@pytest.mark.parametrize(
    ("repo", "version", "expected"),
    [
        ("django/django", "3.0", ["Django==3.0", "Django==3.1"]),
        ("django/django", "1.11", ["Django==1.11", "Django==2.0"]),
        ("scikit-learn/scikit-learn", "0.21", ["scikit-learn==0.21.1", "scikit-learn==0.22"]),
        ("matplotlib/matplotlib", "3.7", ["matplotlib==3.7.0", "matplotlib==3.8.0"]),
    ],
)
def test_release_candidates(repo: str, version: str, expected: list[str]) -> None:
    assert proxy_mirror.release_candidates(repo, version) == expected


def test_round_robin_gives_every_version_its_first_instances_first() -> None:
    rows = [{"repo": "r", "version": v, "instance_id": f"{v}-{i}"} for v in "ab" for i in range(3)]
    ordered = [r["instance_id"] for r in proxy_mirror.round_robin(rows, None)]
    assert ordered == ["a-0", "b-0", "a-1", "b-1", "a-2", "b-2"]
    assert len(proxy_mirror.round_robin(rows, 2)) == 4


def test_dataset_rows_point_at_the_proxy(tmp_path: Path) -> None:
    _release_tree(tmp_path, "Django==3.0")
    row = {"instance_id": "django__django-1", "repo": "django/django", "version": "3.0"}
    row |= {"patch": GOLD, "test_patch": TEST_PATCH, "base_commit": "real"}
    done = {
        "django__django-1": proxy_mirror.prepare(row, tmp_path),
        "django__django-2": proxy_mirror.ProxyRecord(
            instance_id="django__django-2", repo="r", version="1", error="x"
        ),
    }
    rows = [row, {**row, "instance_id": "django__django-2"}]
    proxy_mirror.write_dataset(rows, done, tmp_path)
    (only,) = [json.loads(x) for x in (tmp_path / "proxy.jsonl").read_text().splitlines()]
    rec = done["django__django-1"]
    assert only == {
        **row, "base_commit": rec.proxy_base, "environment_setup_commit": rec.release_commit
    }  # fmt: skip


def test_a_patch_reversed_with_fuzz_is_re_made_to_apply_exactly(tmp_path: Path) -> None:
    _release_tree(tmp_path, "Django==3.0")
    tree = tmp_path / "sdists" / "Django-3.0"
    (tree / "calc.py").write_text("# header\n\n\n" + FIXED + "\n\ndef sub(a, b):\n    return 0\n")
    fuzzy = GOLD.replace(" def add(a, b):\n", " def add(x, y):\n")
    row = {"instance_id": "django__django-3", "repo": "django/django", "version": "3.0"}
    row |= {"patch": fuzzy, "test_patch": TEST_PATCH}
    rec = proxy_mirror.prepare(row, tmp_path)
    proxy = proxy_mirror.proxy_row(row, rec, tmp_path)
    assert proxy["test_patch"] == TEST_PATCH  # reversed exactly: kept as it is
    assert proxy["patch"] != fuzzy and "-    return a - b" in proxy["patch"]
    work = tmp_path / "work" / "django__django"
    subprocess.run(["git", "checkout", "-q", "-f", rec.proxy_base], cwd=work, check=True)
    subprocess.run(["git", "apply", "-"], cwd=work, input=proxy["patch"], text=True, check=True)
    assert (work / "calc.py").read_text() == (tree / "calc.py").read_text()


def test_a_release_without_gitignore_gets_one_for_its_build_products(tmp_path: Path) -> None:
    """scikit-learn's and matplotlib's sdists have no .gitignore: the extensions their
    in-place build compiles were untracked files that phase 4's `git clean` removed, and
    scikit-learn 0.22's tests died on "No module named sklearn.__check_build._check_build"
    (proxy sweep). Their repositories ignore build products; the proxy does too."""
    _release_tree(tmp_path, "scikit-learn==0.22")
    (tmp_path / "sdists" / "scikit-learn-0.22" / ".gitignore").unlink()
    row = {"instance_id": "scikit-learn__scikit-learn-1", "repo": "scikit-learn/scikit-learn",
           "version": "0.22", "patch": GOLD, "test_patch": TEST_PATCH}  # fmt: skip
    record = proxy_mirror.prepare(row, tmp_path)
    mirror = tmp_path / "mirrors" / "scikit-learn__scikit-learn.git"
    ignore = _git(mirror, "show", f"{record.release_commit}:.gitignore")
    assert "*.so" in ignore.splitlines() and "build/" in ignore.splitlines()
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(mirror), str(checkout), "-b",
                    f"proxy/{row['instance_id']}"], check=True)  # fmt: skip
    (checkout / "_ext.cpython-39-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    subprocess.run(["git", "clean", "-fdq"], cwd=checkout, check=True)  # as phase 4 does
    assert (checkout / "_ext.cpython-39-x86_64-linux-gnu.so").exists()


def _dated_release_tree(out: Path, built: int) -> None:
    """The release tree with its members' times as the sdist holds them: the newest at
    ``built`` (PKG-INFO, written by the sdist build), the sources older."""
    _release_tree(out, "Django==3.0")
    tree = out / "sdists" / "Django-3.0"
    for path in tree.rglob("*"):
        os.utime(path, (built - 86400, built - 86400))
    os.utime(tree / "PKG-INFO", (built, built))


def _commit_time(mirror: Path, commit: str) -> int:
    return int(_git(mirror, "show", "-s", "--format=%at %ct", commit).split()[0])


def test_release_commit_is_dated_at_the_sdist_build_and_the_base_at_the_pull_request(
    tmp_path: Path,
) -> None:
    built = 1575280000  # 2019-12-02: Django 3.0's sdist
    _dated_release_tree(tmp_path, built)
    row = {"instance_id": "django__django-1", "repo": "django/django", "version": "3.0",
           "created_at": "2019-06-26T07:16:09Z"}  # fmt: skip
    row |= {"patch": GOLD, "test_patch": TEST_PATCH}
    record = proxy_mirror.prepare(row, tmp_path)
    mirror = tmp_path / "mirrors" / "django__django.git"
    assert _commit_time(mirror, record.release_commit) == built  # PKG-INFO, dropped, counts
    assert _git(mirror, "show", "-s", "--format=%ct", record.release_commit).strip() == str(built)
    assert _commit_time(mirror, record.proxy_base) == 1561533369  # 2019-06-26T07:16:09Z


def test_a_member_rewritten_after_the_download_does_not_date_the_release(
    tmp_path: Path,
) -> None:
    """matplotlib 3.0-3.4's setup.py writes its matplotlibrc when pip prepares the metadata:
    that file is newer than the sdist, its PKG-INFO is not."""
    built = 1537312285  # 2018-09-18: matplotlib 3.0.0's sdist
    _dated_release_tree(tmp_path, built)
    (tmp_path / "sdists" / "Django-3.0" / "calc.py").write_text(FIXED)  # modified now
    assert proxy_mirror.build_date(tmp_path / "sdists" / "Django-3.0") == built
    (tmp_path / "sdists" / "Django-3.0" / "PKG-INFO").unlink()  # none: the newest member
    assert proxy_mirror.build_date(tmp_path / "sdists" / "Django-3.0") > built


def test_a_base_without_created_at_is_dated_at_its_release(tmp_path: Path) -> None:
    built = 1575280000
    _dated_release_tree(tmp_path, built)
    row = {"instance_id": "django__django-1", "repo": "django/django", "version": "3.0",
           "patch": GOLD, "test_patch": TEST_PATCH}  # fmt: skip
    record = proxy_mirror.prepare(row, tmp_path)
    assert _commit_time(tmp_path / "mirrors" / "django__django.git", record.proxy_base) == built


def test_the_same_sdist_and_row_give_the_same_commits(tmp_path: Path) -> None:
    row = {"instance_id": "django__django-1", "repo": "django/django", "version": "3.0",
           "created_at": "2019-06-26T07:16:09Z"}  # fmt: skip
    row |= {"patch": GOLD, "test_patch": TEST_PATCH}
    records = []
    for name in ("one", "two"):
        _dated_release_tree(tmp_path / name, 1575280000)
        records.append(proxy_mirror.prepare(row, tmp_path / name))
    one, two = records
    assert (one.release_commit, one.proxy_base) == (two.release_commit, two.proxy_base)


def test_a_version_whose_first_proxy_fails_takes_its_next_instance() -> None:
    def rec(iid: str, version: str, base: str) -> proxy_mirror.ProxyRecord:
        return proxy_mirror.ProxyRecord(
            instance_id=iid, repo="django/django", version=version, proxy_base=base
        )

    done = {"a-0": rec("a-0", "3.0", ""), "b-0": rec("b-0", "3.1", "f00d")}
    row = {"repo": "django/django", "version": "3.0", "instance_id": "a-1"}
    assert proxy_mirror.wanted(row, done, 1)  # 3.0's first did not build: its next is tried
    assert not proxy_mirror.wanted({**row, "version": "3.1", "instance_id": "b-1"}, done, 1)
    assert proxy_mirror.wanted({**row, "version": "3.1", "instance_id": "b-1"}, done, 2)
    assert proxy_mirror.wanted({**row, "version": "3.1", "instance_id": "b-1"}, done, None)
