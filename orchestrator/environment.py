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
import hashlib
import json
import re
import shlex
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from filelock import FileLock
from pydantic import BaseModel, Field

from .context import RunContext
from .docker_engine import LABEL_KIND
from .errors import SandboxError, UserError
from .file_snapshot import FileSnapshot, capture
from .housekeeping import keep_stopped
from .images import base_pythons, ensure_image, image_exists
from .models import Instance
from .recipes import Recipe, load_recipes, pins_for, recipe_key, reinstall_needed
from .repo_cache import (
    GitError,
    changed_paths,
    check_complete,
    ensure_mirror,
    export_clean_git,
    prepare_checkout,
)
from .safe_git import SHELL_GIT_FUNCTION
from .sandbox import Sandbox

TESTBED = "/testbed"
SWE_DIR = "/opt/swe"
VENV = f"{SWE_DIR}/venv"
ACTIVATE = f"{SWE_DIR}/activate.sh"
LABEL_ENV_KEY = "swe-green.env-key"
# what an LLM-built environment found: kept on its image so that a cache hit knows it too
LABEL_TEST_CMD = "swe-green.test-cmd"
LABEL_REINSTALL = "swe-green.reinstall"
LABEL_PYTHON = "swe-green.python"  # the Python the environment's venv runs (e.g. "3.9.2")
PYTHON_MIRROR_DIR = f"{SWE_DIR}/python-mirror"  # a host mirror directory, during set-up only


class SetupFailed(Exception):
    """Phases 1-4 failed for an instance: the instance is an error with reason ``environment``."""

    def __init__(self, message: str, container: str | None = None) -> None:
        super().__init__(message)
        self.container = container


class EnvPlan(BaseModel):
    """How the environment of one instance is built, and the cache keys that follow."""

    strategy: Literal["recipe", "llm"]
    recipe: Recipe | None = None
    python: str
    python_exact: bool = True
    base_image: str
    pins: list[str] = Field(default_factory=list)
    env_key: str
    fetch_python: str | None = None  # a Python to `uv python install` first, if any

    def instance_key(self, instance: Instance) -> str:
        raw = f"{self.env_key}:{instance.base_commit}:{json.dumps(self.pins)}"
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


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


# ----------------------------------------------------------------------------- planning
def find_recipe(ctx: RunContext, instance: Instance) -> Recipe | None:
    """The user's recipes file first, then the shipped recipes."""
    extra = ctx.settings.recipes_file
    if extra is not None:
        try:
            items = json.loads(Path(extra).read_text())
            for item in items if isinstance(items, list) else items.get("recipes", []):
                recipe = Recipe.model_validate(item)
                if (recipe.repo, recipe.version) == (instance.repo, instance.version):
                    return recipe
        except (OSError, ValueError) as exc:
            raise UserError(
                f"Cannot read recipes file {extra}: {str(exc).splitlines()[0]}",
                "fix the file (a JSON list of recipes) or unset SWE_GREEN_RECIPES_FILE.",
            ) from exc
    return load_recipes().get((instance.repo, instance.version))


def plan_environment(ctx: RunContext, instance: Instance) -> EnvPlan:
    """Pick the strategy, the Python and the base image; compute the cache key."""
    settings = ctx.settings
    recipe = find_recipe(ctx, instance)
    strategy = settings.setup_strategy
    if strategy == "auto":
        strategy = "recipe" if recipe else "llm"
    if strategy == "llm":
        from .setup_llm import check_llm_settings, llm_available

        if not llm_available(settings):
            raise SetupFailed(
                f"no recipe for {instance.repo} version {instance.version!r} and no API key "
                "for the LLM setup agent (set ANTHROPIC_API_KEY)"
            )
        check_llm_settings(settings)
    if strategy == "recipe" and recipe is None:
        raise SetupFailed(
            f"no recipe for {instance.repo} version {instance.version!r}; "
            "use setup_strategy=llm or auto with an API key"
        )
    available = base_pythons(ctx.client, settings)
    if not available:
        raise UserError(
            "No base image is built on this host.",
            "run `swe-green images build --python 3.11`, or set SWE_GREEN_BASE_IMAGE_REGISTRY "
            "to where the base images are published.",
        )
    if strategy == "recipe":
        assert recipe is not None
        python, exact = recipe.nearest_python(available)
        pins = pins_for(recipe, instance)
        identity = {"strategy": "recipe", "recipe": recipe_key(recipe), "pins": pins}
        if (settings.fetch_python or settings.python_mirror) and not exact:
            identity["fetch_python"] = recipe.python
    else:
        python = settings.base_python if settings.base_python in available else available[-1]
        exact, pins = True, []
        identity = {"strategy": "llm", "model": settings.setup_model}
    raw = json.dumps(
        {"repo": instance.repo, "commit": instance.environment_setup_commit, "python": python}
        | identity
        | {"script": SETUP_SCRIPT_VERSION},
        sort_keys=True,
    )
    base_image = settings.base_image(python)
    ensure_image(ctx.client, base_image)  # pulled from the registry when missing
    return EnvPlan(
        strategy=strategy,
        recipe=recipe if strategy == "recipe" else None,
        python=python,
        python_exact=exact,
        base_image=base_image,
        pins=pins,
        env_key=hashlib.sha256(raw.encode()).hexdigest()[:16],
        fetch_python=identity.get("fetch_python"),
    )


