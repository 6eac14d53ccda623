"""The ``swe-green`` command line: the root app, and every command registered in one table.

Each command module exposes its commands as plain functions (typer options in their
signatures); this module alone registers them, by name, in the order ``--help`` lists them:
a module that fails to import fails the CLI, never drops a command
(tests/test_cli_commands.py)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from orchestrator.errors import UserError
from orchestrator.frontends.cli.commands_assess import assess_cmd
from orchestrator.frontends.cli.commands_envs import envs_ls, envs_plan, envs_prune
from orchestrator.frontends.cli.commands_host import (
    config_cmd,
    gc_cmd,
    images_build,
    images_ls,
    sandbox_check,
    sandbox_ls,
)
from orchestrator.frontends.cli.commands_inspect import inspect_cmd
from orchestrator.frontends.cli.commands_instances import instances_ls
from orchestrator.frontends.cli.commands_participant import claude, empty, gold, scripted
from orchestrator.frontends.cli.commands_report import report_cmd
from orchestrator.frontends.cli.commands_run import demo_cmd, run_cmd
from orchestrator.frontends.cli.commands_serve import serve_command
from orchestrator.frontends.cli.commands_tasks import tasks_collect, tasks_validate
from orchestrator.frontends.cli.commands_validate import validate_cmd, validation_report_cmd
from orchestrator.frontends.cli.common import err_console
from orchestrator.log import configure_logging
from orchestrator.run.outcome import EXIT_INTERRUPTED, EXIT_USAGE
from orchestrator.settings import load_settings

Command = Callable[..., None]

# the commands, by name
COMMANDS: dict[str, Command] = {
    "config": config_cmd,
    "gc": gc_cmd,
    "validate": validate_cmd,
    "validation-report": validation_report_cmd,
    "run": run_cmd,
    "report": report_cmd,
    "inspect": inspect_cmd,
    "demo": demo_cmd,
    "assess": assess_cmd,
    "serve": serve_command,
}

# the groups of commands, by name: their help, then their commands by name
GROUPS: dict[str, tuple[str, dict[str, Command]]] = {
    "images": (
        "Base images.",
        {"build": images_build, "ls": images_ls},
    ),
    "sandbox": (
        "This tool's containers.",
        {"ls": sandbox_ls, "check": sandbox_check},
    ),
    "instances": ("Benchmark instances.", {"ls": instances_ls}),
    "tasks": (
        "New tasks from a repository's history.",
        {"collect": tasks_collect, "validate": tasks_validate},
    ),
    "envs": (
        "The environment image cache.",
        {"ls": envs_ls, "plan": envs_plan, "prune": envs_prune},
    ),
    "participant": (
        "Reference participants.",
        {
            "gold": gold,
            "empty": empty,
            "scripted": scripted,
            "claude": claude,
        },
    ),
}

app = typer.Typer(
    help="Self-hosted SWE-bench Verified evaluator (AgentBeats green agent).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _root(
    log_json: Annotated[
        bool, typer.Option("--log-json", help="Log JSON lines to stderr (runs too).")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Runs: log lines on stderr too.")
    ] = False,
) -> None:
    s = load_settings()
    json_lines = log_json or s.run.log_json
    configure_logging(json_lines=json_lines, level=s.run.log_level, verbose=verbose)


app.callback()(_root)
for _name, _function in COMMANDS.items():
    app.command(_name)(_function)
for _name, (_help, _commands) in GROUPS.items():
    _group = typer.Typer(help=_help, no_args_is_help=True)
    for _sub, _function in _commands.items():
        _group.command(_sub)(_function)
    app.add_typer(_group, name=_name)


def _tidy_help(command: Any) -> None:
    """Flags (``--help`` too) show no ``<bool>`` type in ``--help``: they take no value."""
    for param in command.params:
        if getattr(param, "is_flag", False):
            param.metavar = ""
    original = command.get_help_option

    def help_option(ctx: Any) -> Any:
        option = original(ctx)
        if option is not None:
            option.metavar = ""
        return option

    command.get_help_option = help_option
    for sub in getattr(command, "commands", {}).values():
        _tidy_help(sub)


@functools.cache
def _command() -> Any:
    """The click command of the whole app, built once per process."""
    command = typer.main.get_command(app)
    _tidy_help(command)
    return command


def main() -> None:
    """Entry point: user errors print one line, never a traceback."""
    command = _command()
    try:
        command.main(prog_name="swe-green")
    except UserError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(EXIT_INTERRUPTED)
