"""Planning an instance's environment: the strategy (recipe, inferred or LLM), the Python,
the base image, and the cache keys of the environment and instance images."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from orchestrator.context.run_context import RunContext
from orchestrator.errors import UserError
from orchestrator.models import Instance
from orchestrator.plan.env_plan import EnvPlan, InferredPlan
from orchestrator.plan.install import SETUP_SCRIPT_VERSION
from orchestrator.plan.pins import build_constraints
from orchestrator.recipes.recipe import Recipe, load_recipes, pins_for, recipe_key
from orchestrator.settings import Settings
from orchestrator.setup.images import base_pythons, ensure_image
from orchestrator.setup.infer import INFER_VERSION, InferenceFailed, infer_environment


class SetupFailed(Exception):
    """Phases 1-4 failed for an instance: the instance is an error with reason ``environment``."""

    def __init__(self, message: str, container: str | None = None) -> None:
        super().__init__(message)
        self.container = container


def find_recipe(settings: Settings, instance: Instance) -> Recipe | None:
    """The user's recipes file first, then the shipped recipes."""
    extra = settings.environment.recipes_file
    if extra is not None:
        try:
            items = json.loads(Path(extra).read_text())
            for item in items if isinstance(items, list) else items.get("recipes", []):
                recipe = Recipe.model_validate(item)
                if (recipe.repo, recipe.version) == (instance.repo, instance.version):
                    return recipe
        except (OSError, ValueError) as exc:
            raise UserError(
                f"Cannot read recipes file {extra}: {str(exc).splitlines()[0]}",
                "fix the file (a JSON list of recipes) or unset SWE_GREEN_RECIPES_FILE.",
            ) from exc
    return load_recipes().get((instance.repo, instance.version))


def plan_environment(
    ctx: RunContext,
    instance: Instance,
    forced: Literal["infer", "llm"] | None = None,
) -> EnvPlan:
    """Pick the strategy (``forced``: this one, not the setting's), the Python and the
    base image; compute the cache key."""
    settings = ctx.settings
    recipe = find_recipe(settings, instance)
    available = base_pythons(ctx.backend, settings.environment)
    if not available:
        raise UserError(
            "No base image is built on this host.",
            "run `swe-green images build --python 3.11`, or set SWE_GREEN_BASE_IMAGE_REGISTRY "
            "to where the base images are published.",
        )
    strategy = forced or _strategy(settings, instance, recipe)
    pins: list[str] = []
    if strategy == "llm":
        _check_llm(settings, instance)
    inferred = None
    if strategy == "infer":
        inferred = infer(settings, instance, available)
        recipe = inferred.recipe
        python, exact = recipe.python, True
        identity = {"strategy": "infer", "recipe": recipe_key(recipe), "infer": INFER_VERSION}
    elif strategy == "recipe":
        assert recipe is not None
        python, exact = recipe.nearest_python(available)
        pins = pins_for(recipe, instance)
        identity = {"strategy": "recipe", "recipe": recipe_key(recipe), "pins": pins}
        if (settings.environment.fetch_python or settings.environment.python_mirror) and not exact:
            identity["fetch_python"] = recipe.python
    else:
        python = (
            settings.environment.base_python
            if settings.environment.base_python in available
            else available[-1]
        )
        exact = True
        identity = {"strategy": "llm", "model": settings.setup_agent.setup_model}
    family_key, own = None, list[str]()
    if strategy == "recipe" and settings.environment.share_layers:
        assert recipe is not None
        own = own_pins(recipe, instance)
        if own:
            family_key = _env_key(instance, python, identity | {"pins": list(recipe.packages)})
    base_image = settings.environment.base_image(python)
    ensure_image(ctx.backend, base_image)  # pulled from the registry when missing
    return EnvPlan(
        strategy=strategy,
        recipe=recipe if strategy in ("recipe", "infer") else None,
        inferred=inferred,
        python=python,
        python_exact=exact,
        base_image=base_image,
        pins=pins,
        env_key=_env_key(instance, python, identity),
        fetch_python=identity.get("fetch_python"),
        family_key=family_key,
        own_pins=own,
    )


def _env_key(instance: Instance, python: str, identity: Mapping[str, object]) -> str:
    """The environment image's cache key: what the environment is built from."""
    raw = json.dumps(
        {"repo": instance.repo, "commit": instance.environment_setup_commit, "python": python}
        | dict(identity)
        | {"script": SETUP_SCRIPT_VERSION},
        sort_keys=True,
    )
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def own_pins(recipe: Recipe, instance: Instance) -> list[str]:
    """The instance's own pins when its environment can be the recipe's plus a layer of them
    (:func:`pins_for` replaces or adds only those; nothing is removed), else []. Not when
    they would change the build constraints the recipe's environment was installed under
    (a newer setuptools pin raises the cap)."""
    own = list(recipe.instance_pins.get(instance.instance_id, []))
    if not own or build_constraints(pins_for(recipe, instance)) != build_constraints(
        list(recipe.packages)
    ):
        return []
    return own


def infer(settings: Settings, instance: Instance, available: list[str]) -> InferredPlan:
    """The inferred environment of ``instance`` (SetupFailed when its files cannot be read)."""
    try:
        return infer_environment(settings, instance, available)
    except InferenceFailed as exc:
        raise SetupFailed(f"inference: {exc}") from exc


def _strategy(
    settings: Settings, instance: Instance, recipe: Recipe | None
) -> Literal["recipe", "infer", "llm"]:
    """The set-up strategy: the setting, ``auto`` resolved (a recipe when there is one,
    else the inferred environment); SetupFailed when the strategy cannot set this instance
    up."""
    strategy = settings.environment.setup_strategy
    if strategy == "auto":
        strategy = "recipe" if recipe else "infer"
    if strategy == "recipe" and recipe is None:
        raise SetupFailed(
            f"no recipe for {instance.repo} version {instance.version!r}; "
            "use setup_strategy=infer, auto, or llm with an API key"
        )
    return strategy


def fallback_note(plan: EnvPlan, failure: str) -> str:
    """What the LLM agent is told of the inferred environment it starts from."""
    inferred = plan.inferred.text() if plan.inferred is not None else "(no inferred plan)"
    return f"{inferred}\n\nIt failed: {failure}"


def llm_fallback_available(settings: Settings) -> bool:
    """Whether ``auto`` may ask the LLM agent when the inferred environment fails."""
    from orchestrator.setup.agent.setup_llm import llm_available

    return settings.environment.setup_strategy == "auto" and llm_available(settings.setup_agent)


def _check_llm(settings: Settings, instance: Instance) -> None:
    """SetupFailed when the LLM agent cannot run (no API key); a UserError for bad settings."""
    from orchestrator.setup.agent.setup_llm import check_llm_settings, llm_available

    if not llm_available(settings.setup_agent):
        raise SetupFailed(
            f"no recipe for {instance.repo} version {instance.version!r} and no API key "
            "for the LLM setup agent (set ANTHROPIC_API_KEY)"
        )
    check_llm_settings(settings)
