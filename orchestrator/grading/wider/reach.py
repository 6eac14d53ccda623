"""Which tests of the wider set exercise what the gold patch changes: a static reading of the
code (pure functions), for the tests the wider run lists as differing from gold.

**The functions the gold patch changes** are read from each Python module it changes (not a
test module), at the base commit, with :mod:`ast`: a hunk changes a line it removes, and the
line an addition follows (a replaced line is a removed one). Each changed line names the
functions and methods enclosing it (a nested function's enclosing ones too); a special method
(``__init__``, ``__eq__``...) names its class instead (a test calls ``C(...)``, never
``__init__``), a private one (``_entry``, sympy's ``_eval_derivative``) its class too (it is
reached through the class's public side); a line in a class's body outside its methods names
the class; a line outside
any definition names what that statement binds (``X = ...``). A module the gold patch adds,
or one that does not parse, names nothing.

**A test exercises them** when its test function's code names one of them (a name, an
attribute, or a name it imports: ``frobnicate(x)``, ``obj.frobnicate``), or the code of a
class enclosing the test does outside its test methods (``setUp``, helpers, attributes), or
a fixture of its module it asks for by a parameter (pytest's ``@pytest.fixture``; the
fixtures those ask for too).
Comments and strings do not count; a call through another function that does not name it
is not seen (the rule is static). A test is found by its runner's name: pytest's
``path::Class::test[params]``, django's ``test (module.Class)``, sympy's bare ``test``
(found in any module of the wider set).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from orchestrator.diffs.diff import Patch, bare

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")
_DJANGO = re.compile(r"^(\w+) \(([\w.]+)\)$")
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def changed_lines(patch: Patch) -> dict[str, set[int]]:
    """Per file the patch changes, its base lines a hunk changes: the lines it removes, and
    the line each addition follows (see the module doc)."""
    found: dict[str, set[int]] = {}
    for part in patch.files:
        if part.old is None:
            continue
        lines = found.setdefault(part.old, set())
        old = 0  # the base line the next body line stands at (0: before the first hunk)
        for raw in part.text.splitlines():
            text = bare(raw)
            hunk = _HUNK.match(text)
            if hunk:
                old = max(int(hunk[1]), 1)
            elif not old or text.startswith("\\"):
                continue
            elif text.startswith("-"):
                lines.add(old)
                old += 1
            elif text.startswith("+"):
                if old > 1:
                    lines.add(old - 1)
            else:
                old += 1
    return {path: lines for path, lines in found.items() if lines}


def changed_names(source: str, lines: Iterable[int]) -> set[str]:
    """The names the changed ``lines`` of ``source`` give (see the module doc); none when
    the source does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
        return set()
    names: set[str] = set()
    for line in lines:
        names |= _names_at(tree, line)
    return names


def _names_at(tree: ast.Module, line: int) -> set[str]:
    chain: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = []
    body: list[ast.stmt] = tree.body
    statement: ast.stmt | None = None
    while True:
        inside = next((node for node in body if _spans(node, line)), None)
        if inside is None:
            break
        if statement is None:
            statement = inside
        if not isinstance(inside, _DEFS):
            # a definition inside a compound statement (`if`, `try`) is still found
            nested = [node for node in ast.walk(inside) if isinstance(node, _DEFS)]
            deeper = [node for node in nested if _spans(node, line)]
            if not deeper:
                break
            inside = min(deeper, key=lambda node: node.lineno)  # the outermost
        chain.append(inside)
        body = inside.body
    if not chain:
        return _bound(statement, line) if statement is not None else set()
    names: set[str] = set()
    for at, node in enumerate(chain):
        if not isinstance(node, _FUNCS):
            continue
        owner = chain[at - 1] if at and isinstance(chain[at - 1], ast.ClassDef) else None
        if not _special(node.name):
            names.add(node.name)
        if owner is not None and node.name.startswith("_"):
            names.add(owner.name)  # reached through the class's public side
    if not names:  # a class's body outside its methods
        names.add(chain[-1].name)
    return names


def _spans(node: ast.stmt, line: int) -> bool:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return first <= line <= (node.end_lineno or node.lineno)


