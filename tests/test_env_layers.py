"""Layers that environment images share: the tools image, the repository's history image, and
an environment built on its recipe's environment plus the instance's own pins (setting
share_layers)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from orchestrator.base_commit.scripts import share_history_script
from orchestrator.dataset.instances import load_instances
from orchestrator.environments.env_layers import tools_key, tools_script
from orchestrator.models import Instance
from orchestrator.plan.env_plan import EnvPlan
from orchestrator.plan.install import install_script, own_pins_script
from orchestrator.recipes.recipe import load_recipes, pins_for
from orchestrator.sandbox.scripts import render
from orchestrator.setup.plan import own_pins
from orchestrator.setup.scripts import environment_script
from sandbox_tools.contract import ACTIVATE, VENV_SEED

from .reference_data import SHARED_VERIFIED, VERIFIED, shared_data


def _versions(pins: list[str]) -> dict[str, str]:
    return {p.partition("==")[0].lower(): p.partition("==")[2] for p in pins}


@pytest.fixture(scope="module")
def instances() -> dict:
    """The excerpt of Verified in the fixtures."""
    return {i.instance_id: i for i in load_instances(str(VERIFIED))}


@shared_data
def test_the_recipes_environment_plus_the_own_pins_is_the_instances_pin_set():
    """Every Verified instance with pins of its own: the family's pins with the own pins
    laid over them are exactly the pins of a whole build (nothing removed, nothing else)."""
    instances = {i.instance_id: i for i in load_instances(str(SHARED_VERIFIED))}
    layered = 0
    for recipe in load_recipes().values():
        for instance_id in recipe.instance_pins:
            instance = instances[instance_id]
            own = own_pins(recipe, instance)
            if not own:  # the build constraints would differ: built whole
                continue
            layered += 1
            assert own == recipe.instance_pins[instance_id]
            whole = _versions(pins_for(recipe, instance))
            assert _versions(list(recipe.packages)) | _versions(own) == whole
            assert len(pins_for(recipe, instance)) == len(whole)  # one pin per name
    assert layered >= 20


def test_a_newer_setuptools_of_its_own_keeps_the_environment_whole(instances):
    """A newer setuptools raises the cap of the build constraints the recipe's environment
    was installed under: that environment is no base for this one."""
    recipe = load_recipes()[("sympy/sympy", "1.5")]
    instance = instances["sympy__sympy-16450"]
    assert own_pins(recipe, instance) == ["flake8-comprehensions==3.16.0"]
    newer = recipe.model_copy(
        update={"instance_pins": {instance.instance_id: ["setuptools==80.9.0"]}}
    )
    assert own_pins(newer, instance) == []
    older = recipe.model_copy(
        update={"instance_pins": {instance.instance_id: ["setuptools==60.0.0"]}}
    )
    assert own_pins(older, instance) == ["setuptools==60.0.0"]
    assert own_pins(recipe, instances["sympy__sympy-13031"]) == []  # none of its own


def test_the_family_plan_is_the_recipes_own_environment():
    recipe = load_recipes()[("sympy/sympy", "1.5")]
    plan = EnvPlan(
        strategy="recipe", recipe=recipe, python="3.9", base_image="p/base:py3.9",
        pins=[*recipe.packages, "extra==1.0"], env_key="variant", family_key="family",
        own_pins=["extra==1.0"],
    )  # fmt: skip
    family = plan.family()
    assert family.env_key == "family" and family.pins == list(recipe.packages)
    assert family.family_key is None and family.own_pins == []
    assert (family.python, family.base_image) == (plan.python, plan.base_image)


def test_the_tools_image_key_follows_its_base_image():
    assert tools_key("sha256:a") == tools_key("sha256:a")
    assert tools_key("sha256:a") != tools_key("sha256:b")


@pytest.mark.parametrize(
    "script",
    [tools_script(), render(own_pins_script(["a==1.0", "b==2.0.1"])), render(own_pins_script([]))],
)
def test_the_layer_scripts_are_bash(script):
    parsed = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert parsed.returncode == 0, parsed.stderr


def test_an_environment_on_the_tools_image_starts_where_a_whole_build_does():
    """The tools image notes what the venv seeded before removing it; the set-up on it puts
    that back before anything else (a whole build's venv has it from ``python3 -m venv``),
    and makes no virtual environment of its own."""
    recipe = next(iter(load_recipes().values()))
    pins = list(recipe.packages)
    install = render(install_script(recipe, pins))
    whole = render(environment_script(recipe, pins)) + install
    ready = render(environment_script(recipe, pins, venv_ready=True)) + install
    assert "python3 -m venv" in whole and "python3 -m venv" not in ready
    assert VENV_SEED not in whole
    assert ready.index(VENV_SEED) < ready.index("PIP_CONSTRAINT") < ready.index("pinned packages")
    tools = tools_script()
    assert tools.index(f"> {VENV_SEED}") < tools.index("pip uninstall")
    for script in (ready, share_history_script(onto_shared=True)):
        parsed = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
        assert parsed.returncode == 0, parsed.stderr


def test_the_own_pins_script_installs_only_the_given_pins_without_their_dependencies():
    script = render(own_pins_script(["flake8-comprehensions==3.16.0"]))
    assert "pins=(flake8-comprehensions==3.16.0)" in script
    assert "--no-deps" in script and f"source {ACTIVATE}" in script
    assert json.dumps("python3 -m venv") not in script  # no new virtual environment


# --- in real containers: the synthetic demo/calc instances -------------------------------


def _layers(docker_client, image: str) -> list[str]:
    return list(docker_client.api.inspect_image(image)["RootFS"]["Layers"])


def _whiteouts(docker_client, image: str) -> list[str] | None:
    """The paths the image's own top layer hides (overlay2 whiteouts), or None when this
    engine's layers cannot be read here."""
    graph = docker_client.api.inspect_image(image)["GraphDriver"]
    upper = Path(graph.get("Data", {}).get("UpperDir", ""))
    if graph.get("Name") != "overlay2" or not upper.is_dir():
        return None
    return [
        str(p.relative_to(upper))
        for p in upper.rglob("*")
        if p.is_char_device() and p.lstat().st_rdev == 0
    ]


def _run(docker_client, image: str, script: str) -> str:
    out = docker_client.containers.run(
        image, ["bash", "-c", script], remove=True, network_disabled=True,
        labels={"swe-green.run": "pytest-layers"},
    )  # fmt: skip
    return out.decode()


FREEZE = "source /opt/swe/activate.sh >/dev/null 2>&1; cd /; pip list --format=freeze"


@pytest.fixture
def layered(env_settings, synthetic_dir, docker_client, base_image, docker_backend, tmp_path):
    """Contexts of their own image prefixes over a dataset of three demo/calc instances: the
    real one, one with a pin of its own (``iniconfig==1.1.1``) and one of a newer
    environment (set-up and base commit the real base's child): the repository's history is
    the real base's, which the real one's environment shares whole."""
    from orchestrator.context.run_context import RunContext
    from orchestrator.context.run_dir import RunDir

    from .conftest import TEST_RUN_ID, remove_images_under

    rows = {
        json.loads(line)["instance_id"]: json.loads(line)
        for line in (synthetic_dir / "instances.jsonl").read_text().splitlines()
    }
    calc = rows["demo__calc-1"]
    mirror = env_settings.repos.mirror_dir / "demo__calc.git"
    child = subprocess.run(
        ["git", "--git-dir", str(mirror), "rev-list", "--reverse", "--ancestry-path",
         f"{calc['base_commit']}..HEAD"],
        capture_output=True, text=True, check=True,
    ).stdout.split()[0]  # fmt: skip
    own = calc | {"instance_id": "demo__calc-own"}
    newer = calc | {
        "instance_id": "demo__calc-newer", "base_commit": child,
        "environment_setup_commit": child,
    }  # fmt: skip
    dataset = tmp_path / "instances.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in (calc, own, newer)))
    recipes = json.loads((synthetic_dir / "recipes.json").read_text())
    for recipe in recipes:
        if recipe["repo"] == "demo/calc":
            recipe["instance_pins"] = {"demo__calc-own": ["iniconfig==1.1.1"]}
    recipes_file = tmp_path / "recipes.json"
    recipes_file.write_text(json.dumps(recipes))
    prefixes: list[str] = []

    def make(share_layers: bool) -> RunContext:
        prefix = f"{env_settings.environment.image_prefix}-layers{len(prefixes)}"
        prefixes.append(prefix)
        docker_client.images.get(base_image).tag(f"{prefix}/base", "py3.11")
        settings = env_settings.replace(
            dataset=str(dataset), recipes_file=recipes_file, image_prefix=prefix,
            data_dir=tmp_path / f"data-{prefix}", share_layers=share_layers,
        )  # fmt: skip
        return RunContext(settings, docker_backend, TEST_RUN_ID, RunDir(tmp_path / prefix))

    instances = {r["instance_id"]: Instance.model_validate(r) for r in (calc, own, newer)}
    yield make, instances, mirror
    for prefix in prefixes:
        remove_images_under(docker_client, prefix)


@pytest.mark.container
def test_environments_share_the_tools_the_history_and_their_recipes_environment(
    layered, docker_client
):
    from orchestrator.environments.build import prepare_instance
    from orchestrator.patches.container_diff import container_diff

    make, instances, mirror = layered
    ctx = make(share_layers=True)
    calc = prepare_instance(ctx, instances["demo__calc-1"])
    own = prepare_instance(ctx, instances["demo__calc-own"])
    newer = prepare_instance(ctx, instances["demo__calc-newer"])
    prefix = ctx.settings.environment.image_prefix
    shared = {t.split(":", 1)[1].split("-", 1)[0]: t for i in docker_client.images.list(
        name=f"{prefix}/env") for t in i.tags if ":tools-" in t or ":history-" in t}  # fmt: skip
    assert set(shared) == {"tools", "history"}
    tools, history = (
        _layers(docker_client, shared["tools"]),
        _layers(docker_client, shared["history"]),
    )
    base = _layers(docker_client, f"{prefix}/base:py3.11")
    # base < tools < history < each environment (one layer each) < the own pins' layer
    assert tools[:-1] == base and history[:-1] == tools
    for prepared in (calc, newer):
        assert _layers(docker_client, prepared.env_image)[:-1] == history
    calc_env = _layers(docker_client, calc.env_image)
    assert _layers(docker_client, own.env_image)[:-1] == calc_env
    own_layer = docker_client.api.history(own.env_image)[0]["Size"]
    assert 0 < own_layer < 2_000_000
    # the own pin replaces the recipe's; the rest is the recipe's environment
    calc_freeze, own_freeze = (
        _run(docker_client, p.env_image, FREEZE).split() for p in (calc, own)
    )  # fmt: skip
    assert "iniconfig==2.0.0" in calc_freeze and "iniconfig==1.1.1" in own_freeze
    assert {p for p in calc_freeze if not p.startswith("iniconfig==")} == {
        p for p in own_freeze if not p.startswith("iniconfig==")
    }
    # nothing dead: no installer cache, the interpreter once, no file hidden
    venv = _run(
        docker_client,
        own.env_image,
        "ls /root/.cache/pip /root/.cache/uv 2>/dev/null; "
        "stat -c %i /opt/swe/venv/bin/python /opt/swe/venv/bin/python3* | sort -u",
    )
    assert len(venv.split()) == 1, venv
    for image in (shared["tools"], shared["history"], calc.env_image, newer.env_image):
        hidden = _whiteouts(docker_client, image)
        assert not hidden, (image, hidden)
    # the history: the repository's once (the real base), each environment what it adds
    packs = "ls /testbed/.git/objects/pack/*.pack | wc -l"
    assert _run(docker_client, calc.env_image, packs).strip() == "1"
    assert _run(docker_client, newer.env_image, packs).strip() == "2"
    for prepared, instance in (
        (calc, "demo__calc-1"),
        (own, "demo__calc-own"),
        (newer, "demo__calc-newer"),
    ):
        base_commit = instances[instance].base_commit
        objects = _run(
            docker_client,
            prepared.instance_image,
            "cd /testbed && git status --porcelain && "
            "git cat-file --batch-all-objects --batch-check='%(objectname)'",
        )
        reachable = _reachable(mirror, base_commit)
        assert set(objects.split()) == reachable, instance
        # nor is any other object in a pack or a loose object anywhere in the image
        assert set(_run(docker_client, prepared.instance_image, ALL_OBJECTS).split()) == (
            reachable
        ), instance
    # a container of the instance image, its repository used as a participant's is, copies
    # nothing of the history up: the packs stay the image's
    sandbox = ctx.start_sandbox(
        calc.instance_image, instances["demo__calc-1"], "participant", network=False
    )
    try:
        edit = "cd /testbed && git status --porcelain && echo >> $(git ls-files | head -1)"
        assert sandbox.exec(edit, timeout=60).ok
        assert container_diff(sandbox, instances["demo__calc-1"].base_commit)
        changed = [c["Path"] for c in docker_client.api.diff(sandbox.name) or []]
    finally:
        sandbox.remove()  # not left for later tests of the run that count its containers
    assert changed and not [p for p in changed if p.startswith("/testbed/.git/objects")]


# every object id in the image's packs (their indexes) and loose objects, wherever they lie
ALL_OBJECTS = r"""
find / -xdev -type f -name '*.idx' 2>/dev/null | while read -r idx; do
  git show-index < "$idx" 2>/dev/null | cut -d' ' -f2
done
find / -xdev -type f -regextype posix-extended -regex '.*/objects/[0-9a-f]{2}/[0-9a-f]{38}' \
  2>/dev/null | sed -E 's#.*/objects/([0-9a-f]{2})/#\1#'
"""


@pytest.mark.container
def test_an_environment_on_its_recipes_has_the_packages_of_a_whole_build(layered, docker_client):
    from orchestrator.environments.build import prepare_instance

    make, instances, _ = layered
    layered_env = prepare_instance(make(share_layers=True), instances["demo__calc-own"])
    whole = make(share_layers=False)
    whole_env = prepare_instance(whole, instances["demo__calc-own"])
    base = f"{whole.settings.environment.image_prefix}/base:py3.11"
    assert _layers(docker_client, whole_env.env_image)[:-1] == _layers(docker_client, base)
    assert sorted(_run(docker_client, layered_env.env_image, FREEZE).split()) == sorted(
        _run(docker_client, whole_env.env_image, FREEZE).split()
    )


def _reachable(mirror: Path, commit: str) -> set[str]:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", str(mirror), *args], capture_output=True, text=True, check=True
        ).stdout

    tags = git("for-each-ref", f"--merged={commit}", "--format=%(objectname)", "refs/tags")
    return {
        line.split()[0] for line in git("rev-list", "--objects", commit, *tags.split()).splitlines()
    }
