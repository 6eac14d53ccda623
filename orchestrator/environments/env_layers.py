"""Layers that environment images of recipes share (setting ``share_layers``).

What an environment image holds above its base image, measured on a real sample (63
instances of the nine mirrored repositories, 21 environment images, see the documentation's
Performance page): its virtual environment (the interpreter copied three times, pip,
the pinned packages), ``/testbed`` (the checkout at the set-up commit, what the install
built there, and the shared history in ``.git``). Two kinds of it were the same in many
images and are now one layer each:

- *the tools image*, one per base image: the virtual environment with pip and nothing else
  (the interpreter once: its other names are hard links), ~20 MB that every environment
  image of that Python held again. Environments are built on it; the set-up script then
  installs setuptools and wheel and the pins as before.
- *the family*: an instance whose frozen environment differs from its recipe's by a few pins
  (``Recipe.instance_pins``: ``flake8-comprehensions`` for some sympy instances, ``astroid``
  for one pylint 2.15) had an environment image of its own, a whole copy of the recipe's but
  for those pins. It is now the recipe's environment image plus a layer installing them
  (``--no-deps``, as the set-up script installs every pin; the pins are a complete frozen
  set, so the result is the same package set as a whole build).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel

from orchestrator.atomic import append_text
from orchestrator.context.run_context import RunContext
from orchestrator.environments.build_steps import building, image_lock
from orchestrator.errors import SandboxError, UserError
from orchestrator.image_names import history_image_name, tools_image_name
from orchestrator.models import Instance
from orchestrator.plan.env_plan import EnvPlan
from orchestrator.plan.install import PIP_VERSION
from orchestrator.repos.clean_history import put_clean_history, shared_commit
from orchestrator.repos.repo_cache import ensure_mirror
from orchestrator.sandbox.models import LABEL_ENV_KEY, LABEL_KIND
from orchestrator.sandbox.scripts import run_script
from orchestrator.setup.plan import SetupFailed
from sandbox_tools.contract import CLEAN_GIT, SHARED_PACKS, TESTBED, VENV, VENV_SEED

# Bump when the tools script changes what it builds (part of the tools image's key).
TOOLS_VERSION = 2
LABEL_LAYER = "swe-green.layer"  # "tools": the shared virtual environment; "history"
LABEL_HISTORY_BELOW = "swe-green.history-below"  # the history image's commit


def tools_script() -> str:
    """The bash script of the tools image: the virtual environment (copies of the interpreter,
    as the set-up script makes it, hard-linked to one file), pip ``PIP_VERSION``, and no
    setuptools or wheel: what the venv seeded of them is noted in ``VENV_SEED``, which an
    environment's set-up installs again in its own layer (so that it starts where a whole
    build does, and hides nothing of this one; every shipped recipe pins both anyway)."""
    return f"""#!/bin/bash
set -uo pipefail
fail() {{ echo ">>>>> FAILED: $*"; exit 1; }}
python3 -m venv --copies {VENV} || fail "creating the virtual environment"
{VENV}/bin/python -m pip install -q "pip=={PIP_VERSION}" || fail "installing pip"
{VENV}/bin/python -m pip list --format=freeze 2>/dev/null | grep -iE '^(setuptools|wheel)==' \\
  > {VENV_SEED}
{VENV}/bin/python -m pip uninstall -q -y setuptools wheel >/dev/null 2>&1 || true
cd {VENV}/bin || fail "no bin directory"
real=$(./python -c 'import sys; print("python%d.%d" % sys.version_info[:2])')
for name in python python3; do
  if [ -f "$name" ] && [ ! -L "$name" ] && cmp -s "$name" "$real"; then ln -f "$real" "$name"; fi
done
rm -rf /root/.cache/pip
echo ">>>>> tools: $(./python --version), $(./python -m pip --version | cut -d' ' -f1-2)"
"""


def tools_key(base_image_id: str) -> str:
    """The tools image's key: its base image (by id) and what the script installs."""
    raw = json.dumps({"base": base_image_id, "pip": PIP_VERSION, "tools": TOOLS_VERSION})
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def uses_tools(ctx: RunContext, plan: EnvPlan) -> bool:
    """Whether this environment is built on the tools image: recipes (shipped or
    inferred) on a base image's Python (a fetched Python makes its own virtual
    environment), setting share_layers."""
    return (
        ctx.settings.environment.share_layers
        and plan.strategy in ("recipe", "infer")
        and not plan.fetch_python
        and ctx.backend.commits
    )