def _special(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _bound(statement: ast.stmt, line: int) -> set[str]:
    """The names the assignments of ``statement`` spanning ``line`` bind."""
    names: set[str] = set()
    for node in ast.walk(statement):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and _spans(node, line):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def gold_functions(patch: Patch, sources: Mapping[str, str]) -> list[str]:
    """The names of what ``patch`` (the gold patch) changes, read from ``sources`` (the base
    text of the modules it changes; a module missing there names nothing)."""
    names: set[str] = set()
    for path, lines in changed_lines(patch).items():
        if path in sources:
            names |= changed_names(sources[path], lines)
    return sorted(names)


@dataclass
class Reach:
    """The tests of the wider set whose code names a function the gold patch changes, as
    (module path, classes enclosing the test, test function name)."""

    tests: set[tuple[str, tuple[str, ...], str]] = field(default_factory=set)

    def covers(self, name: str) -> bool:
        """Whether the runner's test ``name`` is one of :attr:`tests` (see the module doc)."""
        where, classes, function = name_parts(name)
        if not function:
            return False
        for path, owners, found in self.tests:
            if found != function or not _same_module(where, path):
                continue
            if classes is None or owners[len(owners) - len(classes) :] == classes:
                return True
        return False


def _same_module(where: str | None, path: str) -> bool:
    """``where`` (a runner's path, relative to its root directory) names ``path``."""
    return where is None or where == path or path.endswith("/" + where)


def name_parts(name: str) -> tuple[str | None, tuple[str, ...] | None, str]:
    """A runner's test name as (module path or None, enclosing classes or None: unknown,
    function name); "" as the function when the name is none of the known forms."""
    django = _DJANGO.match(name)
    if django:
        dotted = [part for part in django[2].split(".") if part != django[1]]
        return None, tuple(dotted[-1:]), django[1]
    if "::" in name:
        head = name.split("[", 1)[0]
        parts = head.split("::")
        function = parts[-1] if parts[-1].isidentifier() else ""
        return parts[0], tuple(parts[1:-1]), function
    bare_name = name.split("[", 1)[0]
    return None, None, bare_name if bare_name.isidentifier() else ""


def reach_of(sources: Mapping[str, str], names: Iterable[str]) -> Reach:
    """The :class:`Reach` of ``names`` (:func:`gold_functions`) over ``sources`` (the test
    modules of the wider set, by path)."""
    wanted = set(names)
    reach = Reach()
    if not wanted:
        return reach
    for path, source in sources.items():
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
            continue
        # a name the module imports under another (``import x as y``) names x too
        aliases = {
            node.asname: node.name.rsplit(".", 1)[-1]
            for node in ast.walk(tree) if isinstance(node, ast.alias) and node.asname
        }  # fmt: skip
        fixtures = {
            node.name: node for node in tree.body
            if isinstance(node, _FUNCS) and "fixture" in _named(node.decorator_list)
        }  # fmt: skip
        _walk(path, tree.body, (), False, _Wanted(wanted, aliases, fixtures), reach)
    return reach


@dataclass
class _Wanted:
    """The names looked for, and a module's import aliases and its pytest fixtures."""

    names: set[str]
    aliases: dict[str, str]
    fixtures: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]

    def named(self, nodes: Iterable[ast.AST]) -> bool:
        """The code of ``nodes`` names one of :attr:`names`, by itself or by an alias."""
        found = _named(nodes)
        found |= {self.aliases[name] for name in found if name in self.aliases}
        return bool(found & self.names)

    def requested(self, test: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
        """The module's fixtures ``test`` asks for by its parameters, and theirs in turn."""
        found: dict[str, ast.AST] = {}
        asked = [arg.arg for arg in test.args.args]
        while asked:
            name = asked.pop()
            fixture = self.fixtures.get(name)
            if fixture is not None and name not in found:
                found[name] = fixture
                asked += [arg.arg for arg in fixture.args.args]
        return list(found.values())


def _walk(
    path: str, body: list[ast.stmt], owners: tuple[str, ...], named: bool, wanted: _Wanted,
    reach: Reach,
) -> None:  # fmt: skip
    """The tests in ``body`` (of classes ``owners``, whose own code names a wanted name when
    ``named``) that name one of ``wanted``."""
    for node in body:
        if isinstance(node, ast.ClassDef):
            own = [item for item in node.body if not _is_test(item)]
            mine = wanted.named([*own, *node.decorator_list, *node.bases])
            _walk(path, node.body, (*owners, node.name), named or mine, wanted, reach)
        elif _is_test(node) and isinstance(node, _FUNCS):
            if named or wanted.named([node, *wanted.requested(node)]):
                reach.tests.add((path, owners, node.name))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):  # tests defined conditionally
            inner = [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)]
            _walk(path, inner, owners, named, wanted, reach)


def _is_test(node: ast.AST) -> bool:
    return isinstance(node, _FUNCS) and node.name.startswith("test")


def _named(nodes: Iterable[ast.AST]) -> set[str]:
    """Every identifier the code of ``nodes`` uses: names, attributes, imported names."""
    found: set[str] = set()
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.Name):
                found.add(node.id)
            elif isinstance(node, ast.Attribute):
                found.add(node.attr)
            elif isinstance(node, ast.alias):
                found.add(node.name.rsplit(".", 1)[-1])
                if node.asname:
                    found.add(node.asname)
    return found
