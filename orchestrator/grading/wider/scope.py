"""Which of the repository's tests the wider run runs: pure functions over the repository's
Python files (their paths, and the imports each test module makes, read from its code).

The scope of a patch, for each Python module it changes (not a test module itself):

1. **package**: every test module inside the directory of the module's package (the nearest
   directory with an ``__init__.py``; sympy's ``sympy/core/basic.py`` brings
   ``sympy/core/tests/*``);
2. **imports**: every test module that imports the module itself (``import a.b.c``,
   ``from a.b.c import x``, ``from a.b import c``, relative imports resolved);
3. **imports package**: when neither finds a test module (the tests live outside the
   package and import it from the top: requests' test module does
   ``import requests``), the test modules that import its nearest enclosing package that
   any test module imports.

The task's own test files are left out (the official run ran them). What the scope chooses is
capped at ``max_files`` modules, in the order above (a module's package first), and the
number cut is said.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, Field

_TEST_NAME = re.compile(r"^(test_.*|.*_test|tests)\.py$")
_FROM = re.compile(r"^\s*from\s+(\.*[\w.]*)\s+import\s+\(?\s*([\w\s,.*]+)", re.M)
_IMPORT = re.compile(r"^\s*import\s+([\w., ]+)", re.M)


class RepoIndex(BaseModel):
    """What the scope reads of a repository: its Python files, and per test module the
    modules it imports (absolute dotted names)."""

    python_files: list[str] = Field(default_factory=list)
    imports: dict[str, list[str]] = Field(default_factory=dict)


def is_test_module(path: str) -> bool:
    """A test module by name: ``test_*.py``, ``*_test.py`` or django's ``tests.py``."""
    return bool(_TEST_NAME.match(posixpath.basename(path)))


def package_dir(path: str, files: set[str]) -> str:
    """The directory of ``path``'s package: its own directory when that holds an
    ``__init__.py``, else "" (a top-level module)."""
    directory = posixpath.dirname(path)
    return directory if posixpath.join(directory, "__init__.py") in files else ""


def module_name(path: str, files: set[str]) -> str:
    """The dotted name ``path`` is imported by: its directories upwards while each holds an
    ``__init__.py`` (``src/_pytest/python.py`` -> ``_pytest.python``)."""
    parts = [posixpath.basename(path).removesuffix(".py")]
    if parts[0] == "__init__":
        parts = []
    directory = posixpath.dirname(path)
    while directory and posixpath.join(directory, "__init__.py") in files:
        parts.insert(0, posixpath.basename(directory))
        directory = posixpath.dirname(directory)
    return ".".join(parts)


def imports_of(source: str, module: str) -> list[str]:
    """Every module ``source`` (of the module named ``module``) imports, by absolute name:
    ``from a.b import c`` gives ``a.b`` and ``a.b.c`` (``c`` may be a module). Read from the
    syntax tree; a file that does not parse (another Python's syntax) by its import lines."""
    found: list[str] = []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
        # SystemError: CPython 3.11's parser can lose count of its depth on a deep tree
        return _imports_by_lines(source, module)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute("." * node.level + (node.module or ""), module)
            if base:
                found.append(base)
                found += [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
    return list(dict.fromkeys(found))


def _imports_by_lines(source: str, module: str) -> list[str]:
    found: list[str] = []
    for match in _IMPORT.finditer(source):
        found += [name.split(" as ")[0].strip() for name in match[1].split(",") if name.strip()]
    for match in _FROM.finditer(source):
        base = _absolute(match[1], module)
        if base:
            found.append(base)
            names = [name.split(" as ")[0].strip() for name in match[2].split(",")]
            found += [f"{base}.{name}" for name in names if name.isidentifier()]
    return list(dict.fromkeys(found))


def _absolute(name: str, module: str) -> str:
    """``name`` of an import in ``module`` made absolute (``..x`` in ``a.b.c`` is ``a.x``)."""
    level = len(name) - len(name.lstrip("."))
    if not level:
        return name
    parts = module.split(".")[:-level]
    rest = name[level:]
    return ".".join([*parts, rest] if rest else parts)


def changed_modules(paths: Iterable[str]) -> list[str]:
    """The Python modules among a patch's paths that are not test modules."""
    return [
        path for path in dict.fromkeys(paths)
        if path.endswith(".py") and not is_test_module(path) and not _in_test_dir(path)
    ]  # fmt: skip


def _in_test_dir(path: str) -> bool:
    return any(part in {"tests", "testing"} for part in path.split("/")[:-1])


class Scope(BaseModel):
    """The test modules a patch's wider run runs, with why each (``package``, ``imports``,
    ``imports package``), and how many the cap left out."""

    files: list[str] = Field(default_factory=list)
    why: dict[str, str] = Field(default_factory=dict)
    cut: int = 0


def select_scope(
    changed: Iterable[str], index: RepoIndex, *, exclude: Iterable[str] = (), max_files: int
) -> Scope:
    """The wider set of the modules ``changed`` (repository paths), read off ``index``:
    see the module doc. ``exclude``: the task's own test files."""
    files = set(index.python_files)
    tests = sorted(path for path in index.imports if path not in set(exclude))
    chosen: dict[str, str] = {}
    for path in changed_modules(changed):
        home = package_dir(path, files)
        local = [test for test in tests if home and test.startswith(home + "/")]
        for test in local:
            chosen.setdefault(test, "package")
        name = module_name(path, files)
        importers = _importers(name, tests, index.imports)
        for test in importers:
            chosen.setdefault(test, "imports")
        if not local and not importers:
            for test in _nearest_importers(name, tests, index.imports):
                chosen.setdefault(test, "imports package")
    kept = list(chosen)[:max_files]
    return Scope(files=kept, why={f: chosen[f] for f in kept}, cut=len(chosen) - len(kept))


def _importers(name: str, tests: list[str], imports: Mapping[str, list[str]]) -> list[str]:
    return [test for test in tests if name and name in imports[test]]


def _nearest_importers(name: str, tests: list[str], imports: Mapping[str, list[str]]) -> list[str]:
    """The test modules importing the nearest package above ``name`` that any imports."""
    parts = name.split(".")[:-1]
    while parts:
        found = _importers(".".join(parts), tests, imports)
        if found:
            return found
        parts.pop()
    return []


def index_of(python_files: Iterable[str], sources: Mapping[str, str]) -> RepoIndex:
    """The index of a repository: ``python_files`` (every ``.py`` path) and ``sources``
    (the text of its test modules)."""
    files = sorted(set(python_files))
    present = set(files)
    imports = {path: imports_of(text, module_name(path, present)) for path, text in sources.items()}
    return RepoIndex(python_files=files, imports=imports)