def ensure_tools_image(ctx: RunContext, instance: Instance, plan: EnvPlan, log_path: Path) -> str:
    """The tools image of the plan's base image: from this host's cache, else built."""
    found = ctx.backend.images.find(reference=plan.base_image)
    if not found:
        raise SetupFailed(f"tools image: base image {plan.base_image} not found")
    key = tools_key(found[0].id)
    name = tools_image_name(ctx.settings.environment.image_prefix, plan.python, key)
    with image_lock(ctx, f"tools-{key}"):
        if ctx.backend.images.exists(name):
            return name
        sandbox = ctx.start_sandbox(plan.base_image, instance, "setup", network=True)
        with building(ctx, sandbox, "tools image"):
            timeout = ctx.settings.environment.install_timeout
            run_script(sandbox, tools_script(), log_path, timeout, name="tools")
            labels = {LABEL_KIND: "env", LABEL_ENV_KEY: f"tools-{key}", LABEL_LAYER: "tools"}
            ctx.backend.keep(sandbox, name, ctx.settings.storage.data_dir / "files", labels)
    return name


def repo_bases(ctx: RunContext, instance: Instance) -> list[str]:
    """The base commits of the dataset's instances of this repository, this instance's
    first."""
    from orchestrator.dataset.instances import load_instances

    bases = [instance.base_commit]
    try:
        rows = load_instances(ctx.settings.dataset.dataset)
    except (UserError, OSError, ValueError):  # unreadable here: its own alone
        return bases
    return bases + [r.base_commit for r in rows if r.repo == instance.repo]


def ensure_history_image(
    ctx: RunContext, instance: Instance, below: str, log_path: Path
) -> tuple[str, str] | None:
    """The repository's history image over ``below`` (the tools image): ``/testbed/.git``
    holding one pack of what the common ancestor of the dataset's base commits of the
    repository reaches, shared by all its environments. (image, that commit), or None when
    the bases share no commit."""
    mirror = ensure_mirror(ctx.settings, instance.repo, [instance.base_commit])
    commit = shared_commit(mirror, repo_bases(ctx, instance))
    if commit is None:
        return None
    raw = json.dumps({"below": below, "repo": instance.repo, "commit": commit, "v": 1})
    key = hashlib.sha256(raw.encode()).hexdigest()[:16]
    name = history_image_name(ctx.settings.environment.image_prefix, instance.owner_name, key)
    with image_lock(ctx, f"history-{key}"):
        if ctx.backend.images.exists(name):
            return name, commit
        sandbox = ctx.start_sandbox(below, instance, "setup", network=False)
        with building(ctx, sandbox, "history image"):
            history = put_clean_history(sandbox, mirror, commit)
            append_text(
                log_path,
                f"repository history at {commit[:12]}: {history.commits} commits, "
                f"{history.pack_bytes / 1e6:.1f} MB pack\n",
            )
            timeout = ctx.settings.environment.install_timeout
            run_script(sandbox, _HISTORY_SCRIPT, log_path, timeout, name="history")
            labels = {LABEL_KIND: "env", LABEL_ENV_KEY: f"history-{key}", LABEL_LAYER: "history"}
            labels[LABEL_HISTORY_BELOW] = commit
            ctx.backend.keep(sandbox, name, ctx.settings.storage.data_dir / "files", labels)
    return name, commit


_HISTORY_SCRIPT = f"""#!/bin/bash
set -uo pipefail
fail() {{ echo ">>>>> FAILED: $*"; exit 1; }}
mkdir -p {TESTBED}/.git/objects/pack || fail "making {TESTBED}/.git"
mv {CLEAN_GIT}/objects/pack/pack-* {TESTBED}/.git/objects/pack/ || fail "moving the pack"
rm -rf {CLEAN_GIT}
(cd {TESTBED}/.git/objects/pack && ls) > {SHARED_PACKS} || fail "listing the packs"
echo ">>>>> repository history: $(cat {SHARED_PACKS} | tr '\\n' ' ')"
"""


class SetupStart(BaseModel):
    """Where an environment's set-up starts."""

    image: str
    venv_ready: bool = False  # the tools image's virtual environment is there
    history: str | None = None  # the commit whose history /testbed/.git holds already


def setup_start(ctx: RunContext, instance: Instance, plan: EnvPlan, log_path: Path) -> SetupStart:
    """The image an environment's set-up starts from: the repository's history image on the
    tools image, else the tools image, else the base image."""
    if not uses_tools(ctx, plan):
        return SetupStart(image=plan.base_image)
    try:
        tools = ensure_tools_image(ctx, instance, plan, log_path)
    except SandboxError as exc:  # the engine cannot list images: the base, as before
        append_text(log_path, f"no tools image ({str(exc).splitlines()[0][:200]}); from the base\n")
        return SetupStart(image=plan.base_image)
    found = ensure_history_image(ctx, instance, tools, log_path) if _history(ctx) else None
    if found is None:
        return SetupStart(image=tools, venv_ready=True)
    return SetupStart(image=found[0], venv_ready=True, history=found[1])


def _history(ctx: RunContext) -> bool:
    return ctx.settings.environment.share_history
