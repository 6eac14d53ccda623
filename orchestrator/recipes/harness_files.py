"""What of a participant's patch grading leaves out: the files that configure, drive or supply
the tests (``conftest.py``, ``tox.ini``, test files and directories, the runner scripts, ``.pth``
files), new top-level modules that would shadow a standard-library or runner module, and
compiled or binary files (bytecode, extension modules, any ``GIT binary patch`` with data):
they are not source, and Python may load them instead of the source beside them."""

from __future__ import annotations

import posixpath
import re
import shlex
import sys
from collections.abc import Iterable

from orchestrator.diffs.diff import FilePatch, Patch, as_patch
from orchestrator.models import Instance
from orchestrator.recipes.recipe import Recipe

_TEST_DIRS = frozenset({"test", "tests", "testing"})
_INFRA_NAMES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "sitecustomize.py",
        "usercustomize.py",
        ".gitattributes",
        "runtests.py",
        "testing.py",
        "tests.py",
    }
)
# modules a new top-level file must not shadow on the runner's sys.path[0]
SHADOWED_MODULES = frozenset(sys.stdlib_module_names) | {
    "pytest",
    "_pytest",
    "pluggy",
    "py",
    "iniconfig",
    "nose",
}
_MODULE_FILE = re.compile(r"^([A-Za-z_]\w*)(?:\.[\w-]+)*\.(?:py|pyc|pyw|so)$")
# compiled files by kind: Python may load any of them instead of the source
_BYTECODE = re.compile(r"(?:^|/)__pycache__/|\.py[co]$")
_EXTENSION = re.compile(r"\.(?:so|pyd|dll|dylib)(?:\.[\w.]+)?$")
_BINARY_DATA = re.compile(r"^GIT binary patch\r?\n(?:literal|delta) \d+\r?$", re.M)
_CREATES = re.compile(r"^(?:new file mode |--- /dev/null|rename to |copy to |@@ -0,0 )", re.M)


def is_harness_file(path: str, runner_files: Iterable[str] = ()) -> bool:
    """Whether ``path`` configures, drives or supplies the tests (see the module doc)."""
    parts = path.split("/")
    name = parts[-1]
    return (
        path in set(runner_files)
        or name in _INFRA_NAMES
        or name.endswith(".pth")
        or (name.startswith("test_") and name.endswith(".py"))
        or name.endswith("_test.py")
        or any(part in _TEST_DIRS for part in parts[:-1])
    )


def shadows_a_module(path: str, runner_dirs: Iterable[str] = ("",)) -> str | None:
    """The standard-library or runner module that a file at ``path`` would shadow, if it
    lies in one of ``runner_dirs`` (the directories on the runner's ``sys.path[0]``: the
    repository root, the runner script's directory) as a module or package."""
    directory, name = posixpath.split(path)
    match = _MODULE_FILE.match(name)
    module = match.group(1) if match else ""
    if module == "__init__":  # a package, with source or without (``__init__.pyc``)
        directory, module = posixpath.split(directory)
    if module in SHADOWED_MODULES and directory in set(runner_dirs):
        return module
    return None


def compiled_kind(part: FilePatch) -> str | None:
    """``"bytecode"``, ``"extension module"`` or ``"binary"`` when the section changes such a
    file (by name, or by carrying binary data), else None. A ``Binary files ... differ`` stub
    without data is not counted here: it carries nothing to apply."""
    if any(_BYTECODE.search(path) for path in part.paths):
        return "bytecode"
    if any(_EXTENSION.search(path) for path in part.paths):
        return "extension module"
    if _BINARY_DATA.search(part.text):
        return "binary"
    return None


def runner_files(recipe: Recipe) -> list[str]:
    """Repository files the test command runs (``bin/test``, ``tests/runtests.py``)."""
    try:
        words = shlex.split(recipe.test_cmd)
    except ValueError:
        words = recipe.test_cmd.split()
    return [
        posixpath.normpath(word)
        for word in words
        if "=" not in word and not word.startswith("-") and ("/" in word or word.endswith(".py"))
    ]


def drop_harness_files(
    patch: Patch | str, instance: Instance, recipe: Recipe
) -> tuple[Patch, list[str]]:
    """``patch`` without its test-infrastructure files, and the files dropped.

    New top-level modules that would shadow a standard-library or runner module on the
    runner's ``sys.path[0]`` (``/testbed/unittest.py`` next to ``runtests.py``,
    ``bin/traceback.py`` next to ``bin/test``, also as a sourceless ``.pyc`` package) are
    dropped too, and so are compiled and binary files (:func:`compiled_kind`) unless the gold
    patch itself changes files of that kind (they are then kept, and the tamper check flags
    them). Files that the instance's gold patch changes are never dropped.
    """
    parsed = as_patch(patch)
    gold_parts = Patch.parse(instance.patch).files
    gold = {path for part in gold_parts for path in part.paths}
    gold_kinds = {compiled_kind(part) for part in gold_parts} - {None}
    runners = runner_files(recipe)
    runner_dirs = {""} | {posixpath.dirname(path) for path in runners}
    kept, dropped = [], list[str]()
    for part in parsed.files:
        creates = bool(_CREATES.search(part.text))
        kind = compiled_kind(part)
        if (kind is not None and kind not in gold_kinds) or any(
            p not in gold
            and (
                is_harness_file(p, runners)
                or (creates and shadows_a_module(p, runner_dirs) is not None)
            )
            for p in part.paths
        ):
            dropped.extend(part.paths)
        else:
            kept.append(part)
    if not dropped:
        return parsed, []
    return parsed.keeping(kept), list(dict.fromkeys(dropped))
