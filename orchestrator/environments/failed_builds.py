"""Failed environment builds, remembered (``env_failure_ttl``): instances needing one fail at
once with the first failure's reason, instead of rebuilding it every time. A build that failed
because the network was out of reach (an outage, not the recipe), or because the run was
interrupted (its containers removed under it), is not remembered."""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel

from orchestrator.atomic import atomic_write_text, read_cached
from orchestrator.context.run_context import RunContext
from orchestrator.models import Instance
from orchestrator.network_errors import NETWORK_ERROR


class FailedBuild(BaseModel):
    """A failed environment build, remembered so that later instances fail at once."""

    why: str
    instance_id: str  # the instance whose build failed (its setup.log has the output)
    run_id: str
    at: float


def _failure_path(ctx: RunContext, env_key: str) -> Path:
    return ctx.settings.storage.data_dir / "env-failures" / f"{env_key}.json"


def remember_failed_build(ctx: RunContext, env_key: str, instance: Instance, why: str) -> None:
    """Record that the set-up script failed for ``env_key`` (not an engine error, not a
    network outage and not a run's interruption: those are never remembered, the next
    instance builds again)."""
    ttl = ctx.settings.environment.env_failure_ttl
    if ttl <= 0 or NETWORK_ERROR.search(why) or ctx.cancelled.is_set():
        return
    path = _failure_path(ctx, env_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    failed = FailedBuild(
        why=why, instance_id=instance.instance_id, run_id=ctx.run_id, at=time.time()
    )
    atomic_write_text(path, failed.model_dump_json())


def failed_build(ctx: RunContext, env_key: str) -> str | None:
    """The message for a build of ``env_key`` that failed within ``env_failure_ttl``, if any."""
    path = _failure_path(ctx, env_key)
    ttl = ctx.settings.environment.env_failure_ttl
    failed = read_cached(path, FailedBuild.model_validate_json, "failed builds")
    if failed is None:
        return None
    age = time.time() - failed.at
    if ttl <= 0 or age > ttl:
        return None
    return (
        f"{failed.why} [this environment's build failed {age / 60:.0f} min ago for "
        f"{failed.instance_id} in run {failed.run_id}, see its setup.log; it is not rebuilt for "
        f"{ttl / 3600:.3g} h: set SWE_GREEN_ENV_FAILURE_TTL=0 to retry now]"
    )
