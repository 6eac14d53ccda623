"""The environment image: phases 1-3 (:func:`~orchestrator.checkout.check_out`,
:func:`~orchestrator.setup.set_up`, :func:`~orchestrator.dependencies.install_dependencies`)
and the shared history, committed and keyed by (repo, environment_setup_commit, recipe or
agent): from this host's cache, the shared registry, or built."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from orchestrator.atomic import append_text
from orchestrator.base_commit.scripts import share_history_script
from orchestrator.checkout import check_out
from orchestrator.context.run_context import RunContext
from orchestrator.dependencies import install_dependencies
from orchestrator.environments.build_steps import building, cached, image_lock, keep_failed
from orchestrator.environments.env_layers import setup_start
from orchestrator.environments.failed_builds import failed_build, remember_failed_build
from orchestrator.environments.image_registry import pull_shared, push_shared
from orchestrator.errors import UserError
from orchestrator.image_names import env_image_name
from orchestrator.models import Instance
from orchestrator.plan.bytecode import compile_environment
from orchestrator.plan.env_plan import EnvPlan
from orchestrator.plan.install import own_pins_script
from orchestrator.repos.clean_history import is_ancestor, put_clean_history, shared_commit
from orchestrator.repos.repo_cache import ensure_mirror
from orchestrator.sandbox import Sandbox, Snapshot
from orchestrator.sandbox.models import LABEL_ENV_KEY, LABEL_KIND
from orchestrator.sandbox.scripts import ScriptFailed, run_script
from orchestrator.setup import set_up, venv_python
from orchestrator.setup.plan import SetupFailed

# "<owner/name>@<version>" of the instance whose set-up built it: where a cluster run places
# that (repo, version)'s instances
LABEL_REPO_VERSION = "swe-green.repo-version"
# what an LLM-built environment found: kept on its image so that a cache hit knows it too
LABEL_TEST_CMD = "swe-green.test-cmd"
LABEL_REINSTALL = "swe-green.reinstall"
LABEL_PYTHON = "swe-green.python"  # the Python the environment's venv runs (e.g. "3.9.2")
# the commit whose history the environment's /testbed/.git holds (shared by its instances)
LABEL_SHARED_HISTORY = "swe-green.shared-history"


class EnvImage(BaseModel):
    name: str
    cache_hit: bool
    python: str = ""  # the venv's Python version
    tokens: dict[str, int] = Field(default_factory=dict)
    test_cmd: str | None = None
    reinstall: str | None = None
    # the commit whose history the image's /testbed/.git holds (None: a whole clone)
    shared_history: str | None = None
    # what the backend kept of the set-up (None: the image ``name`` itself)
    kept: Snapshot | None = None

    def start_from(self) -> Snapshot:
        """What phase 4 starts from: what the backend kept of the set-up (an image, or a
        host file pack under the restricted policy), else the image itself."""
        return self.kept or Snapshot.of_image(self.name)


def ensure_env_image(
    ctx: RunContext, instance: Instance, plan: EnvPlan, log_path: Path
) -> EnvImage:
    """The environment image (phases 1-3): from this host's cache, else from the shared
    registry (``env_image_registry``), else built (and then pushed to that registry)."""
    name = env_image_name(ctx.settings.environment.image_prefix, instance.owner_name, plan.env_key)
    registry = ctx.settings.environment.env_image_registry
    with image_lock(ctx, f"env-{plan.env_key}"):
        if cached(ctx, name):
            append_text(log_path, f"environment image {name} reused from the cache\n")
            return env_from_labels(ctx, name)
        pulled = pull_shared(ctx.backend, registry, name, log_path) if registry else None
        if pulled:
            return env_from_labels(ctx, pulled)
        built = build_env_image(ctx, instance, plan, name, log_path)
    if registry:  # outside the lock: instances waiting for the image need not wait for this
        push_shared(ctx.backend, registry, name, log_path)
    return built


def env_from_labels(ctx: RunContext, name: str) -> EnvImage:
    """A ready environment image, as its labels describe it (not built here)."""
    labels = ctx.backend.images.labels(name)
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
        append_text(
            log_path,
            f"recipe asks for Python {plan.recipe.python}; "
            f"using the nearest available, {plan.python}\n",
        )
    if plan.family_key is not None and ctx.backend.commits:  # a layer on an image
        return build_on_family(ctx, instance, plan, name, log_path)
    start = setup_start(ctx, instance, plan, log_path)
    sandbox = ctx.start_sandbox(start.image, instance, "setup", network=True)
    built, settings = EnvImage(name=name, cache_hit=False), ctx.settings.environment
    with building(ctx, sandbox, "environment setup"):
        try:
            check_out(ctx.settings, instance, sandbox)  # phase 1
            found = set_up(ctx, instance, plan, sandbox, log_path, start.venv_ready)  # phase 2
            install_dependencies(sandbox, found.install, log_path, settings)  # phase 3
        except ScriptFailed as exc:
            remember_failed_build(ctx, plan.env_key, instance, str(exc))
            raise SetupFailed(f"environment setup: {exc}", keep_failed(ctx, sandbox)) from exc
        built.tokens, built.test_cmd, built.reinstall = (
            found.tokens,
            found.test_cmd,
            found.reinstall,
        )
        built.python = venv_python(sandbox)
        _drop_install_caches(sandbox)
        built.shared_history = share_history(ctx, instance, sandbox, log_path, start.history)
        keep = ctx.settings.storage.data_dir / "files"
        built.kept = ctx.backend.keep(sandbox, name, keep, env_labels(instance, plan, built))
    log.info("setup.done", image=name)
    return built


def env_labels(instance: Instance, plan: EnvPlan, built: EnvImage) -> dict[str, str]:
    """The labels of an environment image: what a cache hit needs to know of it."""
    labels = {LABEL_KIND: "env", LABEL_ENV_KEY: plan.env_key, LABEL_PYTHON: built.python}
    labels[LABEL_REPO_VERSION] = instance.repo_version
    if built.test_cmd is not None:
        labels[LABEL_TEST_CMD] = built.test_cmd
    if built.reinstall is not None:
        labels[LABEL_REINSTALL] = built.reinstall
    if built.shared_history is not None:
        labels[LABEL_SHARED_HISTORY] = built.shared_history
    return labels


def build_on_family(
    ctx: RunContext, instance: Instance, plan: EnvPlan, name: str, log_path: Path
) -> EnvImage:
    """An environment that differs from its recipe's only by the instance's own pins: the
    recipe's environment image (from the caches, or built), plus a layer installing them."""
    family = ensure_env_image(ctx, instance, plan.family(), log_path)
    append_text(
        log_path, f"built on the recipe's environment {family.name}: + {' '.join(plan.own_pins)}\n"
    )
    sandbox = ctx.start_sandbox(family.name, instance, "setup", network=True)
    built = family.model_copy(update={"name": name, "cache_hit": False, "tokens": {}})
    with building(ctx, sandbox, "environment setup"):
        try:
            run_script(
                sandbox, own_pins_script(plan.own_pins), log_path,
                ctx.settings.environment.install_timeout,
            )  # fmt: skip
        except ScriptFailed as exc:
            remember_failed_build(ctx, plan.env_key, instance, str(exc))
            raise SetupFailed(f"environment setup: {exc}", keep_failed(ctx, sandbox)) from exc
        if ctx.settings.environment.compile_bytecode:  # the own pins' packages too
            compile_environment(sandbox, log_path, ctx.settings.environment.install_timeout)
        _drop_install_caches(sandbox)
        keep = ctx.settings.storage.data_dir / "files"
        built.kept = ctx.backend.keep(sandbox, name, keep, env_labels(instance, plan, built))
    return built


