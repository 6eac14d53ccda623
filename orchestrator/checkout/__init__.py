"""Phase 1: clone and checkout. :func:`check_out` puts the repository at the instance's
``environment_setup_commit`` into a container; the clones behind it are the host's cache of
bare mirrors (:mod:`orchestrator.repos.repo_cache`, one per repository, shared by every
instance and run), run with the host's git (:mod:`orchestrator.repos.git_commands`)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from orchestrator.models import Instance
from orchestrator.repos.repo_cache import prepare_checkout
from orchestrator.sandbox import Sandbox
from orchestrator.settings import Settings
from sandbox_tools.contract import TESTBED


def check_out(settings: Settings, instance: Instance, sandbox: Sandbox) -> None:
    """Phase 1: a checkout of ``environment_setup_commit`` (from the mirror, fetched or
    updated as needed) copied to the container's repository directory."""
    with tempfile.TemporaryDirectory(prefix="swe-green-checkout-") as tmp:
        dest = Path(tmp) / "testbed"
        prepare_checkout(settings, instance, dest)
        sandbox.put_dir(dest, TESTBED)
