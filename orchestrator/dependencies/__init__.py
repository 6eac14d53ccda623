"""Phase 3: the dependencies. :func:`install_dependencies` runs the install a set-up strategy
planned (:mod:`orchestrator.plan.install`: a script of :mod:`orchestrator.sandbox.scripts`;
the pins raised for the Python used, :mod:`orchestrator.plan.pins`) and compiles the
environment's bytecode (:mod:`orchestrator.plan.bytecode`)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.plan.bytecode import compile_environment
from orchestrator.sandbox import Sandbox
from orchestrator.sandbox.scripts import Script, run_script
from orchestrator.settings import EnvironmentConfig


def install_dependencies(
    sandbox: Sandbox, install: Script | None, log_path: Path, settings: EnvironmentConfig
) -> None:
    """Phase 3 in ``sandbox`` (network on): run ``install`` (None: the set-up strategy
    installed them itself, as the LLM agent does), then compile the environment's bytecode
    (setting ``compile_bytecode``). Raises :class:`~orchestrator.sandbox.scripts.ScriptFailed`."""
    if install is not None:
        run_script(sandbox, install, log_path, settings.install_timeout)
    if settings.compile_bytecode:
        compile_environment(sandbox, log_path, settings.install_timeout)
