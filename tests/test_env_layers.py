"""Layers that environment images share: the tools image, and an environment built on its
recipe's environment plus the instance's own pins (setting share_layers)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from orchestrator.dataset.instances import load_instances
from orchestrator.environments.env_layers import tools_key, tools_script
from orchestrator.environments.plan import EnvPlan, own_pins
from orchestrator.environments.recipes import load_recipes, pins_for
from orchestrator.environments.setup_scripts import own_pins_script

DATASET = Path(__file__).resolve().parents[2] / "shared" / "data" / "swe-bench-verified.jsonl"


def _versions(pins: list[str]) -> dict[str, str]:
    return {p.partition("==")[0].lower(): p.partition("==")[2] for p in pins}


@pytest.fixture(scope="module")
def instances() -> dict:
    if not DATASET.exists():
        pytest.skip(f"{DATASET} is not here")
    return {i.instance_id: i for i in load_instances(str(DATASET))}


def test_the_recipes_environment_plus_the_own_pins_is_the_instances_pin_set(instances):
    """Every Verified instance with pins of its own: the family's pins with the own pins
    laid over them are exactly the pins of a whole build (nothing removed, nothing else)."""
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
    "script", [tools_script(), own_pins_script(["a==1.0", "b==2.0.1"]), own_pins_script([])]
)
def test_the_layer_scripts_are_bash(script):
    parsed = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert parsed.returncode == 0, parsed.stderr


def test_the_own_pins_script_installs_only_the_given_pins_without_their_dependencies():
    script = own_pins_script(["flake8-comprehensions==3.16.0"])
    assert "pins=(flake8-comprehensions==3.16.0)" in script
    assert "--no-deps" in script and "source /opt/swe/activate.sh" in script
    assert json.dumps("python3 -m venv") not in script  # no new virtual environment
