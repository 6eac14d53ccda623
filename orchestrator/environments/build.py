"""Phases 1-4: checkout, environment setup, dependencies, base commit and history hygiene.

The outcome of phases 1-3 is an *environment image* keyed by (repo, environment_setup_commit,
recipe or agent); the outcome of phase 4 is an *instance image* (the repository at
``base_commit``, its history cut after the base). Both are cached: a later instance or run
with the same key starts from the image. Two instances needing the same missing image at once
build it once (a host file lock per key).

Contract of every environment (recipe or LLM): ``/testbed`` holds the repository and
sourcing ``/opt/swe/activate.sh`` in bash activates its Python environment and cd's there.
"""

from __future__ import annotations

import time
from pathlib import Path

from orchestrator.base_commit import reinstall_at_base
from orchestrator.checkout.repo_cache import check_complete
from orchestrator.context.run_context import RunContext
from orchestrator.environments.build_steps import cached
from orchestrator.environments.env_image import ensure_env_image
from orchestrator.environments.instance_image import ensure_instance_image
from orchestrator.environments.prepared import PreparedInstance
from orchestrator.errors import UserError
from orchestrator.models import Instance
from orchestrator.sandbox import Snapshot
from orchestrator.setup.plan import (
    SetupFailed,
    instance_image_name,
    plan_environment,
)


def prepare_instance(ctx: RunContext, instance: Instance) -> PreparedInstance:
    """Phases 1-4 for one instance, from the caches where possible; what the instance's
    containers start from is what the backend kept (:meth:`SandboxBackend.keep`).

    One sequence for every backend: phases 1-3 in a set-up sandbox kept as the environment,
    phase 4 in a second one started from it, kept as the instance. What differs is what the
    backend and its image store answer: under the full Docker policy images (committed,
    cached, pulled, tagged and pushed); under the restricted one (Amber's gateway: no
    commit, tag or push) host file packs over the image the set-up started from, nothing
    cached or pushed, a pulled image used under its registry reference."""
    log_path = ctx.instance_dir(instance) / "setup.log"
    timings: dict[str, float] = {}
    started = time.monotonic()
    plan = plan_environment(ctx, instance)
    if not cached(ctx, instance_image_name(ctx, instance, plan)):
        try:
            check_complete(ctx.settings, instance)
        except UserError as exc:
            raise SetupFailed(f"checkout: {exc}") from exc
    env = ensure_env_image(ctx, instance, plan, log_path)
    timings["setup"] = time.monotonic() - started
    started = time.monotonic()
    reinstall = reinstall_at_base(ctx.settings, instance, plan, env.reinstall, log_path)
    try:
        kept, inst_hit = ensure_instance_image(
            ctx, instance, plan, env.start_from(), log_path, reinstall, env.shared_history
        )
    finally:
        env.start_from().discard()  # a host file pack (the restricted policy); images stay
    _note_kept(log_path, kept)
    timings["base_commit"] = time.monotonic() - started
    return PreparedInstance(
        plan=plan,
        env_image=env.name,
        snapshot=kept,
        env_cache_hit=env.cache_hit,
        instance_cache_hit=inst_hit,
        test_cmd=env.test_cmd,
        setup_tokens=env.tokens,
        timings=timings,
        python_used=env.python,
    )


def _note_kept(log_path: Path, kept: Snapshot) -> None:
    """Say in the set-up log how big a host file pack the backend kept, if it kept one."""
    if kept.archive is None:
        return
    with open(log_path, "a") as fh:
        fh.write(
            f"set-up files kept on the host (no commit under the restricted Docker policy): "
            f"{kept.size / 1e6:.1f} MB, {len(kept.deleted)} deleted path(s)\n"
        )
