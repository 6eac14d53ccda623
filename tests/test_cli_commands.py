"""Every command of ``swe-green`` is registered explicitly: each command function of the command
modules is reachable from the root app and listed in its group's ``--help``, and a command
module that fails to import fails the CLI instead of dropping its commands."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest
import typer
from typer.models import ArgumentInfo, OptionInfo
from typer.testing import CliRunner

import orchestrator.frontends

# the modules that define commands: the front ends
COMMAND_PACKAGES = (orchestrator.frontends,)


def command_modules() -> list[ModuleType]:
    """Every module of the command packages, imported (an import error fails the test here)."""
    names = [
        info.name
        for package in COMMAND_PACKAGES
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
    ]
    return [importlib.import_module(name) for name in sorted(set(names))]


def _takes_cli_parameters(function: Callable[..., object]) -> bool:
    """Whether a parameter of ``function`` is a typer option or argument (its annotation read
    in the function's module; one naming a type imported only for type checking is none)."""
    for parameter in inspect.signature(function).parameters.values():
        hint = parameter.annotation
        if isinstance(hint, str):
            try:
                hint = eval(hint, function.__globals__)  # noqa: S307
            except NameError:
                continue
        if any(isinstance(m, OptionInfo | ArgumentInfo) for m in getattr(hint, "__metadata__", ())):
            return True
    return False


def command_functions(modules: list[ModuleType]) -> dict[Callable[..., object], str]:
    """The command functions of ``modules`` (``module:function`` each): those a Typer app of a
    module registers, and every module-level function with typer parameters that is no app's
    callback."""
    apps = [value for m in modules for value in vars(m).values() if isinstance(value, typer.Typer)]
    callbacks = {app.registered_callback.callback for app in apps if app.registered_callback}
    found = {
        command.callback for app in apps for command in app.registered_commands if command.callback
    }
    for module in modules:
        for value in vars(module).values():
            if (
                inspect.isfunction(value)
                and value.__module__ == module.__name__
                and value not in callbacks
                and _takes_cli_parameters(value)
            ):
                found.add(value)
    return {f: f"{f.__module__}:{f.__qualname__}" for f in found}


def walk(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """``command`` and every command under it, with the names that lead to each."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from walk(sub, (*path, name))


def root_command() -> Any:
    """The root command (typer's own click): its ``commands`` are those it lists."""
    from orchestrator.frontends.cli.app import app

    return typer.main.get_command(app)


def test_every_command_function_is_registered() -> None:
    expected = command_functions(command_modules())
    registered = {
        inspect.unwrap(command.callback) for _, command in walk(root_command()) if command.callback
    }
    # the finder finds the commands the table registers by name
    assert {
        "orchestrator.frontends.cli.commands_host:sandbox_ls",
        "orchestrator.frontends.cli.commands_run:run_cmd",
        "orchestrator.frontends.cli.commands_serve:serve_command",
        "orchestrator.frontends.cli.commands_participant:gold",
    } <= set(expected.values())
    assert sorted(name for f, name in expected.items() if f not in registered) == []


def test_commands_are_registered_one_way_by_the_app_module_alone() -> None:
    # a command module exposes plain functions; only the app module makes a Typer app and
    # registers them (no decorator, no sub-app of its own elsewhere)
    makers = sorted(
        module.__name__
        for module in command_modules()
        if any(isinstance(value, typer.Typer) for value in vars(module).values())
    )
    assert makers == ["orchestrator.frontends.cli.app"]


def test_every_group_lists_its_commands_in_its_help() -> None:
    from orchestrator.frontends.cli.app import app

    groups = [(p, c) for p, c in walk(root_command()) if hasattr(c, "commands")]
    assert {p for p, _ in groups} >= {(), ("images",), ("sandbox",), ("participant",)}
    for path, group in groups:
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        listed = set(re.findall(r"^│ ([a-z][a-z0-9-]*)\s", result.output, flags=re.M))
        assert listed == set(group.commands), (path, result.output)


def test_the_help_check_sees_a_command_missing_from_the_help() -> None:
    app = typer.Typer()

    @app.command("one")
    def one() -> None: ...

    @app.command("two", hidden=True)
    def two() -> None: ...

    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert set(re.findall(r"^│ ([a-z][a-z0-9-]*)\s", result.output, flags=re.M)) == {"one"}


def test_the_finder_sees_an_unregistered_command_function() -> None:
    module = ModuleType("stray_commands")
    exec(  # a module as a command module defines it: one decorated, one for a main app
        "from typing import Annotated\n"
        "import typer\n"
        "app = typer.Typer()\n"
        "@app.callback()\n"
        "def root(v: Annotated[bool, typer.Option()] = False) -> None: ...\n"
        "@app.command('ls')\n"
        "def ls() -> None: ...\n"
        "def stray(n: Annotated[int, typer.Option()] = 1) -> None: ...\n"
        "def helper(n: int) -> None: ...\n",
        module.__dict__,
    )
    assert sorted(command_functions([module]).values()) == [
        "stray_commands:ls",
        "stray_commands:stray",
    ]


def command_module_names() -> list[str]:
    return sorted(
        {name.split(":")[0] for name in command_functions(command_modules()).values()}
        - {"orchestrator.frontends.cli.app"}
    )


@pytest.mark.parametrize("broken", command_module_names())
def test_a_command_module_that_fails_to_import_fails_the_cli(
    broken: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, "orchestrator.frontends.cli.app")
    monkeypatch.setitem(sys.modules, broken, None)  # importing it raises ImportError
    with pytest.raises(ImportError, match=re.escape(broken)):
        importlib.import_module("orchestrator.frontends.cli.app")
