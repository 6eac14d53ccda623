"""The ``swe-green`` command line: the root app, and every command registered in one table.

Each command module exposes its commands as plain functions (typer options in their
signatures); this module alone registers them, by name, in the order ``--help`` lists them.
A command's module is imported when that command is chosen, never before: ``--help``,
``--version`` and a usage error answer without importing a command module, and each command
imports only what it runs. A module that fails to import fails its command with the import
error, never drops it (tests/test_cli_commands.py).
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Iterator
from typing import Annotated, Any, NamedTuple

import typer
import typer.core
import typer.main

from orchestrator.frontends.cli.setting_help import fill_on_help

PACKAGE = "orchestrator.frontends.cli"


class Entry(NamedTuple):
    """A command in the table: ``module:function`` (under :data:`PACKAGE`) and its one-line
    summary, the first sentence of the function's docstring (the root's ``--help`` lists it
    without importing the module; a test keeps the two in step)."""

    target: str
    summary: str


class Group(NamedTuple):
    """A group of commands: its help, then its commands by name."""

    help: str
    commands: dict[str, Entry | Group]


# the commands, by name, in the order --help lists them
COMMANDS: dict[str, Entry | Group] = {
    "config": Entry(
        "commands_host:config_cmd",
        "Print every setting: its value and where the value comes from.",
    ),
    "gc": Entry(
        "commands_host:gc_cmd",
        "Remove leftover containers and snapshot images; never what a live run holds.",
    ),
    "validate": Entry(
        "commands_validate:validate_cmd",
        "Build and validate the environments of a selection (gold patch check) with a summary.",
    ),
    "validation-report": Entry(
        "commands_validate:validation_report_cmd",
        "The Markdown report of a validation sweep (docs/validation.md).",
    ),
    "run": Entry(
        "commands_run:run_cmd",
        "Evaluate a participant on a selection of instances (batch job).",
    ),
    "report": Entry(
        "commands_report:report_cmd",
        "A run's report; with --compare, what changed against another run (verdict first).",
    ),
    "inspect": Entry(
        "commands_inspect:inspect_cmd",
        "Open a shell where an instance was graded: the environment active.",
    ),
    "demo": Entry(
        "commands_run:demo_cmd",
        "Evaluate the synthetic instances offline (no GitHub, no Hugging Face).",
    ),
    "assess": Entry(
        "commands_assess:assess_cmd",
        "Send an assessment to a running `swe-green serve`, stream its progress, print the result.",
    ),
    "serve": Entry(
        "commands_serve:serve_command",
        "Serve the green agent over A2A (JSON-RPC, A2A 1.0 and 0.3) for assessment requests.",
    ),
    "images": Group(
        "Base images.",
        {
            "build": Entry(
                "commands_host:images_build", "Build the base images (skips those that exist)."
            ),
            "ls": Entry(
                "commands_host:images_ls",
                "List this tool's images (base, environment cache, snapshots).",
            ),
        },
    ),
    "sandbox": Group(
        "This tool's containers.",
        {
            "ls": Entry(
                "commands_host:sandbox_ls",
                "List this tool's containers with their run and instance.",
            ),
            "check": Entry(
                "commands_host:sandbox_check",
                "Run the sandbox conformance suite against the configured backend and base image.",
            ),
        },
    ),
    "instances": Group(
        "Benchmark instances.",
        {"ls": Entry("commands_instances:instances_ls", "Print what a selection resolves to.")},
    ),
    "tasks": Group(
        "New tasks from a repository's history.",
        {
            "collect": Entry(
                "commands_tasks:tasks_collect",
                "Collect a repository's candidate tasks.",
            ),
            "validate": Entry(
                "commands_tasks:tasks_validate", "Validate the candidates of a tasks directory."
            ),
        },
    ),
    "envs": Group(
        "The environment image cache.",
        {
            "ls": Entry(
                "commands_envs:envs_ls",
                "List the cached environment and instance images, least recently used first.",
            ),
            "plan": Entry(
                "commands_envs:envs_plan",
                "Show how a recipe builds an instance's environment.",
            ),
            "prune": Entry(
                "commands_envs:envs_prune",
                "Remove cached environment and instance images, least recently used first.",
            ),
        },
    ),
    "participant": Group(
        "Reference participants.",
        {
            "gold": Entry(
                "commands_participant:gold", "Answer every instance with its gold patch."
            ),
            "empty": Entry("commands_participant:empty", 'Answer every instance with "no change".'),
            "scripted": Entry(
                "commands_participant:scripted",
                "Replay a script of tool calls, then answer (for tests).",
            ),
            "claude": Entry(
                "commands_participant:claude",
                "A coding agent on the Anthropic API using the sandbox tools.",
            ),
        },
    ),
}


def function_of(entry: Entry) -> Callable[..., None]:
    """The command function an entry names (its module imported now)."""
    module, name = entry.target.split(":")
    return getattr(importlib.import_module(f"{PACKAGE}.{module}"), name)


# the root's options, as the root's callback read them (it runs before the chosen command)
_root_options: dict[str, bool] = {}


def _configured(function: Callable[..., None]) -> Callable[..., None]:
    """``function`` run after the root options configured logging (only a command that runs
    pays for the settings and the logger: a usage error is found before)."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> None:
        from orchestrator.log import configure_logging
        from orchestrator.settings import load_settings

        s = load_settings()
        configure_logging(
            json_lines=_root_options.get("log_json", False) or s.run.log_json,
            level=s.run.log_level,
            verbose=_root_options.get("verbose", False),
        )
        function(*args, **kwargs)

    return run


