import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from orchestrator.models import Instance
from orchestrator.repos.repo_cache import (
    RepoError,
    ensure_mirror,
    export_checkout,
    mirror_path,
    prepare_checkout,
    source_url,
)
from orchestrator.settings import Settings

REPO = "acme/widget"
GIT_ENV = os.environ | {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout.strip()


def commit(work: Path, name: str, text: str) -> str:
    (work / name).write_text(text)
    git("add", name, cwd=work)
    git("commit", "-q", "-m", f"{name}: {text}", cwd=work)
    return git("rev-parse", "HEAD", cwd=work)


class Upstream:
    """A bare repository ``<root>/acme__widget.git`` filled from a work tree."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bare = root / "acme__widget.git"
        self.work = root / "work"
        self.work.mkdir(parents=True)
        git("init", "-q", "-b", "main", cwd=self.work)
        self.setup = commit(self.work, "setup.py", "v1\n")
        git("tag", "v1.0", cwd=self.work)
        self.base = commit(self.work, "module.py", "def f(): return 1\n")
        self.fix = commit(self.work, "module.py", "def f(): return 2\n")
        git("init", "-q", "--bare", str(self.bare), cwd=root)
        git("push", "-q", str(self.bare), "main", "v1.0", cwd=self.work)

    def add_commit(self, text: str) -> str:
        sha = commit(self.work, "module.py", text)
        git("push", "-q", str(self.bare), "main", cwd=self.work)
        return sha

    def add_pull_ref(self) -> str:
        """A commit reachable only from refs/pull/1/head, as GitHub serves pull requests."""
        git("checkout", "-q", "-b", "pr", cwd=self.work)
        sha = commit(self.work, "pr.py", "pr\n")
        git("push", "-q", str(self.bare), "pr:refs/pull/1/head", cwd=self.work)
        git("checkout", "-q", "main", cwd=self.work)
        return sha


@pytest.fixture
def upstream(tmp_path):
    return Upstream(tmp_path / "src")


@pytest.fixture
def settings(tmp_path, upstream, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return Settings(data_dir=tmp_path / "cache", mirror_dir=upstream.root)


def test_paths_and_url_template(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = Settings(
        data_dir=tmp_path, repo_url_template="https://h/{owner}/{name}/{owner_name}/{repo}"
    )
    assert mirror_path(s, "django/django") == tmp_path / "mirrors" / "django__django.git"
    assert source_url(s, "django/django") == "https://h/django/django/django__django/django/django"
    assert source_url(Settings(data_dir=tmp_path), "a/b") == "https://github.com/a/b.git"
    local = Settings(data_dir=tmp_path, mirror_dir=tmp_path / "m")
    assert source_url(local, "a/b") == str(tmp_path / "m" / "a__b.git")
    with pytest.raises(RepoError, match="placeholders"):
        source_url(Settings(data_dir=tmp_path, repo_url_template="https://h/{nope}"), "a/b")
    with pytest.raises(RepoError, match="owner/name"):
        mirror_path(s, "not-a-repo")


def test_clone_from_mirror_dir_then_reuse_without_network(settings, upstream):
    mirror = ensure_mirror(settings, REPO, [upstream.setup, upstream.base])
    assert mirror == mirror_path(settings, REPO)
    assert git("rev-parse", "main", cwd=mirror) == upstream.fix
    assert git("rev-parse", "v1.0^{commit}", cwd=mirror) == upstream.setup
    assert git("rev-parse", "--is-bare-repository", cwd=mirror) == "true"
    # present commits need no fetch: the source can be gone
    shutil.move(upstream.bare, upstream.root / "gone.git")
    assert ensure_mirror(settings, REPO, [upstream.base, upstream.fix]) == mirror


def test_clone_through_file_url_template(tmp_path, upstream, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = Settings(
        data_dir=tmp_path / "c", repo_url_template=f"file://{upstream.root}/{{owner_name}}.git"
    )
    mirror = ensure_mirror(s, REPO, [upstream.fix])
    assert git("cat-file", "-t", upstream.fix, cwd=mirror) == "commit"
    assert not (mirror / "objects" / "info" / "alternates").exists()


def test_missing_commit_triggers_fetch_of_new_commits(settings, upstream):
    mirror = ensure_mirror(settings, REPO)
    newer = upstream.add_commit("def f(): return 3\n")
    with pytest.raises(subprocess.CalledProcessError):
        git("cat-file", "-e", newer, cwd=mirror)
    ensure_mirror(settings, REPO, [newer])
    assert git("rev-parse", "main", cwd=mirror) == newer


def test_commit_outside_branches_is_fetched_by_id(settings, upstream):
    ensure_mirror(settings, REPO)
    pr = upstream.add_pull_ref()
    mirror = ensure_mirror(settings, REPO, [pr])
    assert git("rev-parse", f"refs/swe-green/{pr}", cwd=mirror) == pr


def test_commit_missing_even_after_fetch(settings, upstream):
    bogus = "0123456789abcdef0123456789abcdef01234567"
    with pytest.raises(RepoError) as err:
        ensure_mirror(settings, REPO, [upstream.base, bogus])
    message = str(err.value)
    assert bogus in message and REPO in message and "Fix:" in message
    assert upstream.base not in message


def test_nonexistent_source_is_a_repo_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = Settings(data_dir=tmp_path / "c", repo_url_template=f"file://{tmp_path}/none/{{name}}.git")
    with pytest.raises(RepoError) as err:
        ensure_mirror(s, "acme/missing", ["a" * 40])
    message = str(err.value)
    assert "acme/missing" in message and f"{tmp_path}/none/missing.git" in message
    assert "\n" not in message
    assert not mirror_path(s, "acme/missing").exists()
    assert [p.name for p in (tmp_path / "c" / "mirrors").iterdir()] == ["acme__missing.git.lock"]


def test_concurrent_ensure_mirror_clones_once_and_stays_sound(settings, upstream):
    newer = upstream.add_commit("def f(): return 4\n")
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(
            pool.map(lambda c: ensure_mirror(settings, REPO, [c]), [upstream.base, newer] * 8)
        )
    mirror = mirror_path(settings, REPO)
    assert set(results) == {mirror}
    git("fsck", "--full", cwd=mirror)
    assert sorted(p.name for p in mirror.parent.iterdir()) == [
        "acme__widget.git",
        "acme__widget.git.lock",
    ]
    later = upstream.add_commit("def f(): return 5\n")
    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(lambda _: ensure_mirror(settings, REPO, [later]), range(6)))
    assert git("rev-parse", "main", cwd=mirror) == later
    git("fsck", "--full", cwd=mirror)


def test_export_checkout_is_self_contained_with_full_history(settings, upstream, tmp_path):
    mirror = ensure_mirror(settings, REPO, [upstream.setup])
    dest = tmp_path / "testbed"
    export_checkout(mirror, upstream.setup, dest)
    assert git("rev-parse", "HEAD", cwd=dest) == upstream.setup
    assert (dest / "setup.py").read_text() == "v1\n"
    assert not (dest / "module.py").exists()
    assert git("status", "--porcelain", cwd=dest) == ""
    assert not (dest / ".git" / "objects" / "info" / "alternates").exists()
    # later commits (the base commit) are there, and nothing depends on the mirror
    shutil.rmtree(mirror)
    git("fsck", "--full", cwd=dest)
    git("checkout", "-q", upstream.base, cwd=dest)
    assert (dest / "module.py").read_text() == "def f(): return 1\n"


def test_export_checkout_errors(settings, upstream, tmp_path):
    mirror = ensure_mirror(settings, REPO)
    with pytest.raises(RepoError, match="Cannot check out"):
        export_checkout(mirror, "f" * 40, tmp_path / "a")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    with pytest.raises(RepoError, match="not empty"):
        export_checkout(mirror, upstream.base, busy)


def test_prepare_checkout_for_an_instance(settings, upstream, tmp_path):
    instance = Instance(
        instance_id="acme__widget-1",
        repo=REPO,
        base_commit=upstream.base,
        environment_setup_commit=upstream.setup,
    )
    dest = prepare_checkout(settings, instance, tmp_path / "out")
    assert git("rev-parse", "HEAD", cwd=dest) == upstream.setup
    git("cat-file", "-e", upstream.base, cwd=dest)


def test_a_snapshot_lacking_a_blob_fails_early_naming_the_repository_and_the_object(tmp_path):
    """Partial snapshots may lack large blobs: the check names them before any build."""
    from orchestrator.repos.repo_cache import check_complete, missing_objects

    work = tmp_path / "work"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    setup = commit(work, "small.txt", "small")
    big = commit(work, "big.dat", "x" * 5000)  # over the filter's limit: not in the snapshot
    full = tmp_path / "full.git"
    git("clone", "-q", "--bare", str(work), str(full), cwd=tmp_path)
    snapshots = tmp_path / "snapshots"
    git("config", "uploadpack.allowFilter", "true", cwd=full)  # upload-pack reads its repo's
    git("clone", "-q", "--bare", "--no-local", "--filter=blob:limit=1k", f"file://{full}",
        str(snapshots / "acme__widget.git"), cwd=tmp_path)  # fmt: skip
    partial = snapshots / "acme__widget.git"
    git("config", "--unset", "remote.origin.promisor", cwd=partial)  # no lazy fetch: a snapshot
    assert missing_objects(partial, setup) == []
    blob = git("rev-parse", f"{big}:big.dat", cwd=full)
    assert missing_objects(partial, big) == [f"big.dat ({blob})"]
    settings = Settings(data_dir=tmp_path / "data", mirror_dir=snapshots)
    instance = Instance(instance_id="acme__widget-1", repo=REPO, base_commit=big,
                        environment_setup_commit=setup)  # fmt: skip
    with pytest.raises(RepoError, match=rf"acme/widget lacks 1 object.*big\.dat \({blob}\)"):
        check_complete(settings, instance)


def _objects(git_dir: Path) -> set[str]:
    listed = git("cat-file", "--batch-all-objects", "--batch-check=%(objectname)", cwd=git_dir)
    return set(listed.split())


def _reachable(mirror: Path, commit_: str) -> set[str]:
    tags = git("for-each-ref", f"--merged={commit_}", "--format=%(objectname)", "refs/tags",
               cwd=mirror).split()  # fmt: skip
    listed = git("rev-list", "--objects", commit_, *tags, cwd=mirror)
    return {line.split()[0] for line in listed.splitlines()}


def test_a_history_since_a_shared_one_adds_only_what_the_base_reaches_beyond_it(upstream, tmp_path):
    """Shared history (the environment's) + the pack beyond it = exactly the base's history,
    with the base's refs; nothing the base does not reach."""
    from orchestrator.repos.clean_history import export_clean_git

    git("tag", "-a", "-m", "release", "v1.1", upstream.base, cwd=upstream.work)
    git("push", "-q", str(upstream.bare), "v1.1", cwd=upstream.work)
    later = upstream.add_commit("def f(): return 3\n")  # after the base: must stay out
    shared = export_clean_git(upstream.bare, upstream.setup, tmp_path / "shared")
    beyond = export_clean_git(
        upstream.bare, upstream.fix, tmp_path / "beyond", since=upstream.setup
    )
    assert (shared.commits, beyond.commits) == (1, 2)
    both = _objects(tmp_path / "shared") | _objects(tmp_path / "beyond")
    assert both == _reachable(upstream.bare, upstream.fix)
    assert not _objects(tmp_path / "beyond") & _objects(tmp_path / "shared")
    assert later not in both
    # laid over the shared history as phase 4 does: a sound repository at the base
    for pack in (tmp_path / "beyond" / "objects" / "pack").iterdir():
        shutil.copy(pack, tmp_path / "shared" / "objects" / "pack" / pack.name)
    shutil.copy(tmp_path / "beyond" / "packed-refs", tmp_path / "shared" / "packed-refs")
    repo = tmp_path / "shared"
    assert git("rev-parse", "main", cwd=repo) == upstream.fix
    assert git("describe", "--tags", "main", cwd=repo).startswith("v1.1-1-g")
    assert sorted(git("tag", cwd=repo).split()) == ["v1.0", "v1.1"]
    assert git("fsck", "--connectivity-only", "--no-dangling", cwd=repo) == ""


def test_the_shared_commit_is_the_common_ancestor_of_the_bases(upstream):
    from orchestrator.repos.clean_history import is_ancestor, shared_commit

    git("checkout", "-q", "-b", "side", upstream.setup, cwd=upstream.work)
    side = commit(upstream.work, "side.py", "side\n")
    git("push", "-q", str(upstream.bare), "side", cwd=upstream.work)
    mirror = upstream.bare
    assert shared_commit(mirror, [upstream.fix, upstream.base]) == upstream.base
    assert shared_commit(mirror, [upstream.fix, side]) == upstream.setup
    assert shared_commit(mirror, [upstream.fix]) == upstream.fix
    assert shared_commit(mirror, [upstream.fix, "0" * 40]) == upstream.fix  # not in the mirror
    assert shared_commit(mirror, ["0" * 40]) is None
    assert is_ancestor(mirror, upstream.setup, upstream.fix)
    assert not is_ancestor(mirror, upstream.fix, upstream.setup)
    assert not is_ancestor(mirror, side, upstream.fix)


def test_the_exported_history_computes_its_deltas_afresh(upstream, tmp_path):
    """A mirror whose pack holds poor deltas (chains of one, as a fetched pack can) does not
    pass them on: the fresh ``.git`` is packed with deltas computed for it."""
    from orchestrator.repos.clean_history import export_clean_git

    lines = [f"line {i} {'x' * (20 + i % 60)}" for i in range(2000)]
    for i in range(1, 31):
        lines[i * 10] = f"changed {i}"
        tip = commit(upstream.work, "big.txt", "\n".join(lines) + "\n")
    git("push", "-q", str(upstream.bare), "main", cwd=upstream.work)
    git("repack", "-a", "-d", "-q", "--depth=1", "--window=10", cwd=upstream.bare)
    mirror_pack = sum(p.stat().st_size for p in upstream.bare.glob("objects/pack/*.pack"))
    exported = export_clean_git(upstream.bare, tip, tmp_path / "fresh")
    pack = sum(p.stat().st_size for p in (tmp_path / "fresh").glob("objects/pack/*.pack"))
    assert exported.pack_bytes > pack  # the index counts too
    assert pack < 0.75 * mirror_pack  # reused, the mirror's deltas kept it at about 1.0
