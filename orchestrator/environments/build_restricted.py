"""Phases 1-4 under the restricted Docker policy (Amber's gateway: no commit): the set-up in
one container per instance, its files kept on the host (:mod:`orchestrator.sandbox.file_snapshot`)
for the containers that follow."""

from __future__ import annotations

import time

from orchestrator.environments.build import (
    EnvImage,
    PreparedInstance,
    building,
    check_out_base,
    reinstall_at_base,
    setup_environment,
)
from orchestrator.environments.failed_builds import failed_build
from orchestrator.environments.plan import SetupFailed, instance_image_name, plan_environment
from orchestrator.environments.repo_cache import check_complete
from orchestrator.errors import UserError
from orchestrator.models import Instance
from orchestrator.run.context import RunContext
from orchestrator.sandbox.file_snapshot import capture


def prepare_without_commit(ctx: RunContext, instance: Instance) -> PreparedInstance:
    """Phases 1-4 in one container with the network on, for a Docker engine that refuses
    commits (Amber's gateway): no image cache, the set-up runs for every instance. Its
    files become a :class:`FileSnapshot` that the validation, participant and grading
    containers (created without a network) start from."""
    log_path = ctx.instance_dir(instance) / "setup.log"
    timings: dict[str, float] = {}
    started = time.monotonic()
    plan = plan_environment(ctx, instance)
    try:
        check_complete(ctx.settings, instance)
    except UserError as exc:
        raise SetupFailed(f"checkout: {exc}") from exc
    remembered = failed_build(ctx, plan.env_key)
    if remembered is not None:
        raise SetupFailed(f"environment setup: {remembered}")
    sandbox = ctx.start_sandbox(plan.base_image, instance, "setup", network=True)
    built = EnvImage(name="", cache_hit=False)
    with building(ctx, sandbox, "environment setup"):
        setup_environment(ctx, instance, plan, sandbox, log_path, built)
        timings["setup"] = time.monotonic() - started
        started = time.monotonic()
        reinstall = reinstall_at_base(ctx, instance, plan, built.reinstall, log_path)
        check_out_base(ctx, instance, sandbox, log_path, reinstall)
        files = capture(
            sandbox,
            instance_image_name(ctx, instance, plan),
            ctx.settings.storage.data_dir / "files",
        )
        with open(log_path, "a") as fh:
            fh.write(
                f"set-up files kept on the host (no commit under the restricted Docker policy): "
                f"{files.size / 1e6:.1f} MB, {len(files.deleted)} deleted path(s)\n"
            )
    timings["base_commit"] = time.monotonic() - started
    return PreparedInstance(
        plan=plan,
        env_image="",
        instance_image=files,
        env_cache_hit=False,
        instance_cache_hit=False,
        test_cmd=built.test_cmd,
        setup_tokens=built.tokens,
        timings=timings,
        python_used=built.python,
    )
