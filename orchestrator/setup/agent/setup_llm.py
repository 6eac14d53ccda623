"""The ``llm`` setup strategy: Claude builds the test environment in the sandbox with tool use.

The model reads the packaging files in ``/testbed``, picks an interpreter, creates a virtual
environment, installs the package with its test extras and calls ``finish``. This module then
writes ``/opt/swe/activate.sh`` (the environment contract: sourcing it activates the
environment and changes to ``/testbed``) and checks it before accepting the result.

Bounds: turns, total tokens and wall time from :class:`Settings`. Transient API errors are
retried under the one Anthropic retry policy (:mod:`orchestrator.anthropic_retry`); a refused
key fails at once. Every turn,
tool call and token count goes to ``setup.log`` (JSON lines) and to structlog.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import anthropic

from orchestrator import anthropic_retry
from orchestrator.anthropic_retry import RetryPolicy
from orchestrator.errors import SandboxError, UserError
from orchestrator.sandbox import Sandbox
from orchestrator.settings import Settings, SetupAgentConfig
from orchestrator.setup.agent.setup_agent import SetupAgent
from orchestrator.setup.agent.setup_log import SetupLog, cap
from orchestrator.setup.agent.setup_models import (
    ACTIVATE_PATH,
    TESTBED,
    TOOL_OUTPUT_LIMIT,
    TOOL_TIMEOUT,
    VENV_PATH,
    AgentLimits,
    FinishArgs,
    FinishCheck,
    LlmSetupResult,
    SetupFacts,
)
from orchestrator.tools.tools_host import install_tools, run_tool
from sandbox_tools.schemas import DEFAULT_TIMEOUT, TOOLS

# ------------------------------------------------------------------------- settings


def llm_available(settings: SetupAgentConfig) -> bool:
    """Whether the llm strategy can run (an API key is configured)."""
    return bool(settings.anthropic_key())


def check_llm_settings(settings: Settings) -> None:
    """Raise :class:`UserError` when strategy ``llm`` is chosen but cannot run.

    Call it before any container starts. Strategy ``auto`` without a key is fine: it simply
    never falls back to the agent.
    """
    if settings.environment.setup_strategy == "llm" and not llm_available(settings.setup_agent):
        raise _no_key()
    for name in ("setup_max_turns", "setup_max_tokens", "setup_timeout"):
        value = getattr(settings.setup_agent, name)
        if value <= 0:
            raise UserError(
                f"{name} is {value}; the setup agent needs a positive limit.",
                f"set SWE_GREEN_{name.upper()} to a positive number.",
            )


def _no_key() -> UserError:
    return UserError(
        "The llm setup strategy needs an Anthropic API key, and none is set.",
        "set SWE_GREEN_ANTHROPIC_API_KEY (or ANTHROPIC_API_KEY), "
        "or use the recipe strategy (SWE_GREEN_SETUP_STRATEGY=recipe).",
    )


def make_client(settings: SetupAgentConfig) -> anthropic.Anthropic:
    """The SDK client; its calls are retried by :mod:`orchestrator.anthropic_retry` alone."""
    key = settings.anthropic_key()
    if not key:
        raise _no_key()
    return anthropic_retry.client(key, settings.anthropic_base_url)


# ------------------------------------------------------------------------- the sandbox side


def activate_script(venv_path: str, env: dict[str, str]) -> str:
    """The text of ``/opt/swe/activate.sh``."""
    lines = [
        "# written by swe-green (setup strategy llm); source it with bash",
        f"source {shlex.quote(venv_path.rstrip('/') + '/bin/activate')}",
        *(f"export {name}={shlex.quote(value)}" for name, value in sorted(env.items())),
        f"cd {TESTBED}",
    ]
    return "\n".join(lines) + "\n"


_VERIFY = (
    "set -e; realpath -e {venv}; source {activate}; "
    "python -c 'import os, platform, sys; print(platform.python_version()); "
    "print(os.path.realpath(sys.prefix))'; pwd -P"
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _same_minor(claimed: str, actual: str) -> bool:
    want = re.match(r"\s*(\d+)\.(\d+)", claimed)
    have = re.match(r"(\d+)\.(\d+)", actual)
    return bool(want and have and want.groups() == have.groups())


def install_activate_script(sandbox: Sandbox, args: FinishArgs) -> FinishCheck:
    """Write ``/opt/swe/activate.sh`` for ``args`` and check that sourcing it works."""
    bad = [name for name in args.env if not _ENV_NAME.match(name)]
    if bad:
        return FinishCheck(ok=False, message=f"not valid variable names in env: {bad}")
    venv = args.venv_path.rstrip("/") or "/"
    probe = sandbox.exec(f"test -f {shlex.quote(venv)}/bin/activate", timeout=30)
    if not probe.ok:
        return FinishCheck(ok=False, message=f"{venv}/bin/activate does not exist")
    sandbox.write_file(ACTIVATE_PATH, activate_script(venv, args.env), mode=0o755)
    check = sandbox.exec(_VERIFY.format(venv=shlex.quote(venv), activate=ACTIVATE_PATH), timeout=60)
    lines = check.stdout.split()
    if not check.ok or len(lines) != 4:
        return FinishCheck(
            ok=False,
            message=f"`source {ACTIVATE_PATH} && python` failed (exit {check.exit_code}): "
            f"{cap(check.output, 2000)}",
        )
    venv_real, version, prefix, cwd = lines
    if prefix != venv_real:
        return FinishCheck(
            ok=False,
            message=f"after activation `python` runs from {prefix}, not from {venv_real}",
        )
    if cwd != TESTBED:
        return FinishCheck(ok=False, message=f"activate.sh left the shell in {cwd}")
    if not _same_minor(args.python_version, version):
        return FinishCheck(
            ok=False,
            message=f"python_version says {args.python_version!r} but the venv runs {version}",
        )
    return FinishCheck(ok=True, python_version=version)


_PROBE = """\
echo '## interpreters'
for p in $(compgen -c | grep -E '^python3(\\.[0-9]+)?$' | sort -u); do
  echo "$(command -v "$p"): $("$p" --version 2>&1)"
