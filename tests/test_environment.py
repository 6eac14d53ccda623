"""Phases 1-4 on the synthetic instances in real containers."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest

from orchestrator.environments.build import prepare_instance
from orchestrator.housekeeping.inventory import list_containers
from orchestrator.models import Instance
from orchestrator.sandbox.docker import DockerSandbox as Sandbox
from orchestrator.sandbox.models import LABEL_ROLE
from orchestrator.setup.plan import SetupFailed

from .conftest import TEST_RUN_ID, remove_images_under

pytestmark = pytest.mark.container


def _fix_commit(synthetic_dir, instance_id: str) -> str:
    for line in (synthetic_dir / "instances.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["instance_id"] == instance_id:
            return row["fix_commit"]
    raise KeyError(instance_id)


@pytest.fixture
def sandbox_of(docker_client):
    started: list[Sandbox] = []

    def start(image: str) -> Sandbox:
        sb = Sandbox.start(docker_client, image, run_id=TEST_RUN_ID, instance_id="env-test")
        started.append(sb)
        return sb

    yield start
    for sb in started:
        sb.remove()


@pytest.mark.parametrize("instance_id", ["demo__calc-1", "demo__textkit-1", "demo__units-1"])
def test_recipe_setup_gives_a_working_environment_at_base(
    run_ctx, synthetic_instances, sandbox_of, instance_id
):
    instance = synthetic_instances[instance_id]
    prepared = prepare_instance(run_ctx, instance)
    sb = sandbox_of(prepared.instance_image)
    head = sb.exec("source /opt/swe/activate.sh && pwd && git rev-parse HEAD")
    assert head.stdout.split() == ["/testbed", instance.base_commit]
    assert sb.exec("cd /testbed && git status --porcelain").stdout == ""
    package = instance.repo.split("/")[1]
    imported = sb.exec(f"source /opt/swe/activate.sh && python -c 'import {package}'")
    assert imported.exit_code == 0, imported.output
    # no installer cache is committed into the environment (dead weight)
    caches = sb.exec("ls -d /root/.cache/uv /root/.cache/pip 2>/dev/null")
    assert caches.stdout.strip() == "", caches.stdout
    setup_log = (run_ctx.instance_dir(instance) / "setup.log").read_text()
    # built here (each build script once: the set-up, and the install where it has one), or
    # by an earlier test that shares the session's image cache
    scripts = [setup_log.count(f"===== {step} (") for step in ("setup", "install")]
    built_once = scripts[0] == 1 and scripts[1] <= 1
    assert (built_once and setup_log.count(">>>>> done") == sum(scripts)) or (
        "reused from the cache" in setup_log
    ), setup_log


@pytest.fixture(scope="module")
def partial_ctx(env_settings, docker_client, base_image, tmp_path_factory, docker_backend):
    """A run context whose mirrors are partial clones (promisor packs) of the synthetic ones,
    with its own image prefix so that no image of the full-mirror tests is reused."""
    from orchestrator.context.run_context import RunContext
    from orchestrator.context.run_dir import RunDir
    from orchestrator.dataset.synthetic import build_synthetic

    synthetic = build_synthetic(tmp_path_factory.mktemp("synthetic-partial"), partial=True)
    prefix = f"{env_settings.environment.image_prefix}-partial"
    docker_client.images.get(base_image).tag(f"{prefix}/base", "py3.11")
    settings = env_settings.replace(
        **{
            "mirror_dir": synthetic / "mirrors",
            "dataset": str(synthetic / "instances.jsonl"),
            "data_dir": tmp_path_factory.mktemp("data-partial"),
            "image_prefix": prefix,
        }
    )
    yield RunContext(settings, docker_backend, TEST_RUN_ID, RunDir(tmp_path_factory.mktemp("r")))
    remove_images_under(docker_client, prefix)


def _later_history(mirror_dir, repo: str, base: str) -> dict[str, str]:
    """Every commit of the mirror that the base commit does not reach, and its tags."""
    git_dir = str(mirror_dir / f"{repo.replace('/', '__')}.git")

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", git_dir, *args], capture_output=True, text=True, check=True
        ).stdout

    later = git("rev-list", "--all", "--not", base).split()
    assert len(later) >= 3  # the fix, the commit after it, the feature branch
    return {"commits": " ".join(later), "tags": git("tag", "--no-merged", base)}


@pytest.mark.parametrize("mirror_kind", ["full", "partial"])
def test_history_after_the_base_is_gone(
    run_ctx, partial_ctx, synthetic_dir, sandbox_of, mirror_kind
):
    """Only what the base reaches is in /testbed/.git, whatever the mirror: a full one or a
    partial clone, whose promisor pack ``git gc --prune`` never prunes."""
    ctx = run_ctx if mirror_kind == "full" else partial_ctx
    from orchestrator.dataset.instances import load_instances

    instance = next(
        i
        for i in load_instances(str(ctx.settings.dataset.dataset))
        if i.instance_id == "demo__calc-1"
    )
    fix = _fix_commit(Path(str(ctx.settings.dataset.dataset)).parent, instance.instance_id)
    later = _later_history(ctx.settings.repos.mirror_dir, instance.repo, instance.base_commit)
    fixed_source = subprocess.run(
        ["git", "--git-dir", str(ctx.settings.repos.mirror_dir / "demo__calc.git"), "rev-parse",
         f"{fix}:calc/__init__.py"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    sb = sandbox_of(prepare_instance(ctx, instance).instance_image)

    def git(cmd: str) -> str:
        return sb.exec(f"cd /testbed && {cmd}").output

    all_commits = set(
        git("git cat-file --batch-all-objects --batch-check='%(objecttype) %(objectname)'")
        .replace("commit ", "commit:")
        .split()
    )
    all_commits = {o.split(":")[1] for o in all_commits if o.startswith("commit:")}
    reachable = set(git("git rev-list --all").split())
    assert all_commits == reachable  # no unreachable commit at all
    assert not set(later["commits"].split()) & all_commits
    base_date = int(git(f"git log -1 --format=%ct {instance.base_commit}"))
    assert max(int(d) for d in git("git log --all --format=%ct").split()) <= base_date
    assert sb.exec(f"cd /testbed && git cat-file -e {fixed_source}").exit_code != 0
    assert sb.exec(f"grep -rl {fix} /testbed/.git").stdout == ""
    assert git("git tag").split() == ["v0.1"]
    refs = git("git for-each-ref --format='%(refname)' refs/heads refs/remotes")
    assert refs.split() == ["refs/heads/main"]
    assert git("git remote").strip() == ""
    assert git("git stash list").strip() == ""
    assert git("git reflog 2>&1").strip() == ""
    leftovers = sb.exec(
        "cd /testbed/.git && ls -d FETCH_HEAD ORIG_HEAD logs objects/info/alternates "
        "objects/pack/*.promisor objects/pack/*.keep 2>/dev/null"
    ).stdout
    assert leftovers.strip() == ""
    # the environment's shared history and what the base reaches beyond it
    assert len(sb.exec("ls /testbed/.git/objects/pack/*.pack").stdout.split()) in (1, 2)
    assert git("git config --get-regexp 'remote|promisor|partialclone'").strip() == ""
    assert git("git status --porcelain").strip() == ""
    assert git("git fsck --connectivity-only 2>&1; echo rc=$?").strip().endswith("rc=0")


def test_second_instance_run_hits_the_caches_and_skips_phases_1_to_3(
    run_ctx, synthetic_instances, env_settings, docker_backend, tmp_path
):
    from orchestrator.context.run_context import RunContext
    from orchestrator.context.run_dir import RunDir

    instance = synthetic_instances["demo__units-1"]
    first = prepare_instance(run_ctx, instance)
    again_ctx = RunContext(env_settings, docker_backend, TEST_RUN_ID, RunDir(tmp_path / "again"))
    before = {c.id for c in list_containers(docker_backend, run_id=TEST_RUN_ID)}
    second = prepare_instance(again_ctx, instance)
    assert (second.env_cache_hit, second.instance_cache_hit) == (True, True)
    assert (second.env_image, second.instance_image) == (first.env_image, first.instance_image)
    after = {c.id for c in list_containers(docker_backend, run_id=TEST_RUN_ID)}
    assert after == before  # no setup container was started
    assert "reused from the cache" in (again_ctx.instance_dir(instance) / "setup.log").read_text()


def test_two_instances_needing_one_missing_environment_build_it_once(
    run_ctx, synthetic_instances, synthetic_dir, tmp_path
):
    recipes = json.loads((synthetic_dir / "recipes.json").read_text())
    for recipe in recipes:
        recipe["env"] = {"SWE_GREEN_VARIANT": "concurrency"}  # a new key: not cached yet
    variant = tmp_path / "recipes.json"
    variant.write_text(json.dumps(recipes))
    run_ctx.settings = run_ctx.settings.replace(**{"recipes_file": variant})
    instance = synthetic_instances["demo__textkit-1"]
    outcomes: list = []
    threads = [
        threading.Thread(target=lambda: outcomes.append(prepare_instance(run_ctx, instance)))
        for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(o.env_cache_hit for o in outcomes) == [False, True]


def _variant(instance, **changes):
    return instance.model_copy(update=changes)


def test_unknown_repository_is_an_environment_failure(run_ctx, synthetic_instances):
    instance = _variant(synthetic_instances["demo__calc-1"], repo="demo/does-not-exist")
    with pytest.raises(SetupFailed, match="does-not-exist"):
        prepare_instance(run_ctx, _with_recipe(run_ctx, instance))


def test_commit_missing_from_the_mirror_is_an_environment_failure(run_ctx, synthetic_instances):
    instance = _variant(synthetic_instances["demo__calc-1"], base_commit="0" * 40)
    with pytest.raises(SetupFailed, match="0000000000"):
        prepare_instance(run_ctx, instance)


def test_failing_install_keeps_the_container_with_a_readable_reason(
    run_ctx, synthetic_instances, synthetic_dir, tmp_path, docker_client
):
    recipes = json.loads((synthetic_dir / "recipes.json").read_text())
    for recipe in recipes:
        recipe["install"] = "echo 'no such build backend' >&2; exit 3"
    broken = tmp_path / "recipes.json"
    broken.write_text(json.dumps(recipes))
    run_ctx.settings = run_ctx.settings.replace(**{"recipes_file": broken})
    with pytest.raises(SetupFailed, match="install command") as failure:
        prepare_instance(run_ctx, synthetic_instances["demo__units-1"])
    assert "no such build backend" in str(failure.value)
    kept = docker_client.containers.get(failure.value.container)
    assert kept.labels[LABEL_ROLE] == "setup"
    kept.remove(force=True)

    # the failure is remembered: the next instance needing this environment fails at once,
    # with the first failure's reason, where to read its log, and how to retry
    with pytest.raises(SetupFailed, match="no such build backend") as again:
        prepare_instance(run_ctx, synthetic_instances["demo__units-1"])
    assert again.value.container is None  # nothing was started
    assert "demo__units-1" in str(again.value) and "SWE_GREEN_ENV_FAILURE_TTL=0" in str(again.value)
    run_ctx.settings = run_ctx.settings.replace(env_failure_ttl=0)
    with pytest.raises(SetupFailed, match="install command") as retried:
        prepare_instance(run_ctx, synthetic_instances["demo__units-1"])
    assert "not rebuilt" not in str(retried.value)
    docker_client.containers.get(retried.value.container).remove(force=True)


def _with_recipe(run_ctx, instance):
    """Point the recipes file's demo/calc recipe at the instance's (renamed) repo."""
    path = run_ctx.settings.environment.recipes_file
    recipes = json.loads(path.read_text())
    if not any(r["repo"] == instance.repo for r in recipes):
        clone = dict(next(r for r in recipes if r["repo"] == "demo/calc"), repo=instance.repo)
        extended = path.parent / f"recipes-{instance.repo.replace('/', '_')}.json"
        extended.write_text(json.dumps([*recipes, clone]))
        run_ctx.settings = run_ctx.settings.replace(**{"recipes_file": extended})
    return instance


def test_fetching_an_exact_python_falls_back_to_the_base_image_offline(
    run_ctx, synthetic_instances, synthetic_dir, tmp_path, sandbox_of
):
    recipes = json.loads((synthetic_dir / "recipes.json").read_text())
    for recipe in recipes:
        recipe["python"] = "3.10"  # no base image has it; uv cannot download it here
    wanted = tmp_path / "recipes.json"
    wanted.write_text(json.dumps(recipes))
    run_ctx.settings = run_ctx.settings.replace(**{"recipes_file": wanted, "fetch_python": True})
    instance = synthetic_instances["demo__units-1"]
    prepared = prepare_instance(run_ctx, instance)
    assert (prepared.plan.python, prepared.plan.fetch_python) == ("3.11", "3.10")
    log = (run_ctx.instance_dir(instance) / "setup.log").read_text()
    assert "recipe asks for Python 3.10; using the nearest available, 3.11" in log
    assert "could not fetch Python 3.10" in log
    sb = sandbox_of(prepared.instance_image)
    assert "3.11" in sb.exec("source /opt/swe/activate.sh && python --version").stdout


def test_llm_strategy_builds_the_environment_and_its_findings_survive_a_cache_hit(
    run_ctx, synthetic_instances, sandbox_of, tmp_path, docker_backend, env_settings
):
    from orchestrator.context.run_context import RunContext
    from orchestrator.context.run_dir import RunDir

    from .fake_anthropic import FakeAnthropic, Reply, bash, text, tool_use

    install = "pip install -q --no-build-isolation --no-index --no-use-pep517 -e ."
    test_command = "python bin/test -C --verbose"
    script = [
        bash("cat setup.py; python3 --version"),
        bash(f"python3 -m venv /opt/swe/venv && cd /testbed && /opt/swe/venv/bin/{install}"),
        Reply(
            [
                text("The environment is ready."),
                tool_use(
                    "finish",
                    {
                        "python_version": "3.11",
                        "venv_path": "/opt/swe/venv",
                        "test_command": test_command,
                        "install_commands": [install],
                    },
                ),
            ]
        ),
    ]
    instance = synthetic_instances["demo__units-1"]
    with FakeAnthropic(script) as fake:
        run_ctx.settings = run_ctx.settings.replace(
            **{
                "setup_strategy": "llm",
                "anthropic_api_key": "test",
                "anthropic_base_url": fake.url,
                "setup_model": "claude-test-llm-strategy",  # a cache key of its own
            }
        )
        prepared = prepare_instance(run_ctx, instance)
        assert len(fake.requests) == 3
    assert prepared.plan.strategy == "llm" and not prepared.env_cache_hit
    assert prepared.test_cmd == test_command
    assert prepared.setup_tokens["input"] > 0
    sb = sandbox_of(prepared.instance_image)
    ran = sb.exec(f"source /opt/swe/activate.sh && {test_command} units/tests/test_units.py")
    assert ran.exit_code == 0 and "test_to_fahrenheit ok" in ran.stdout, ran.output

    again = RunContext(run_ctx.settings, docker_backend, TEST_RUN_ID, RunDir(tmp_path / "again"))
    cached = prepare_instance(again, instance)  # the fake API is gone: a call would fail
    assert cached.env_cache_hit and cached.test_cmd == test_command


@pytest.fixture
def share_ctx(env_settings, synthetic_dir, docker_client, base_image, docker_backend, tmp_path):
    """A context of its own image prefix whose dataset (a file it rewrites) decides which
    instances an environment's shared history serves; it makes its own contexts with
    ``make(rows)``."""
    from orchestrator.context.run_context import RunContext
    from orchestrator.context.run_dir import RunDir

    prefix = f"{env_settings.environment.image_prefix}-share"
    docker_client.images.get(base_image).tag(f"{prefix}/base", "py3.11")
    rows = {
        json.loads(line)["instance_id"]: json.loads(line)
        for line in (synthetic_dir / "instances.jsonl").read_text().splitlines()
    }
    data_dir = tmp_path / "data"

    def make(*instances: dict) -> RunContext:
        dataset = tmp_path / f"instances-{len(list(tmp_path.glob('instances-*')))}.jsonl"
        dataset.write_text("".join(json.dumps(r) + "\n" for r in instances))
        settings = env_settings.replace(
            dataset=str(dataset), data_dir=data_dir, image_prefix=prefix
        )
        return RunContext(settings, docker_backend, TEST_RUN_ID, RunDir(tmp_path / dataset.stem))

    yield make, rows
    remove_images_under(docker_client, prefix)


def _history_of(sb: Sandbox) -> tuple[set[str], str, list[str]]:
    """The objects of /testbed/.git, its HEAD and its packs."""
    objects = sb.exec(
        "cd /testbed && git cat-file --batch-all-objects --batch-check='%(objectname)'"
    ).stdout.split()
    head = sb.exec("cd /testbed && git rev-parse HEAD").stdout.strip()
    packs = sb.exec("ls /testbed/.git/objects/pack/*.pack").stdout.split()
    return set(objects), head, packs


def _reachable_in(mirror: Path, commit: str) -> set[str]:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", str(mirror), *args], capture_output=True, text=True, check=True
        ).stdout

    tags = git("for-each-ref", f"--merged={commit}", "--format=%(objectname)", "refs/tags")
    listed = git("rev-list", "--objects", commit, *tags.split())
    return {line.split()[0] for line in listed.splitlines()}


def _newer_and_older(rows: dict, mirror: Path) -> tuple[dict, dict]:
    """demo__calc-1, and a made-up instance of its environment based on its base's parent."""
    newer = rows["demo__calc-1"]
    older_base = subprocess.run(
        ["git", "--git-dir", str(mirror), "rev-parse", f"{newer['base_commit']}~1"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return newer, newer | {"instance_id": "demo__calc-older", "base_commit": older_base}


def test_instances_of_one_environment_share_its_history_and_add_only_their_own(
    share_ctx, sandbox_of, env_settings
):
    """The environment's .git holds the history its instances share; an instance whose base
    descends from it adds one pack of what lies beyond; one that does not (a base the
    dataset did not list when the environment was built) gets its whole history instead.
    Either way the repository holds exactly what its base reaches."""
    make, rows = share_ctx
    mirror = env_settings.repos.mirror_dir / "demo__calc.git"
    newer, older = _newer_and_older(rows, mirror)
    older_base = older["base_commit"]

    # built for the newer instance alone: the shared history is its base's
    first = prepare_instance(make(newer), Instance.model_validate(newer))
    objects, head, packs = _history_of(sandbox_of(first.instance_image))
    assert head == newer["base_commit"] and len(packs) == 2
    assert objects == _reachable_in(mirror, newer["base_commit"])
    # the older base does not descend from it: its whole history replaces the shared one
    ctx = make(newer, older)
    second = prepare_instance(ctx, Instance.model_validate(older))
    assert second.env_cache_hit
    log = (ctx.instance_dir(Instance.model_validate(older)) / "setup.log").read_text()
    assert "clean history (replace)" in log
    sb = sandbox_of(second.instance_image)
    objects, head, packs = _history_of(sb)
    assert head == older_base and len(packs) == 1
    assert objects == _reachable_in(mirror, older_base)
    assert newer["base_commit"] not in objects
    assert sb.exec("cd /testbed && git status --porcelain && ls .git/ORIG_HEAD").stdout == ""


def test_the_shared_history_is_the_common_ancestor_of_the_listed_bases(
    share_ctx, sandbox_of, env_settings
):
    make, rows = share_ctx
    mirror = env_settings.repos.mirror_dir / "demo__calc.git"
    newer, older = _newer_and_older(rows, mirror)
    older_base = older["base_commit"]
    ctx = make(newer, older)
    prepared = prepare_instance(ctx, Instance.model_validate(newer))
    labels = ctx.backend.images.labels(prepared.env_image)
    assert labels["swe-green.shared-history"] == older_base
    log = (ctx.instance_dir(Instance.model_validate(newer)) / "setup.log").read_text()
    assert "clean history (add): 1 commits" in log
    sb = sandbox_of(prepared.instance_image)
    objects, head, packs = _history_of(sb)
    assert head == newer["base_commit"] and len(packs) == 2
    assert objects == _reachable_in(mirror, newer["base_commit"])
    assert sb.exec("cd /testbed && git status --porcelain").stdout == ""
    commits = subprocess.run(
        ["git", "--git-dir", str(mirror), "rev-list", "--count", newer["base_commit"]],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert sb.exec("cd /testbed && git log --oneline | wc -l").stdout.strip() == commits.strip()
    assert sb.exec("cd /testbed && git fsck --connectivity-only 2>&1; echo rc=$?").stdout.endswith(
        "rc=0\n"
    )


def test_the_installs_build_directory_is_not_left_in_the_tree(
    run_ctx, synthetic_instances, synthetic_dir, tmp_path, sandbox_of
):
    """`pip install .` (pip >= 21.3) builds in the source tree; an ignored `build/` stays
    after `git clean`, and a patch adding `build/lib/...` would then not apply."""
    recipes = json.loads((synthetic_dir / "recipes.json").read_text())
    for recipe in recipes:
        if recipe["repo"] == "demo/units":
            # ignored, as in requests' .gitignore; a non-editable install, as requests' recipe
            recipe["pre_install"] = ["echo build/ >> .git/info/exclude"]
            recipe["install"] = "python -m pip install --no-build-isolation ."
    variant = tmp_path / "recipes.json"
    variant.write_text(json.dumps(recipes))
    run_ctx.settings = run_ctx.settings.replace(**{"recipes_file": variant})
    instance = synthetic_instances["demo__units-1"]
    prepared = prepare_instance(run_ctx, instance)
    log = (run_ctx.instance_dir(instance) / "setup.log").read_text()
    assert "removed the install's build directory (build/)" in log
    sb = sandbox_of(prepared.instance_image)
    listing = sb.exec("cd /testbed && ls -a && git status --porcelain --ignored")
    assert "build" not in listing.stdout.split(), listing.stdout
    imported = sb.exec("source /opt/swe/activate.sh && cd / && python -c 'import units'")
    assert imported.exit_code == 0, imported.output
