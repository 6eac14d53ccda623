"""``swe-green envs``: the environment image cache (:mod:`.app` registers them)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Annotated

import typer

from orchestrator.errors import UserError
from orchestrator.frontends.cli.common import (
    Dataset,
    console,
    load_settings,
    select_instances,
)

if TYPE_CHECKING:
    from orchestrator.housekeeping.prune import PrunePlan
    from orchestrator.models import Instance
    from orchestrator.settings import Settings


def envs_ls() -> None:
    """List the cached environment and instance images, least recently used first."""
    from rich.table import Table

    from orchestrator.housekeeping.prune import cached_images
    from orchestrator.sandbox.factory import backend_from

    settings = load_settings()
    table = Table("image", "kind", "own size", "last used")
    images = cached_images(
        backend_from(settings), settings.storage.data_dir, settings.environment.image_prefix
    )
    for image in images:
        table.add_row(image.tag, image.kind, _size(image.size), _ago(image.last_used))
    console.print(table)
    console.print(f"{len(images)} image(s), {_size(sum(i.size for i in images))}")


def envs_plan(
    instance_id: Annotated[str, typer.Argument(help="The instance whose environment to show.")],
    as_json: Annotated[bool, typer.Option("--json", help="The steps as JSON data.")] = False,
    strategy: Annotated[
        str | None,
        typer.Option(help="recipe, or infer: the environment inferred from the repository."),
    ] = None,
    dataset: Dataset = None,
) -> None:
    """Show how a recipe builds an instance's environment: the steps of phase 2 (the Python,
    the virtual environment, the activate script) and phase 3 (build tools, pins, install),
    each with the bash it runs. With ``--strategy infer`` (or ``auto`` and no recipe), the
    environment inferred from the repository's files at the instance's environment commit,
    and why each part is what it is: a plan to read, or to freeze as a recipe (its
    ``recipe`` in the JSON)."""
    from orchestrator.plan.install import install_script
    from orchestrator.recipes.recipe import pins_for
    from orchestrator.setup.plan import find_recipe
    from orchestrator.setup.scripts import environment_script

    settings = load_settings(dataset=dataset, setup_strategy=strategy)
    chosen = select_instances(settings, [instance_id], None, None, None, None)
    if not chosen:
        raise UserError(
            f"No instance {instance_id} in the dataset.", "check the id (instances ls)."
        )
    instance = chosen[0]
    recipe = find_recipe(settings, instance)
    wanted = settings.environment.setup_strategy
    if wanted == "infer" or (wanted == "auto" and recipe is None):
        _print_inferred(settings, instance, as_json)
        return
    if recipe is None:
        raise UserError(
            f"No recipe for {instance.repo} {instance.version}.",
            "show the inferred environment (--strategy infer), or add a recipe with "
            "SWE_GREEN_RECIPES_FILE.",
        )
    pins = pins_for(recipe, instance)
    scripts = [environment_script(recipe, pins), install_script(recipe, pins)]
    if as_json:
        print(json.dumps([s.model_dump() for s in scripts], indent=2))
        return
    console.print(f"{instance.instance_id}: {recipe.repo} {recipe.version}, Python {recipe.python}")
    for phase, script in zip(("phase 2", "phase 3"), scripts, strict=True):
        for step in script.steps:
            console.rule(f"{phase} ({script.name}): {step.title}")
            console.print(step.bash or "(nothing)", markup=False, highlight=False, soft_wrap=True)


def _print_inferred(settings: Settings, instance: Instance, as_json: bool) -> None:
    """The environment inferred for ``instance``, on the Pythons of this host's base images
    (the published ones when there are none yet), with the scripts that would build it."""
    from orchestrator.errors import SandboxError
    from orchestrator.plan.install import install_script
    from orchestrator.sandbox.factory import backend_from
    from orchestrator.setup.images import SUITES, base_pythons
    from orchestrator.setup.infer import InferenceFailed, infer_environment
    from orchestrator.setup.scripts import environment_script

    try:
        available = base_pythons(backend_from(settings), settings.environment)
    except (SandboxError, UserError):
        available = []
    try:
        plan = infer_environment(settings, instance, available or list(SUITES))
    except InferenceFailed as exc:
        raise UserError(str(exc), "check the repository's mirror (SWE_GREEN_MIRROR_DIR).") from exc
    scripts = [environment_script(plan.recipe, []), install_script(plan.recipe, [])]
    if as_json:
        data = plan.model_dump(mode="json") | {"scripts": [s.model_dump() for s in scripts]}
        print(json.dumps(data, indent=2))
        return
    console.print(f"{instance.instance_id}: inferred environment", markup=False)
    console.print(plan.text(), markup=False, highlight=False, soft_wrap=True)


def envs_prune(
    keep_days: Annotated[
        float | None,
        typer.Option("--keep-days", metavar="N", help="Remove images unused for N days."),
    ] = None,
    max_size: Annotated[
        str | None,
        typer.Option(
            "--max-size", metavar="SIZE",
            help="Then remove the least recently used until the rest fit, e.g. 200G.",
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only say what would go.")] = False,
) -> None:  # fmt: skip
    """Remove cached environment and instance images, least recently used first (all of them
    without --keep-days/--max-size), never those of a run in progress."""
    from pydantic import ByteSize, TypeAdapter, ValidationError

    from orchestrator.housekeeping.prune import execute_prune, plan_prune
    from orchestrator.sandbox.factory import backend_from

    limit = None
    if max_size is not None:
        try:
            limit = int(TypeAdapter(ByteSize).validate_python(max_size))
        except ValidationError:
            raise UserError(
                f"--max-size {max_size!r} is not a size.", "write it like 200G, 500MB or 1.5T."
            ) from None
    if keep_days is not None and keep_days < 0:
        raise UserError("--keep-days must be 0 or more.", "pass a number of days, e.g. 14.")
    settings = load_settings()
    backend = backend_from(settings)
    plan = plan_prune(
        backend,
        settings.storage.data_dir,
        settings.environment.image_prefix,
        keep_days=keep_days,
        max_size=limit,
    )
    removed = [image.tag for image in plan.remove]
    if not dry_run:
        removed = execute_prune(backend, settings.storage.data_dir, plan)
    for line in prune_lines(plan, removed, dry_run=dry_run):
        console.print(line, highlight=False)


def prune_lines(plan: PrunePlan, removed: list[str], *, dry_run: bool) -> list[str]:
    """What ``envs prune`` says: the count and size of the images removed (or, with
    ``dry_run``, to be removed), then each of them; an image the engine refused to remove
    (a container or another image depends on it) is counted and listed as kept."""
    gone = [image for image in plan.remove if image.tag in set(removed)]
    stayed = [image for image in plan.remove if image.tag not in set(removed)]
    kept_size = plan.kept_size + sum(image.size for image in stayed)
    verb = "would remove" if dry_run else "removed"
    lines = [
        f"{verb} {len(gone)} image(s), {_size(sum(image.size for image in gone))}; "
        f"{len(plan.keep) + len(stayed)} kept, {_size(kept_size)}"
    ]
    lines += [
        f"  - {image.tag}  {_size(image.size)}  last used {_ago(image.last_used)}" for image in gone
    ]
    lines += [f"  - container {name} (used a removed image)" for name in plan.containers]
    lines += [f"  kept {image.tag}: {image.protected}" for image in plan.keep if image.protected]
    lines += [
        f"  kept {image.tag}: the engine refused (in use by a container or another image)"
        for image in stayed
    ]
    return lines


def _size(size: int) -> str:
    from pydantic import ByteSize

    return ByteSize(size).human_readable(decimal=True)


def _ago(epoch: float) -> str:
    days = (time.time() - epoch) / 86400
    return f"{days:.1f} days ago" if days >= 1 else f"{days * 24:.1f} h ago"
