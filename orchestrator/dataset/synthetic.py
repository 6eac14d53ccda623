"""Small synthetic SWE-bench instances: real git repositories with a bug, its tests and a fix.

Used by the tests and by ``swe-green demo`` (an evaluation that needs no GitHub and no
Hugging Face). ``build_synthetic(dest)`` writes:

- ``dest/mirrors/<owner>__<name>.git``: bare repositories, served with ``mirror_dir``;
- ``dest/instances.jsonl``: the instances, in the dataset's format;
- ``dest/recipes.json``: their environment recipes (``recipes_file`` setting).

Each repository has the environment setup commit (tagged ``v0.1``), the base commit, a
later "upstream fix" commit (annotated tag ``v0.2``) holding the gold patch and the test
patch, a later commit (tag ``v0.3``) and a ``feature`` branch off the base, dated later;
history hygiene must leave none of what follows the base in the container.
Three test runners are covered: pytest, a Django-style unittest runner, a sympy-style runner.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from orchestrator.dataset.synthetic_repos import SYNTHETIC_REPOS, SyntheticRepo

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Synthetic",
    "GIT_AUTHOR_EMAIL": "synthetic@example.invalid",
    "GIT_COMMITTER_NAME": "Synthetic",
    "GIT_COMMITTER_EMAIL": "synthetic@example.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
}


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    env = {**os.environ, **_GIT_ENV, **(env or {})}
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if rel.startswith("bin/"):
            path.chmod(0o755)


def _diff(work: Path, base: str, head: str, paths: list[str]) -> str:
    return _git(work, "diff", base, head, "--", *paths) + "\n"


def build_repo(spec: SyntheticRepo, mirrors: Path) -> dict[str, object]:
    """Create the bare mirror of ``spec`` under ``mirrors``; return its instance row."""
    with tempfile.TemporaryDirectory(prefix="swe-green-synth-") as tmp:
        work = Path(tmp)
        _git(work, "init", "-q", "-b", "main")
        _write(work, spec.setup_files)
        _git(work, "add", "-A")
        _git(work, "commit", "-q", "-m", "Initial package")
        _git(work, "tag", "v0.1")
        setup_commit = _git(work, "rev-parse", "HEAD")
        _write(work, spec.base_files)
        _git(work, "add", "-A")
        _git(work, "commit", "-q", "-m", "Add README")
        base_commit = _git(work, "rev-parse", "HEAD")
        _write(work, {**spec.fix_src, **spec.fix_tests})
        _git(work, "add", "-A")
        _git(work, "commit", "-q", "-m", "Fix the bug (upstream)")
        _git(work, "tag", "-a", "-m", "release 0.2", "v0.2")
        fix_commit = _git(work, "rev-parse", "HEAD")
        # later history: a release tag, a branch and work past the fix, all dated later
        later = {
            "GIT_AUTHOR_DATE": "2025-06-01T00:00:00Z",
            "GIT_COMMITTER_DATE": "2025-06-01T00:00:00Z",
        }
        _write(work, {"CHANGELOG.md": f"fixed in 0.2 (see {fix_commit})\n"})
        _git(work, "add", "-A")
        _git(work, "commit", "-q", "-m", "Changelog after the fix", env=later)
        _git(work, "tag", "v0.3")
        _git(work, "branch", "feature", base_commit)
        _git(work, "checkout", "-q", "feature")
        _write(work, {"FEATURE.md": "feature work branched from the base\n"})
        _git(work, "add", "-A")
        _git(work, "commit", "-q", "-m", "Feature branch work", env=later)
        _git(work, "checkout", "-q", "main")
        mirror = mirrors / f"{spec.repo.replace('/', '__')}.git"
        shutil.rmtree(mirror, ignore_errors=True)
        mirror.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "clone", "-q", "--mirror", str(work), str(mirror)],
            check=True,
            capture_output=True,
        )
        return {
            "instance_id": spec.instance_id,
            "repo": spec.repo,
            "base_commit": base_commit,
            "environment_setup_commit": setup_commit,
            "version": "0.1",
            "problem_statement": spec.problem_statement,
            "hints_text": "",
            "patch": _diff(work, base_commit, fix_commit, sorted(spec.fix_src)),
            "test_patch": _diff(work, base_commit, fix_commit, sorted(spec.fix_tests)),
            "FAIL_TO_PASS": spec.fail_to_pass,
            "PASS_TO_PASS": spec.pass_to_pass,
            "created_at": "2024-01-01T00:00:00Z",
            "difficulty": "<15 min fix",
            "fix_commit": fix_commit,
        }


def partial_clone_mirror(full: Path, dest: Path) -> Path:
    """A partial clone of the bare mirror ``full`` at ``dest``, as ``git clone --filter``
    makes of a big repository: its pack is a ``.promisor`` pack (on which ``git gc --prune``
    keeps every object), its config names ``full`` as the promisor remote. Every blob is
    present (the filter only leaves out blobs over 1 MB), so checkouts work."""
    shutil.rmtree(dest, ignore_errors=True)
    # upload-pack reads the serving repository's config (not the client's -c / environment)
    subprocess.run(["git", "config", "uploadpack.allowFilter", "true"], cwd=full, check=True)
    subprocess.run(
        ["git", "clone", "-q", "--bare", "--filter=blob:limit=1m", "--no-local",
         f"file://{full}", str(dest)],
        check=True, capture_output=True,
    )  # fmt: skip
    return dest


def build_synthetic(
    dest: Path, repos: list[SyntheticRepo] | None = None, partial: bool = False
) -> Path:
    """Write mirrors, ``instances.jsonl`` and ``recipes.json`` under ``dest``; returns dest.

    With ``partial``, ``dest/mirrors`` holds partial clones (promisor packs) of the full
    mirrors, which stay in ``dest/full-mirrors``.
    """
    dest.mkdir(parents=True, exist_ok=True)
    where = dest / ("full-mirrors" if partial else "mirrors")
    rows = [build_repo(spec, where) for spec in repos or SYNTHETIC_REPOS]
    if partial:
        for full in where.iterdir():
            partial_clone_mirror(full, dest / "mirrors" / full.name)
    with open(dest / "instances.jsonl", "w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    recipes = [
        {"repo": spec.repo, "version": "0.1", **spec.recipe} for spec in repos or SYNTHETIC_REPOS
    ]
    (dest / "recipes.json").write_text(json.dumps(recipes, indent=1) + "\n")
    return dest