def env_image_name(ctx: RunContext, instance: Instance, plan: EnvPlan) -> str:
    return f"{ctx.settings.image_prefix}/env:{instance.owner_name.lower()}-{plan.env_key}"


def instance_image_name(ctx: RunContext, instance: Instance, plan: EnvPlan) -> str:
    tag = f"{instance.instance_id.lower()}-{plan.instance_key(instance)}"
    return f"{ctx.settings.image_prefix}/instance:{tag}"


def _lock(ctx: RunContext, key: str) -> FileLock:
    locks = ctx.settings.data_dir / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    return FileLock(str(locks / f"{key}.lock"))


# ----------------------------------------------------------------------------- phases 1-3
# Bump when the set-up script changes in a way that changes what it builds: it is part of the
# environment cache key, so images built by an older script are not reused.
SETUP_SCRIPT_VERSION = 2
# pip of SWE-bench's environments' era: PEP 660 editable installs (pyproject-only projects,
# pip >= 21.3), and PIP_CONSTRAINT still reaches isolated build environments.
PIP_VERSION = "24.2"
# newest setuptools that isolated builds may use: later ones dropped what old setup.py files
# rely on (`setup.py develop` re-entering pip, setup_requires, ...)
SETUPTOOLS_CAP = "75.1.0"
BUILD_CONSTRAINTS = f"{SWE_DIR}/build-constraints.txt"


def build_constraints(pins: list[str]) -> str:
    """The constraints file for every pip call of the environment (isolated builds too):
    setuptools no newer than ``SETUPTOOLS_CAP``, or than the recipe's own pin when that is
    newer. (An older pin is not a cap: pylint 3.0's frozen environment pins setuptools 41.6
    while its pyproject.toml needs >= 66.1 to build.)"""
    cap = SETUPTOOLS_CAP
    for pin in pins:
        name, _, version = pin.partition("==")
        if name.strip().lower() == "setuptools" and version:
            if _version_key(version) > _version_key(cap):
                cap = version.strip()
    return f"setuptools<={cap}\n"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