# the installers' download caches: dead weight in the image (uv's also holds what it
# hard-linked into the venv, which stays there); other caches (fonts, ...) serve the tests
INSTALL_CACHES = ("/root/.cache/uv", "/root/.cache/pip")


def _drop_install_caches(sandbox: Sandbox) -> None:
    """Remove the installers' caches before the environment is committed."""
    sandbox.exec(["rm", "-rf", *INSTALL_CACHES], timeout=300)


def share_history(
    ctx: RunContext, instance: Instance, sandbox: Sandbox, log_path: Path,
    below: str | None = None,
) -> str | None:  # fmt: skip
    """End of phases 1-3 in ``sandbox``: ``/testbed/.git`` becomes the history that the
    environment's instances share (the common ancestor of their base commits, as the
    dataset lists them), so that each instance image adds only what its base reaches beyond
    it. Returns that commit, or None (setting ``share_history`` off, or no common ancestor:
    the environment keeps a whole clone and phase 4 swaps in a full clean history).

    ``below``: the commit whose history the image below holds in ``.git`` (the repository's
    history image); only what ``shared`` reaches beyond it is added. (Not an ancestor of
    ``shared``: dropped, and the whole history added.)"""
    if not ctx.settings.environment.share_history:
        return None
    mirror = ensure_mirror(ctx.settings, instance.repo, [instance.base_commit])
    shared = shared_commit(mirror, _peer_bases(ctx, instance))
    if shared is None:
        return None
    since = below if below is not None and is_ancestor(mirror, below, shared) else None
    history = put_clean_history(sandbox, mirror, shared, since)
    beyond = f" beyond the repository's history at {since[:12]}" if since else ""
    append_text(
        log_path,
        f"shared history at {shared[:12]}: {history.commits} commits, "
        f"{history.objects} objects{beyond}, {history.pack_bytes / 1e6:.1f} MB pack\n",
    )
    try:
        run_script(
            sandbox, share_history_script(onto_shared=since is not None), log_path,
            ctx.settings.environment.install_timeout, name="shared-history",
        )  # fmt: skip
    except ScriptFailed as exc:
        raise SetupFailed(f"shared history: {exc}", keep_failed(ctx, sandbox)) from exc
    return shared


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