done
echo '## uv'; uv --version 2>&1 || true
echo '## {TESTBED}'; ls -A {TESTBED}
""".replace("{TESTBED}", TESTBED)


def first_message(facts: SetupFacts, probe: str) -> str:
    """The opening user message: the instance facts and what the container offers."""
    return (
        f"Repository: {facts.repo}\n"
        f"Version: {facts.version or 'unknown'}\n"
        f"Instance: {facts.instance_id or 'unknown'}\n"
        f"Checked out commit: {facts.environment_setup_commit or 'unknown'} (in {TESTBED})\n\n"
        f"What the container has:\n{probe.strip()}\n\n"
        + (
            "An environment inferred from the repository's packaging files was tried first "
            f"and failed; start from it and fix what failed:\n{facts.starting_point.strip()}\n\n"
            if facts.starting_point
            else ""
        )
        + f"Set up the environment at {VENV_PATH} and call finish."
    )


def run_llm_setup(
    sandbox: Sandbox,
    facts: SetupFacts,
    settings: SetupAgentConfig,
    log_dir: Path,
    *,
    client: anthropic.Anthropic | None = None,
    retry: RetryPolicy | None = None,
    tool_timeout: float = TOOL_TIMEOUT,
) -> LlmSetupResult:
    """Let the setup agent build the environment in ``sandbox`` (network on, /testbed ready).

    Never raises for the agent's or the API's failures: they come back as ``success=False``
    with ``failure_kind`` (``auth`` means every later call would fail the same way).
    """
    log = SetupLog(log_dir, instance_id=facts.instance_id, repo=facts.repo)
    try:
        try:
            install_tools(sandbox)
            probe = sandbox.exec(_PROBE, timeout=60).output
        except SandboxError as exc:
            log.write("sandbox_error", error=str(exc))
            return LlmSetupResult(
                success=False,
                failure_kind="sandbox",
                failure_reason=f"could not prepare the sandbox for the setup agent: {exc}",
                log_path=log.path,
            )
        agent = SetupAgent(
            client or make_client(settings),
            model=settings.setup_model,
            tools=list(TOOLS),
            execute=lambda call, cap: run_tool(
                sandbox,
                call,
                timeout=min(DEFAULT_TIMEOUT, cap),
                max_timeout=cap,
                output_limit=TOOL_OUTPUT_LIMIT,
            ),
            complete=lambda args: install_activate_script(sandbox, args),
            limits=AgentLimits.from_settings(settings, tool_timeout),
            log=log,
            retry=retry,
        )
        return agent.run(first_message(facts, cap(probe)))
    finally:
        log.close()
