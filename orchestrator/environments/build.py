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

import contextlib
import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock
from pydantic import BaseModel, Field

from orchestrator.environments.failed_builds import failed_build, remember_failed_build
from orchestrator.environments.image_registry import pull_shared, push_shared
from orchestrator.environments.plan import (
    EnvPlan,
    SetupFailed,
    env_image_name,
    instance_image_name,
    plan_environment,
)
from orchestrator.environments.recipes import (
    reinstall_needed,
)
from orchestrator.environments.repo_cache import (
    CleanHistory,
    GitError,
    changed_paths,
    check_complete,
    ensure_mirror,
    export_clean_git,
    is_ancestor,
    prepare_checkout,
    shared_commit,
)
from orchestrator.environments.setup_scripts import (
    ACTIVATE,
    CLEAN_GIT,
    LABEL_ENV_KEY,
    LABEL_PYTHON,
    LABEL_REINSTALL,
    LABEL_REPO_VERSION,
    LABEL_SHARED_HISTORY,
    LABEL_TEST_CMD,
    PYTHON_MIRROR_DIR,
    SWE_DIR,
    TESTBED,
    base_commit_script,
    recipe_setup_script,
    share_history_script,
)
from orchestrator.errors import SandboxError, UserError
from orchestrator.housekeeping.kept import keep_stopped, room_to_keep
from orchestrator.models import Instance
from orchestrator.run.context import RunContext
from orchestrator.sandbox import Sandbox
from orchestrator.sandbox.file_snapshot import FileSnapshot
from orchestrator.sandbox.models import LABEL_KIND


class PreparedInstance(BaseModel):
    """The images an instance runs from, and what it cost to get them."""

    plan: EnvPlan
    env_image: str
    # the image the instance's containers start from, or (restricted Docker policy) the
    # set-up's files on the host
    instance_image: str | FileSnapshot
    env_cache_hit: bool
    instance_cache_hit: bool
    test_cmd: str | None = None
    setup_tokens: dict[str, int] = Field(default_factory=dict)
    timings: dict[str, float] = Field(default_factory=dict)
    python_used: str = ""  # the environment's Python (a cached image built before: unknown)

    def discard(self) -> None:
        """Delete what the instance's containers started from, when it is a host file."""
        if isinstance(self.instance_image, FileSnapshot):
            self.instance_image.discard()


def _lock(ctx: RunContext, key: str) -> FileLock:
    locks = ctx.settings.storage.data_dir / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    return FileLock(str(locks / f"{key}.lock"))


