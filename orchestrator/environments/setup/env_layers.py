"""Layers that environment images of recipes share (setting ``share_layers``).

What an environment image holds above its base image, measured on a real sample (63
instances of the nine mirrored repositories, 21 environment images, see the README's
performance section): its virtual environment (the interpreter copied three times, pip,
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

from orchestrator.context.run_context import RunContext
from orchestrator.environments.setup.build_steps import (
    building,
    image_lock,
    keep_failed,
    run_logged,
)
from orchestrator.environments.setup.plan import EnvPlan, SetupFailed
from orchestrator.environments.setup.setup_scripts import PIP_VERSION, VENV
from orchestrator.errors import SandboxError
from orchestrator.models import Instance
from orchestrator.sandbox.models import LABEL_ENV_KEY, LABEL_KIND

# Bump when the tools script changes what it builds (part of the tools image's key).
TOOLS_VERSION = 1
LABEL_LAYER = "swe-green.layer"  # "tools": the shared virtual environment


def tools_script() -> str:
    """The bash script of the tools image: the virtual environment (copies of the interpreter,
    as the set-up script makes it, hard-linked to one file), pip ``PIP_VERSION``, and no
    setuptools or wheel (every recipe pins both: an environment installs its own, in its
    own layer, and hides nothing of this one)."""
    return f"""#!/bin/bash
set -uo pipefail
fail() {{ echo ">>>>> FAILED: $*"; exit 1; }}
python3 -m venv --copies {VENV} || fail "creating the virtual environment"
{VENV}/bin/python -m pip install -q "pip=={PIP_VERSION}" || fail "installing pip"
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
    """Whether this environment is built on the tools image: recipes on a base image's
    Python (a fetched Python makes its own virtual environment), setting share_layers."""
    return (
        ctx.settings.environment.share_layers
        and plan.strategy == "recipe"
        and not plan.fetch_python
        and not ctx.restricted
    )


def ensure_tools_image(ctx: RunContext, instance: Instance, plan: EnvPlan, log_path: Path) -> str:
    """The tools image of the plan's base image: from this host's cache, else built."""
    found = ctx.backend.images(reference=plan.base_image)
    if not found:
        raise SetupFailed(f"tools image: base image {plan.base_image} not found")
    key = tools_key(found[0].id)
    name = f"{ctx.settings.environment.image_prefix}/env:tools-py{plan.python}-{key}"
    with image_lock(ctx, f"tools-{key}"):
        if ctx.backend.image_exists(name):
            return name
        sandbox = ctx.start_sandbox(plan.base_image, instance, "setup", network=True)
        with building(ctx, sandbox, "tools image"):
            ok, why = run_logged(
                sandbox, tools_script(), log_path, "tools",
                ctx.settings.environment.install_timeout,
            )  # fmt: skip
            if not ok:
                raise SetupFailed(f"tools image: {why}", keep_failed(ctx, sandbox))
            labels = {LABEL_KIND: "env", LABEL_ENV_KEY: f"tools-{key}", LABEL_LAYER: "tools"}
            repository, tag = name.rsplit(":", 1)
            sandbox.snapshot(repository, tag, labels=labels)
    return name


def start_image(ctx: RunContext, instance: Instance, plan: EnvPlan, log_path: Path) -> str:
    """The image an environment's set-up starts from: the tools image, else the base."""
    if not uses_tools(ctx, plan):
        return plan.base_image
    try:
        return ensure_tools_image(ctx, instance, plan, log_path)
    except SandboxError as exc:  # the engine cannot list images: the base, as before
        with open(log_path, "a") as fh:
            fh.write(f"no tools image ({str(exc).splitlines()[0][:200]}); from the base\n")
        return plan.base_image
