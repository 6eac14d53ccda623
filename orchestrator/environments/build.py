"""The images of phases 1-4: :func:`environment` (phases 1-3) and :func:`base_commit`
(phase 4), each from the caches where possible.

The outcome of phases 1-3 is an *environment image* keyed by (repo, environment_setup_commit,
recipe or agent); the outcome of phase 4 is an *instance image* (the repository at
``base_commit``, its history cut after the base). Both are cached: a later instance or run
with the same key starts from the image. Two instances needing the same missing image at once
build it once (a host file lock per key).

Every environment (recipe or LLM) keeps the container contract of
:mod:`sandbox_tools.contract`.
"""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel

from orchestrator.atomic import append_text
from orchestrator.base_commit import reinstall_at_base
from orchestrator.context.run_context import RunContext
from orchestrator.environments.build_steps import cached
from orchestrator.environments.env_image import EnvImage, ensure_env_image
from orchestrator.environments.instance_image import ensure_instance_image
from orchestrator.environments.prepared import PreparedInstance
from orchestrator.errors import UserError
from orchestrator.image_names import instance_image_name
from orchestrator.models import Instance
from orchestrator.plan.env_plan import EnvPlan
from orchestrator.repos.repo_cache import check_complete
from orchestrator.sandbox import Snapshot
from orchestrator.setup.plan import (
    SetupFailed,
    fallback_note,
    llm_fallback_available,
    plan_environment,
)


class Environment(BaseModel):
    """Phases 1-3's outcome for one instance: its plan and its environment image."""

    plan: EnvPlan
    image: EnvImage
    seconds: float = 0.0


def environment(
    ctx: RunContext, instance: Instance, fallback_from: str | None = None
) -> Environment:
    """Phases 1-3 for one instance (:func:`~orchestrator.environments.env_image.ensure_env_image`
    runs check_out, set_up and install_dependencies when no cache has the image).

    Strategy ``auto``: an inferred environment that cannot be built is handed, with its
    failure, to the LLM agent when an API key is set; ``fallback_from`` (an inferred
    environment's plan and how it failed) asks the agent directly."""
    started = time.monotonic()
    if fallback_from is not None:
        plan = plan_environment(ctx, instance, "llm")
        plan = plan.model_copy(update={"fallback_from": fallback_from})
    else:
        plan = plan_environment(ctx, instance)
    prefix = ctx.settings.environment.image_prefix
    name = instance_image_name(prefix, instance.instance_id, plan.instance_key(instance))
    if not cached(ctx, name):
        try:
            check_complete(ctx.settings, instance)
        except UserError as exc:
            raise SetupFailed(f"checkout: {exc}") from exc
    log_path = _log_path(ctx, instance)
    try:
        image = ensure_env_image(ctx, instance, plan, log_path)
    except SetupFailed as exc:
        if plan.strategy != "infer" or not llm_fallback_available(ctx.settings):
            raise
        note = fallback_note(plan, f"environment set-up: {exc}")
        append_text(log_path, "the inferred environment failed; the LLM setup agent takes over\n")
        return environment(ctx, instance, note)
    return Environment(plan=plan, image=image, seconds=time.monotonic() - started)


def base_commit(ctx: RunContext, instance: Instance, env: Environment) -> PreparedInstance:
    """Phase 4 for one instance, from the cache where possible (else
    :func:`~orchestrator.base_commit.prepare_base_commit` in a container of the environment);
    what the instance's containers start from is what the backend kept
    (:meth:`.SandboxBackend.keep`).

    One sequence for every backend: what differs is what the backend and its image store
    answer: under the full Docker policy images (committed, cached, pulled, tagged and
    pushed); under the restricted one (Amber's gateway: no commit, tag or push) host file
    packs over the image the set-up started from, nothing cached or pushed, a pulled image
    used under its registry reference."""
    log_path = _log_path(ctx, instance)
    started = time.monotonic()
    plan, image = env.plan, env.image
    reinstall = reinstall_at_base(ctx.settings, instance, plan, image.reinstall, log_path)
    try:
        kept, inst_hit = ensure_instance_image(
            ctx, instance, plan, image.start_from(), log_path, reinstall, image.shared_history
        )
    finally:
        image.start_from().discard()  # a host file pack (the restricted policy); images stay
    _note_kept(log_path, kept)
    return PreparedInstance(
        plan=plan,
        env_image=image.name,
        snapshot=kept,
        env_cache_hit=image.cache_hit,
        instance_cache_hit=inst_hit,
        test_cmd=image.test_cmd,
        setup_tokens=image.tokens,
        timings={"setup": env.seconds, "base_commit": time.monotonic() - started},
        python_used=image.python,
    )


def prepare_instance(
    ctx: RunContext, instance: Instance, fallback_from: str | None = None
) -> PreparedInstance:
    """Phases 1-4 for one instance, from the caches where possible (a sweep, a benchmark);
    ``fallback_from``: the LLM agent's, from an inferred environment that failed."""
    return base_commit(ctx, instance, environment(ctx, instance, fallback_from))


def _log_path(ctx: RunContext, instance: Instance) -> Path:
    return ctx.instance_dir(instance) / "setup.log"


def _note_kept(log_path: Path, kept: Snapshot) -> None:
    """Say in the set-up log how big a host file pack the backend kept, if it kept one."""
    if kept.archive is None:
        return
    append_text(
        log_path,
        f"set-up files kept on the host (no commit under the restricted Docker policy): "
        f"{kept.size / 1e6:.1f} MB, {len(kept.deleted)} deleted path(s)\n",
    )