# ----------------------------------------------------------------------------- phases 1-3
def _run_logged(
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


def _copy_checkout(ctx: RunContext, instance: Instance, sandbox: Sandbox) -> None:
    with tempfile.TemporaryDirectory(prefix="swe-green-checkout-") as tmp:
        dest = Path(tmp) / "testbed"
        prepare_checkout(ctx.settings, instance, dest)
        sandbox.put_dir(dest, TESTBED)


class EnvImage(BaseModel):
    name: str
    cache_hit: bool
    python: str = ""  # the venv's Python version
    tokens: dict[str, int] = Field(default_factory=dict)
    test_cmd: str | None = None
    reinstall: str | None = None
    # the commit whose history the image's /testbed/.git holds (None: a whole clone)
    shared_history: str | None = None


def ensure_env_image(
    ctx: RunContext, instance: Instance, plan: EnvPlan, log_path: Path
) -> EnvImage:
    """The environment image (phases 1-3): from this host's cache, else from the shared
    registry (``env_image_registry``), else built (and then pushed to that registry)."""
    name = env_image_name(ctx, instance, plan)
    registry = ctx.settings.environment.env_image_registry
    with _lock(ctx, f"env-{plan.env_key}"):
        if ctx.backend.image_exists(name):
            with open(log_path, "a") as fh:
                fh.write(f"environment image {name} reused from the cache\n")
            return env_from_labels(ctx, name)
        if registry and pull_shared(ctx.backend, registry, name, log_path, keep_reference=False):
            return env_from_labels(ctx, name)
        built = build_env_image(ctx, instance, plan, name, log_path)
    if registry:  # outside the lock: instances waiting for the image need not wait for this
        push_shared(ctx.backend, registry, name, log_path)
    return built


def env_from_labels(ctx: RunContext, name: str) -> EnvImage:
    """A ready environment image, as its labels describe it (not built here)."""
    labels = ctx.backend.image_labels(name)
    return EnvImage(
        name=name,
        cache_hit=True,
        python=labels.get(LABEL_PYTHON, ""),
        test_cmd=labels.get(LABEL_TEST_CMD),
        reinstall=labels.get(LABEL_REINSTALL),
        shared_history=labels.get(LABEL_SHARED_HISTORY),
    )


def build_env_image(
    ctx: RunContext, instance: Instance, plan: EnvPlan, name: str, log_path: Path
) -> EnvImage:
    """Phases 1-3 from the base image, committed as ``name`` (a remembered failure of the
    same environment fails at once)."""
    remembered = failed_build(ctx, plan.env_key)
    if remembered is not None:
        raise SetupFailed(f"environment setup: {remembered}")
    log = ctx.instance_log(instance)
    log.info("setup.start", strategy=plan.strategy, python=plan.python, image=name)
    if not plan.python_exact and plan.recipe is not None:
        with open(log_path, "a") as fh:
            fh.write(
                f"recipe asks for Python {plan.recipe.python}; "
                f"using the nearest available, {plan.python}\n"
            )
    sandbox = ctx.start_sandbox(plan.base_image, instance, "setup", network=True)
    built = EnvImage(name=name, cache_hit=False)
    with building(ctx, sandbox, "environment setup"):
        setup_environment(ctx, instance, plan, sandbox, log_path, built)
        labels = {LABEL_KIND: "env", LABEL_ENV_KEY: plan.env_key, LABEL_PYTHON: built.python}
        labels[LABEL_REPO_VERSION] = instance.repo_version
        if built.test_cmd is not None:
            labels[LABEL_TEST_CMD] = built.test_cmd
        if built.reinstall is not None:
            labels[LABEL_REINSTALL] = built.reinstall
        built.shared_history = share_history(ctx, instance, sandbox, log_path)
        if built.shared_history is not None:
            labels[LABEL_SHARED_HISTORY] = built.shared_history
        repository, tag = name.rsplit(":", 1)
        sandbox.snapshot(repository, tag, labels=labels)
    log.info("setup.done", image=name)
    return built


def share_history(
    ctx: RunContext, instance: Instance, sandbox: Sandbox, log_path: Path
) -> str | None:
    """End of phases 1-3 in ``sandbox``: ``/testbed/.git`` becomes the history that the
    environment's instances share (the common ancestor of their base commits, as the
    dataset lists them), so that each instance image adds only what its base reaches beyond
    it. Returns that commit, or None (setting ``share_history`` off, or no common ancestor:
    the environment keeps a whole clone and phase 4 swaps in a full clean history)."""
    if not ctx.settings.environment.share_history:
        return None
    mirror = ensure_mirror(ctx.settings, instance.repo, [instance.base_commit])
    shared = shared_commit(mirror, _peer_bases(ctx, instance))
    if shared is None:
        return None
    history = _put_clean_history(sandbox, mirror, shared)
    with open(log_path, "a") as fh:
        fh.write(
            f"shared history at {shared[:12]}: {history.commits} commits, "
            f"{history.objects} objects, {history.pack_bytes / 1e6:.1f} MB pack\n"
        )
    ok, why = _run_logged(
        sandbox,
        share_history_script(),
        log_path,
        "shared-history",
        ctx.settings.environment.install_timeout,
    )
    if not ok:
        raise SetupFailed(f"shared history: {why}", _keep(ctx, sandbox))
    return shared


def _put_clean_history(
    sandbox: Sandbox, mirror: Path, commit: str, since: str | None = None
) -> CleanHistory:
    """:func:`export_clean_git` of ``commit`` put at ``CLEAN_GIT`` in ``sandbox``."""
    with tempfile.TemporaryDirectory() as tmp:
        history = export_clean_git(mirror, commit, Path(tmp) / "git", since=since)
        sandbox.put_dir(Path(tmp) / "git", CLEAN_GIT)
    return history


def _peer_bases(ctx: RunContext, instance: Instance) -> list[str]:
    """The base commits of the dataset's instances of this environment (same repository
    and set-up commit), this instance's first."""
    from orchestrator.dataset.instances import load_instances

    bases = [instance.base_commit]
    try:
        rows = load_instances(ctx.settings.dataset.dataset)
    except (UserError, OSError, ValueError) as exc:  # unreadable here: share only its own
        ctx.instance_log(instance).warning("share_history.no_dataset", error=str(exc)[:200])
        return bases
    key = (instance.repo, instance.environment_setup_commit)
    return bases + [r.base_commit for r in rows if (r.repo, r.environment_setup_commit) == key]


def _venv_python(sandbox: Sandbox) -> str:
    """The version of the Python the environment activates (empty if it cannot tell)."""
    found = sandbox.exec(
        f"source {ACTIVATE} >/dev/null 2>&1; python -c "
        "'import platform; print(platform.python_version())'",
        timeout=60,
    )
    return found.stdout.strip().splitlines()[-1] if found.ok and found.stdout.strip() else ""


def _put_python_mirror(ctx: RunContext, sandbox: Sandbox) -> dict[str, str]:
    """The environment for ``uv python install`` from the configured mirror: a URL is passed
    on; a host directory is copied into the set-up container (removed by the script, so it
    is in no image)."""
    mirror = ctx.settings.environment.python_mirror
    if not mirror:
        return {}
    if re.match(r"^(https?|file)://", mirror):
        return {"UV_PYTHON_INSTALL_MIRROR": mirror}
    path = Path(mirror).expanduser()
    if not path.is_dir():
        raise UserError(
            f"Python mirror {mirror} is neither a URL nor a directory.",
            "set SWE_GREEN_PYTHON_MIRROR to an http(s) URL or a directory of Python builds.",
        )
    sandbox.put_dir(path, PYTHON_MIRROR_DIR)
    return {"UV_PYTHON_INSTALL_MIRROR": f"file://{PYTHON_MIRROR_DIR}"}


def _llm_setup(
    ctx: RunContext, instance: Instance, sandbox: Sandbox, log_path: Path, built: EnvImage
) -> tuple[bool, str]:
    """Phases 2-3 by the LLM setup agent; fills ``built`` with what it found."""
    from orchestrator.environments.setup_llm import run_llm_setup
    from orchestrator.environments.setup_models import SetupFacts

    result = run_llm_setup(
        sandbox, SetupFacts.from_instance(instance), ctx.settings.setup_agent, log_path.parent
    )
    built.tokens = {"input": result.input_tokens, "output": result.output_tokens}
    built.test_cmd = result.test_command or None
    built.reinstall = "\n".join(result.install_commands) or None
    return result.success, result.failure_reason or ""


@contextlib.contextmanager
def building(ctx: RunContext, sandbox: Sandbox, what: str) -> Iterator[None]:
    """Build in ``sandbox``: any failure becomes SetupFailed (the container kept for
    inspection, per settings); success removes the container."""
    try:
        yield
    except SetupFailed:
        raise
    except (SandboxError, UserError) as exc:
        raise SetupFailed(f"{what}: {exc}", _keep(ctx, sandbox)) from exc
    sandbox.remove()


def _keep(ctx: RunContext, sandbox: Sandbox) -> str | None:
    """Keep a failed container for inspection (per settings, within the per-run and per-host
    caps), stopped; its name, or None."""
    limits = ctx.settings.sandbox
    if limits.keep_containers == "never" or not room_to_keep(
        ctx.backend, ctx.settings.storage.data_dir, ctx.run_id,
        per_run=limits.max_kept_per_run, per_host=limits.max_kept_per_host,
    ):  # fmt: skip
        sandbox.remove()
        return None
    return keep_stopped(sandbox)


# ----------------------------------------------------------------------------- phase 4
def ensure_instance_image(
    ctx: RunContext, instance: Instance, plan: EnvPlan, env_image: str, log_path: Path,
    reinstall: str | None, shared_history: str | None = None,
) -> tuple[str, bool]:  # fmt: skip
    """The instance image (phase 4): from this host's cache, else from the shared registry,
    else built from the environment image (and then pushed)."""
    name = instance_image_name(ctx, instance, plan)
    settings = ctx.settings.environment
    registry = settings.env_image_registry if settings.registry_instance_images else None
    what = "instance image"
    with _lock(ctx, f"instance-{plan.instance_key(instance)}"):
        if ctx.backend.image_exists(name):
            return name, True
        if registry and pull_shared(
            ctx.backend, registry, name, log_path, keep_reference=False, what=what
        ):
            return name, True
        sandbox = ctx.start_sandbox(env_image, instance, "setup", network=True)
        with building(ctx, sandbox, "base commit"):
            check_out_base(ctx, instance, sandbox, log_path, reinstall, shared_history)
            repository, tag = name.rsplit(":", 1)
            sandbox.snapshot(
                repository, tag, labels={LABEL_KIND: "instance", LABEL_ENV_KEY: plan.env_key}
            )
    if registry:
        push_shared(ctx.backend, registry, name, log_path, what=what)
    return name, False


def setup_environment(
    ctx: RunContext, instance: Instance, plan: EnvPlan, sandbox: Sandbox, log_path: Path,
    built: EnvImage,
) -> None:  # fmt: skip
    """Phases 1-3 in ``sandbox`` (network on); fills ``built`` with what the set-up found."""
    _copy_checkout(ctx, instance, sandbox)
    if plan.strategy == "recipe":
        assert plan.recipe is not None
        mirror_env = _put_python_mirror(ctx, sandbox) if plan.fetch_python else {}
        script = recipe_setup_script(
            plan.recipe, plan.pins, plan.fetch_python, python_env=mirror_env
        )
        ok, why = _run_logged(
            sandbox, script, log_path, "setup", ctx.settings.environment.install_timeout
        )
    else:
        ok, why = _llm_setup(ctx, instance, sandbox, log_path, built)
    if not ok:
        remember_failed_build(ctx, plan.env_key, instance, why)
        raise SetupFailed(f"environment setup: {why}", _keep(ctx, sandbox))
    built.python = _venv_python(sandbox)


def check_out_base(
    ctx: RunContext, instance: Instance, sandbox: Sandbox, log_path: Path,
    reinstall: str | None, shared_history: str | None = None,
) -> None:  # fmt: skip
    """Phase 4 in ``sandbox``: the base commit, reinstalled if needed, with a clean history.

    ``shared_history``: the commit whose history the environment's ``.git`` holds (see
    :func:`share_history`); a base that descends from it gets only the objects beyond it.
    """
    mirror = ensure_mirror(ctx.settings, instance.repo, [instance.base_commit])
    if shared_history is None:
        mode, since = "swap", None
    elif is_ancestor(mirror, shared_history, instance.base_commit):
        mode, since = "add", shared_history
    else:
        mode, since = "replace", None
    history = _put_clean_history(sandbox, mirror, instance.base_commit, since)
    with open(log_path, "a") as fh:
        beyond = f" beyond the shared history at {since[:12]}" if since else ""
        fh.write(
            f"clean history ({mode}): {history.commits} commits, {history.objects} objects"
            f"{beyond}, {history.tags} tags, {history.pack_bytes / 1e6:.1f} MB pack, "
            f"{history.seconds:.1f}s\n"
        )
    script = base_commit_script(instance, reinstall, mode)
    ok, why = _run_logged(
        sandbox, script, log_path, "base-commit", ctx.settings.environment.install_timeout
    )
    if not ok:
        raise SetupFailed(f"base commit: {why}", _keep(ctx, sandbox))


def changed_between_setup_and_base(ctx: RunContext, instance: Instance) -> list[str] | None:
    """The paths that differ between the environment's commit and the base (None: unknown)."""
    try:
        mirror = ensure_mirror(
            ctx.settings, instance.repo, [instance.environment_setup_commit, instance.base_commit]
        )
        return changed_paths(mirror, instance.environment_setup_commit, instance.base_commit)
    except (UserError, GitError):
        return None


def reinstall_at_base(
    ctx: RunContext, instance: Instance, plan: EnvPlan, found: str | None, log_path: Path
) -> str | None:
    """The commands that install the project again at the base commit, if it needs them
    (``found``: what the LLM setup agent installed with)."""
    if instance.base_commit == instance.environment_setup_commit:
        return None
    if plan.recipe is None:
        return found
    changed = changed_between_setup_and_base(ctx, instance)
    if changed is not None and not reinstall_needed(plan.recipe.install, changed):
        with open(log_path, "a") as fh:
            fh.write(
                f"no reinstall at the base commit: {len(changed)} changed file(s), "
                "no build input among them, and the install is editable\n"
            )
        return None
    return "\n".join([*plan.recipe.pre_install, plan.recipe.install])


def prepare_instance(ctx: RunContext, instance: Instance) -> PreparedInstance:
    """Phases 1-4 for one instance, from the caches where possible (restricted Docker
    policy: :func:`.build_restricted.prepare_without_commit`)."""
    if ctx.restricted:
        from orchestrator.environments.build_restricted import prepare_without_commit

        return prepare_without_commit(ctx, instance)
    log_path = ctx.instance_dir(instance) / "setup.log"
    timings: dict[str, float] = {}
    started = time.monotonic()
    plan = plan_environment(ctx, instance)
    if not ctx.backend.image_exists(instance_image_name(ctx, instance, plan)):
        try:
            check_complete(ctx.settings, instance)
        except UserError as exc:
            raise SetupFailed(f"checkout: {exc}") from exc
    env = ensure_env_image(ctx, instance, plan, log_path)
    timings["setup"] = time.monotonic() - started
    started = time.monotonic()
    reinstall = reinstall_at_base(ctx, instance, plan, env.reinstall, log_path)
    instance_image, inst_hit = ensure_instance_image(
        ctx, instance, plan, env.name, log_path, reinstall, env.shared_history
    )
    timings["base_commit"] = time.monotonic() - started
    return PreparedInstance(
        plan=plan,
        env_image=env.name,
        instance_image=instance_image,
        env_cache_hit=env.cache_hit,
        instance_cache_hit=inst_hit,
        test_cmd=env.test_cmd,
        setup_tokens=env.tokens,
        timings=timings,
        python_used=env.python,
    )
