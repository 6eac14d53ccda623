"""The names of the images an environment plan makes: the base images, the shared tools
and history layers, the environment and the instance."""

from __future__ import annotations

from orchestrator.context.run_context import RunContext
from orchestrator.models import Instance
from orchestrator.plan.env_plan import EnvPlan


def image_name(prefix: str, python: str) -> str:
    return f"{prefix}/base:py{python}"


def tools_image_name(ctx: RunContext, plan: EnvPlan, key: str) -> str:
    return f"{ctx.settings.environment.image_prefix}/env:tools-py{plan.python}-{key}"


def history_image_name(ctx: RunContext, instance: Instance, key: str) -> str:
    return (
        f"{ctx.settings.environment.image_prefix}/env:history-{instance.owner_name.lower()}-{key}"
    )


def env_image_name(ctx: RunContext, instance: Instance, plan: EnvPlan) -> str:
    return (
        f"{ctx.settings.environment.image_prefix}/env:{instance.owner_name.lower()}-{plan.env_key}"
    )


def instance_image_name(ctx: RunContext, instance: Instance, plan: EnvPlan) -> str:
    tag = f"{instance.instance_id.lower()}-{plan.instance_key(instance)}"
    return f"{ctx.settings.environment.image_prefix}/instance:{tag}"