def _built(name: str, entry: Entry) -> Any:
    """The click command of ``entry`` (its module imported now), named ``name``."""
    single = typer.Typer(
        rich_markup_mode=None, pretty_exceptions_enable=False, add_completion=False
    )
    single.command(name)(_configured(function_of(entry)))
    command = typer.main.get_command(single)
    command.name = name
    _tidy_help(command)
    fill_on_help(command)
    return command


class LazyGroup(typer.core.TyperGroup):
    """A group whose commands are the :class:`Entry` and :class:`Group` rows of ``rows``,
    each command's module imported only when that command is chosen. Its ``--help`` lists
    every row from the table alone."""

    rows: dict[str, Entry | Group] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.listing = False
        self.loaded: dict[str, Any] = {}

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.rows)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        row = self.rows.get(cmd_name)
        if row is None:
            return None
        if isinstance(row, Group):
            return _group(row)
        if self.listing:
            return typer.core.TyperCommand(cmd_name, short_help=row.summary)
        if cmd_name not in self.loaded:
            self.loaded[cmd_name] = _built(cmd_name, row)
        return self.loaded[cmd_name]

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        self.listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self.listing = False


def _lazy(
    rows: dict[str, Entry | Group], help: str, callback: Callable[..., None] | None = None
) -> Any:
    """The click group (typer's) of ``rows``."""
    cls = type("LazyGroup", (LazyGroup,), {"rows": rows})
    made = typer.Typer(
        cls=cls, help=help, callback=callback, no_args_is_help=True, rich_markup_mode=None,
        pretty_exceptions_enable=False, add_completion=False,
    )  # fmt: skip
    if callback is None:
        made.callback()(lambda: None)
    command = typer.main.get_command(made)
    _tidy_help(command)
    return command


def _group(group: Group) -> Any:
    made = _lazy(group.commands, group.help)
    made.short_help = group.help
    return made


def _version(value: bool) -> None:
    if not value:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        print(f"swe-green {version('swe-green')}")
    except PackageNotFoundError:
        print("swe-green (not installed: run from a checkout)")
    raise typer.Exit(0)


def _root_callback(
    log_json: Annotated[
        bool, typer.Option("--log-json", help="Log JSON lines to stderr (runs too).")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Runs: log lines on stderr too.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_version, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    _root_options.update(log_json=log_json, verbose=verbose)


def _tidy_help(command: Any) -> None:
    """Flags (``--help`` too) show no ``<bool>`` type in ``--help``: they take no value; an
    argument is named in capitals (``REF``), as a usage line names what to write."""
    for param in command.params:
        if getattr(param, "is_flag", False):
            param.metavar = ""
        elif getattr(param, "param_type_name", "") == "argument" and not param.metavar:
            param.metavar = param.name.upper()
    original = command.get_help_option

    def help_option(ctx: Any) -> Any:
        option = original(ctx)
        if option is not None:
            option.metavar = ""
        return option

    command.get_help_option = help_option


# the whole command line: the root group (typer's click), its commands loaded when chosen
app = _lazy(
    COMMANDS, "Self-hosted SWE-bench Verified evaluator (AgentBeats green agent).", _root_callback
)


def walk(command: Any = app, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """``command`` and every command under it (each module imported), with the names that
    lead to each, in the order ``--help`` lists them."""
    yield path, command
    if isinstance(command, LazyGroup):
        for name in command.list_commands(None):
            sub = command.get_command(None, name)
            assert sub is not None
            yield from walk(sub, (*path, name))


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    """Entry point: user errors print one line, never a traceback; SIGTERM ends a command as
    Ctrl-C does (docs/reference/statuses.md: each command's exit statuses)."""
    import signal

    from orchestrator.errors import UserError

    signal.signal(signal.SIGTERM, _interrupt)
    try:
        app.main(prog_name="swe-green")
    except UserError as exc:
        from orchestrator.frontends.cli.common import err_console
        from orchestrator.run.outcome import EXIT_USAGE

        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        from orchestrator.run.outcome import EXIT_INTERRUPTED

        print("interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