def recipe_setup_script(
    recipe: Recipe,
    pins: list[str],
    fetch_python: str | None = None,
    python_env: dict[str, str] | None = None,
) -> str:
    """The bash script that builds a recipe's environment in /testbed (network on).

    With ``fetch_python``, uv first tries to install that exact Python; when it cannot (no
    internet), the base image's Python is used and the log says so. The virtual environment
    is made with copies of the interpreter, not symlinks: tools that link to it again
    (tox-current-env's ``.tox/py39/bin/python``) still start inside it.
    """
    plain_venv = f'python3 -m venv --copies {VENV} || fail "creating the virtual environment"'
    if fetch_python:
        uv_env = " ".join(f"{k}={shlex.quote(v)}" for k, v in (python_env or {}).items())
        venv = (
            f"if command -v uv >/dev/null && {uv_env} UV_HTTP_TIMEOUT=20 uv python install "
            f"{shlex.quote(fetch_python)}; then\n"
            f"  uv venv --seed --python {shlex.quote(fetch_python)} {VENV} "
            f'|| fail "creating the virtual environment with uv"\n'
            f"else\n"
            f'  echo "could not fetch Python {fetch_python}; using $(python3 --version)"\n'
            f"  {plain_venv}\n"
            f"fi\n"
            f"rm -rf {PYTHON_MIRROR_DIR}"
        )
    else:
        venv = plain_venv
    exports = "\n".join(f"export {k}={shlex.quote(v)}" for k, v in recipe.env.items())
    # one shell for all pre-install lines, as SWE-bench runs them: later lines use earlier
    # lines' variables (matplotlib's QHULL_URL ...)
    # (a separate bash: `set -e` is void in a subshell on the left of `||`)
    pre = (
        f"bash -exc {shlex.quote(chr(10).join(recipe.pre_install))} || fail pre-install"
        if recipe.pre_install
        else ""
    )
    quoted_pins = " ".join(shlex.quote(p) for p in pins)
    services = (
        'step "services for the tests"\n'
        f"bash -exc {shlex.quote(chr(10).join(recipe.service_setup))} || fail 'service set-up'"
        if recipe.service_setup
        else ""
    )
    return f"""#!/bin/bash
set -uo pipefail
step() {{ echo; echo ">>>>> $*"; }}
fail() {{ echo ">>>>> FAILED: $*"; exit 1; }}
run_step() {{ echo "+ $1"; bash -c "$1"; }}
cd {TESTBED}
step "python: base image $(python3 --version)"
{venv}
cat > {BUILD_CONSTRAINTS} <<'CONSTRAINTS'
{build_constraints(pins).strip()}
CONSTRAINTS
cat > {ACTIVATE} <<'ACTIVATE'
source {VENV}/bin/activate
export PIP_CONSTRAINT={BUILD_CONSTRAINTS}
{exports}
cd {TESTBED}
ACTIVATE
source {ACTIVATE}
step "build tools"
python -m pip install -q "pip=={PIP_VERSION}" setuptools wheel \\
  || fail "installing pip, setuptools and wheel"
step "pinned packages"
pins=({quoted_pins})
install_pin() {{
  if command -v uv >/dev/null \\
      && UV_HTTP_TIMEOUT=60 uv pip install -q --python {VENV}/bin/python --no-deps "$@"; then
    return 0
  fi
  python -m pip install -q --no-deps "$@"
}}
if [ ${{#pins[@]}} -gt 0 ]; then
  if install_pin "${{pins[@]}}"; then
    echo "installed ${{#pins[@]}} pins"
  else
    echo "installing the pins together failed; installing them one by one"
    for pin in "${{pins[@]}}"; do
      install_pin "$pin" \\
        || {{ echo "dropped pin $pin"; echo "$pin" >> {SWE_DIR}/dropped-pins.txt; }}
    done
  fi
fi
step "pre-install"
{pre}
step "install"
run_step {shlex.quote(recipe.install)} || fail "install command"
{services}
step "done"
"""


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


def ensure_env_image(
    ctx: RunContext, instance: Instance, plan: EnvPlan, log_path: Path
) -> EnvImage:
    """The environment image (phases 1-3), built unless cached."""
    name = env_image_name(ctx, instance, plan)
    with _lock(ctx, f"env-{plan.env_key}"):
        if image_exists(ctx.client, name):
            with open(log_path, "a") as fh:
                fh.write(f"environment image {name} reused from the cache\n")
            labels = ctx.client.images.get(name).labels or {}
            return EnvImage(
                name=name,
                cache_hit=True,
                python=labels.get(LABEL_PYTHON, ""),
                test_cmd=labels.get(LABEL_TEST_CMD),
                reinstall=labels.get(LABEL_REINSTALL),
            )
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
        with _building(ctx, sandbox, "environment setup"):
            _setup_environment(ctx, instance, plan, sandbox, log_path, built)
            labels = {LABEL_KIND: "env", LABEL_ENV_KEY: plan.env_key, LABEL_PYTHON: built.python}
            if built.test_cmd is not None:
                labels[LABEL_TEST_CMD] = built.test_cmd
            if built.reinstall is not None:
                labels[LABEL_REINSTALL] = built.reinstall
            sandbox.snapshot(*name.rsplit(":", 1), labels=labels)
        log.info("setup.done", image=name)
        return built


