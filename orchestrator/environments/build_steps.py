"""Building an image in a sandbox: a host lock per image key, and a failed build's container
kept for inspection (per settings) or removed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from filelock import FileLock

from orchestrator.context.run_context import RunContext
from orchestrator.errors import SandboxError, UserError
from orchestrator.housekeeping.engine_locks import engine_lock
from orchestrator.housekeeping.kept import keep_stopped, room_to_keep
from orchestrator.sandbox import Sandbox
from orchestrator.sandbox.scripts import ScriptFailed
from orchestrator.setup.plan import SetupFailed


@contextlib.contextmanager
def image_lock(ctx: RunContext, key: str) -> Iterator[None]:
    """The lock under which the image of ``key`` is looked up and built, so that instances
    needing it at once build it once: a host lock in the data directory, then the engine's
    (users with other data directories); none when the backend keeps no images (the
    restricted policy: what a build keeps is one instance's host file, reused by none, so
    instances build side by side)."""
    if not ctx.backend.commits:
        yield
        return
    locks = ctx.settings.storage.data_dir / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    image = ctx.settings.environment.base_image()
    # the engine's lock is per image prefix: users with other prefixes build other images,
    # and a lookup of one's own cached image never waits for another's build
    engine_key = f"{key}@{ctx.settings.environment.image_prefix}"
    with FileLock(str(locks / f"{key}.lock")), engine_lock(ctx.backend, engine_key, image):
        yield


def cached(ctx: RunContext, name: str) -> bool:
    """An environment or instance image of this host's cache: only a backend that keeps
    images has one (under the restricted policy nothing it built is reused, so an image of
    that name on the engine, which it could not have made, is not taken for it)."""
    return ctx.backend.commits and ctx.backend.images.exists(name)


@contextlib.contextmanager
def building(ctx: RunContext, sandbox: Sandbox, what: str) -> Iterator[None]:
    """Build in ``sandbox``: any failure becomes SetupFailed (the container kept for
    inspection, per settings); success removes the container."""
    try:
        yield
    except SetupFailed:
        raise
    except (SandboxError, UserError, ScriptFailed) as exc:
        raise SetupFailed(f"{what}: {exc}", keep_failed(ctx, sandbox)) from exc
    sandbox.remove()


def keep_failed(ctx: RunContext, sandbox: Sandbox) -> str | None:
    """Keep a failed container for inspection (per settings, within the per-run and per-host
    caps), stopped; its name, or None."""
    limits = ctx.settings.housekeeping
    if limits.keep_containers == "never" or not room_to_keep(
        ctx.backend, ctx.settings.storage.data_dir, ctx.run_id,
        per_run=limits.max_kept_per_run, per_host=limits.max_kept_per_host,
    ):  # fmt: skip
        sandbox.remove()
        return None
    return keep_stopped(sandbox)
