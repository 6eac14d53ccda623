"""Running one set-up step in a sandbox: a host lock per image key, a logged script, and a
failed step's container kept for inspection (per settings) or removed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock

from orchestrator.context.run_context import RunContext
from orchestrator.environments.setup.plan import SetupFailed
from orchestrator.environments.setup.setup_scripts import SWE_DIR
from orchestrator.errors import SandboxError, UserError
from orchestrator.housekeeping.engine_locks import engine_lock
from orchestrator.housekeeping.kept import keep_stopped, room_to_keep
from orchestrator.sandbox import Sandbox


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
    with FileLock(str(locks / f"{key}.lock")), engine_lock(ctx.backend, key, image):
        yield


def cached(ctx: RunContext, name: str) -> bool:
    """An environment or instance image of this host's cache: only a backend that keeps
    images has one (under the restricted policy nothing it built is reused, so an image of
    that name on the engine, which it could not have made, is not taken for it)."""
    return ctx.backend.commits and ctx.backend.images.exists(name)


def run_logged(
    sandbox: Sandbox, script: str, log_path: Path, title: str, timeout: float
) -> tuple[bool, str]:
    """Run a script in the sandbox, appending its output to ``log_path``."""
    path = f"{SWE_DIR}/{title}.sh"
    sandbox.write_file(path, script, mode=0o755)
    result = sandbox.exec(["bash", path], timeout=timeout)
    with open(log_path, "a") as fh:
        fh.write(f"\n===== {title} (exit {result.exit_code}, {result.duration:.1f}s)\n")
        fh.write(result.output)
    if result.timed_out:
        return False, f"{title} timed out after {timeout:.0f}s"
    if result.exit_code != 0:
        failed = [ln for ln in result.stdout.splitlines() if ln.startswith(">>>>> FAILED")]
        tail = " | ".join(result.output.strip().splitlines()[-3:])[-400:]
        what = failed[-1].removeprefix(">>>>> FAILED: ") if failed else f"exit {result.exit_code}"
        return False, f"{title} failed ({what}): {tail}"
    return True, ""


@contextlib.contextmanager
def building(ctx: RunContext, sandbox: Sandbox, what: str) -> Iterator[None]:
    """Build in ``sandbox``: any failure becomes SetupFailed (the container kept for
    inspection, per settings); success removes the container."""
    try:
        yield
    except SetupFailed:
        raise
    except (SandboxError, UserError) as exc:
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