def _setup_environment(
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
        ok, why = _run_logged(sandbox, script, log_path, "setup", ctx.settings.install_timeout)
    else:
        ok, why = _llm_setup(ctx, instance, sandbox, log_path, built)
    if not ok:
        remember_failed_build(ctx, plan.env_key, instance, why)
        raise SetupFailed(f"environment setup: {why}", _keep(ctx, sandbox))
    built.python = _venv_python(sandbox)


class FailedBuild(BaseModel):
    """A failed environment build, remembered so that later instances fail at once."""

    why: str
    instance_id: str  # the instance whose build failed (its setup.log has the output)
    run_id: str
    at: float


def _failure_path(ctx: RunContext, env_key: str) -> Path:
    return ctx.settings.data_dir / "env-failures" / f"{env_key}.json"


def remember_failed_build(ctx: RunContext, env_key: str, instance: Instance, why: str) -> None:
    """Record that the set-up script failed for ``env_key`` (not an engine error: those are
    never remembered)."""
    if ctx.settings.env_failure_ttl <= 0:
        return
    path = _failure_path(ctx, env_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    failed = FailedBuild(
        why=why, instance_id=instance.instance_id, run_id=ctx.run_id, at=time.time()
    )
    path.write_text(failed.model_dump_json())


def failed_build(ctx: RunContext, env_key: str) -> str | None:
    """The message for a build of ``env_key`` that failed within ``env_failure_ttl``, if any."""
    path = _failure_path(ctx, env_key)
    ttl = ctx.settings.env_failure_ttl
    try:
        failed = FailedBuild.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None
    age = time.time() - failed.at
    if ttl <= 0 or age > ttl:
        return None
    return (
        f"{failed.why} [this environment's build failed {age / 60:.0f} min ago for "
        f"{failed.instance_id} in run {failed.run_id}, see its setup.log; it is not rebuilt for "
        f"{ttl / 3600:.3g} h: set SWE_GREEN_ENV_FAILURE_TTL=0 to retry now]"
    )


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
    mirror = ctx.settings.python_mirror
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
    from .setup_llm import SetupFacts, run_llm_setup

    result = run_llm_setup(
        sandbox, SetupFacts.from_instance(instance), ctx.settings, log_path.parent
    )
    built.tokens = {"input": result.input_tokens, "output": result.output_tokens}
    built.test_cmd = result.test_command or None
    built.reinstall = "\n".join(result.install_commands) or None
    return result.success, result.failure_reason or ""


@contextlib.contextmanager
def _building(ctx: RunContext, sandbox: Sandbox, what: str) -> Iterator[None]:
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
    """Keep a failed container for inspection (per settings), stopped; its name, or None."""
    if ctx.settings.keep_containers == "never":
        sandbox.remove()
        return None
    return keep_stopped(sandbox)


# ----------------------------------------------------------------------------- phase 4
CLEAN_GIT = f"{SWE_DIR}/clean-git"


def base_commit_script(instance: Instance, reinstall: str | None) -> str:
    """Check out the base commit, reinstall, then swap in the history-clean ``.git``.

    The clean ``.git`` (:func:`export_clean_git`, only what the base commit reaches) is put at
    ``CLEAN_GIT`` before the script runs; the environment image's own ``.git`` (all of the
    mirror's history) is removed. The index, ``info/exclude`` and submodules' ``modules/``
    are carried over: the same blobs, so the tree stays clean.
    """
    reinstall_step = (
        f'echo ">>>>> reinstall"; bash -ec {shlex.quote(reinstall)} || fail reinstall\n'
        # pre-install commands may edit tracked files; the participant must see a clean tree
        "git checkout -q -- ."
        if reinstall
        else ""
    )
    return f"""#!/bin/bash
set -uo pipefail
fail() {{ echo ">>>>> FAILED: $*"; exit 1; }}
{SHELL_GIT_FUNCTION}
source {ACTIVATE} 2>/dev/null || cd {TESTBED}
cd {TESTBED}
git reset -q --hard && git -c advice.detachedHead=false checkout -q -f {instance.base_commit} \\
  || fail "checking out the base commit"
git clean -fdq
git checkout -q -B main
if [ -f .gitmodules ]; then
  git -c protocol.file.allow=always submodule update --init --no-fetch -q \\
    || fail "checking out the submodules at the base commit"
fi
{reinstall_step}
cd {TESTBED}
# what the environment built (egg-info, compiled files) is not the participant's change
git ls-files --others --exclude-standard >> .git/info/exclude
mkdir -p {CLEAN_GIT}/info
cp .git/info/exclude {CLEAN_GIT}/info/exclude
cp .git/index {CLEAN_GIT}/index || fail "copying the index"
if [ -d .git/modules ]; then mv .git/modules {CLEAN_GIT}/modules; fi
rm -rf .git && mv {CLEAN_GIT} .git || fail "installing the clean history"
test "$(git rev-parse HEAD)" = {instance.base_commit} || fail "clean history is not at the base"
git status --short | head -20
echo ">>>>> base commit ready: $(git rev-parse HEAD)"
"""


def ensure_instance_image(
    ctx: RunContext, instance: Instance, plan: EnvPlan, env_image: str, log_path: Path,
    reinstall: str | None,
) -> tuple[str, bool]:  # fmt: skip
    """The instance image (phase 4) built from the environment image unless cached."""
    name = instance_image_name(ctx, instance, plan)
    with _lock(ctx, f"instance-{plan.instance_key(instance)}"):
        if image_exists(ctx.client, name):
            return name, True
        sandbox = ctx.start_sandbox(env_image, instance, "setup", network=True)
        with _building(ctx, sandbox, "base commit"):
            _check_out_base(ctx, instance, sandbox, log_path, reinstall)
            sandbox.snapshot(
                *name.rsplit(":", 1),
                labels={LABEL_KIND: "instance", LABEL_ENV_KEY: plan.env_key},
            )
        return name, False


def _check_out_base(
    ctx: RunContext, instance: Instance, sandbox: Sandbox, log_path: Path, reinstall: str | None
) -> None:
    """Phase 4 in ``sandbox``: the base commit, reinstalled if needed, with a clean history."""
    with tempfile.TemporaryDirectory() as tmp:
        mirror = ensure_mirror(ctx.settings, instance.repo, [instance.base_commit])
        history = export_clean_git(mirror, instance.base_commit, Path(tmp) / "git")
        sandbox.put_dir(Path(tmp) / "git", CLEAN_GIT)
    with open(log_path, "a") as fh:
        fh.write(
            f"clean history: {history.commits} commits, {history.objects} objects, "
            f"{history.tags} tags, {history.pack_bytes / 1e6:.1f} MB pack, "
            f"{history.seconds:.1f}s\n"
        )
    script = base_commit_script(instance, reinstall)
    ok, why = _run_logged(sandbox, script, log_path, "base-commit", ctx.settings.install_timeout)
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


def _reinstall_at_base(
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
    policy: :func:`prepare_without_commit`)."""
    if ctx.restricted:
        return prepare_without_commit(ctx, instance)
    log_path = ctx.instance_dir(instance) / "setup.log"
    timings: dict[str, float] = {}
    started = time.monotonic()
    plan = plan_environment(ctx, instance)
    if not image_exists(ctx.client, instance_image_name(ctx, instance, plan)):
        try:
            check_complete(ctx.settings, instance)
        except UserError as exc:
            raise SetupFailed(f"checkout: {exc}") from exc
    env = ensure_env_image(ctx, instance, plan, log_path)
    timings["setup"] = time.monotonic() - started
    started = time.monotonic()
    reinstall = _reinstall_at_base(ctx, instance, plan, env.reinstall, log_path)
    instance_image, inst_hit = ensure_instance_image(
        ctx, instance, plan, env.name, log_path, reinstall
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
    with _building(ctx, sandbox, "environment setup"):
        _setup_environment(ctx, instance, plan, sandbox, log_path, built)
        timings["setup"] = time.monotonic() - started
        started = time.monotonic()
        reinstall = _reinstall_at_base(ctx, instance, plan, built.reinstall, log_path)
        _check_out_base(ctx, instance, sandbox, log_path, reinstall)
        files = capture(
            sandbox, instance_image_name(ctx, instance, plan), ctx.settings.data_dir / "files"
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
