"""Every command of ``swe-green`` is registered explicitly: each command function of the command
modules is reachable from the root app and listed in its group's ``--help`` (with the summary
its docstring starts with), the root answers without importing a command module, and a
command module that fails to import fails its command instead of dropping it."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import subprocess
import sys
from collections.abc import Callable
from types import ModuleType

import pytest
import typer
from click.testing import CliRunner
from typer.models import ArgumentInfo, OptionInfo

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


def test_every_command_function_is_registered() -> None:
    expected = command_functions(command_modules())
    from orchestrator.frontends.cli.app import walk

    registered = {inspect.unwrap(command.callback) for _, command in walk() if command.callback}
    # the finder finds the commands the table registers by name
    assert {
        "orchestrator.frontends.cli.commands_host:sandbox_ls",
        "orchestrator.frontends.cli.commands_run:run_cmd",
        "orchestrator.frontends.cli.commands_serve:serve_command",
        "orchestrator.frontends.cli.commands_participant:gold",
    } <= set(expected.values())
    assert sorted(name for f, name in expected.items() if f not in registered) == []


def test_commands_are_registered_one_way_by_the_app_module_alone() -> None:
    # a command module exposes plain functions; no module makes a Typer app of its own (no
    # decorator, no sub-app): the app module's table registers them
    makers = sorted(
        module.__name__
        for module in command_modules()
        if any(isinstance(value, typer.Typer) for value in vars(module).values())
    )
    assert makers == []


def test_every_group_lists_its_commands_in_its_help() -> None:
    from orchestrator.frontends.cli.app import app, walk

    groups = [(p, c) for p, c in walk() if hasattr(c, "rows")]
    assert {p for p, _ in groups} >= {(), ("images",), ("sandbox",), ("participant",)}
    for path, group in groups:
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        listing = result.output.split("Commands:\n", 1)[1]
        listed = set(re.findall(r"^  ([a-z][a-z0-9-]*)\s", listing, flags=re.M))
        assert listed == set(group.rows), (path, result.output)


def test_each_summary_starts_its_command_docstring() -> None:
    from orchestrator.frontends.cli.app import COMMANDS, Entry, function_of

    rows = [r for r in COMMANDS.values() if isinstance(r, Entry)]
    rows += [e for r in COMMANDS.values() if not isinstance(r, Entry) for e in r.commands.values()]
    for entry in rows:
        doc = " ".join((inspect.getdoc(function_of(entry)) or "").split("\n\n")[0].split())
        assert doc.startswith(entry.summary.rstrip(".")), (entry.target, doc)


# the modules whose import a quick answer must not pay for
HEAVY = ("rich", "pydantic_settings", "docker", "a2a", "structlog")


def _imported_after(*calls: list[str]) -> tuple[list[int], list[str]]:
    """The exit status of each call of the CLI (in one fresh interpreter), and the modules
    then imported: the command modules, the settings, and the :data:`HEAVY` ones."""
    code = (
        "import sys, json\n"
        "from orchestrator.frontends.cli.app import app\n"
        "from click.testing import CliRunner\n"
        f"codes = [CliRunner().invoke(app, args).exit_code for args in {list(calls)!r}]\n"
        "print(json.dumps([codes, sorted(m for m in sys.modules if 'commands_' in m\n"
        f"    or m.startswith('orchestrator.settings') or m in {HEAVY!r})]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    codes, modules = json.loads(done.stdout)
    return codes, modules


def test_the_root_answers_without_importing_a_command_module() -> None:
    codes, modules = _imported_after(["--help"], ["--version"], ["nope"], ["images", "--help"])
    assert codes == [0, 0, 2, 0]
    assert modules == []


def test_a_usage_error_imports_only_its_command_module() -> None:
    codes, modules = _imported_after(["run", "--nope"])
    assert codes == [2]
    assert modules == ["orchestrator.frontends.cli.commands_run"]


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
def test_a_command_module_that_fails_to_import_fails_its_command(
    broken: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orchestrator.frontends.cli.app import COMMANDS, Entry, function_of

    rows = [r for r in COMMANDS.values() if isinstance(r, Entry)]
    rows += [e for r in COMMANDS.values() if not isinstance(r, Entry) for e in r.commands.values()]
    entry = next(e for e in rows if broken.endswith("." + e.target.split(":")[0]))
    monkeypatch.setitem(sys.modules, broken, None)  # importing it raises ImportError
    with pytest.raises(ImportError, match=re.escape(broken)):
        function_of(entry)
