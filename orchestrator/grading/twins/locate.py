"""Which function of which test file a FAIL_TO_PASS name runs: pytest node ids
(``path::Class::test_x[param]``, a truncated ``[...]`` too), django's and unittest's
``test_x (module.Class)`` / ``test_x (module.Class.test_x)`` (or the docstring line django
names a test by), sympy's bare ``test_x``. Pure: files are texts, parsed once."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from orchestrator.grading.log_parsers import DJANGO_SUBTEST
from orchestrator.recipes.selection import django_label

Function = ast.FunctionDef | ast.AsyncFunctionDef

NOT_IN_PATCH = "test file not in the test patch"
NOT_FOUND = "test function not found"
NO_PARSE = "file does not parse"


@dataclass(frozen=True)
class Located:
    """A test function: its file, its qualified name (``Class.test_x``) and its node."""

    path: str
    qualname: str
    node: Function


def parse_files(files: Mapping[str, str]) -> dict[str, ast.Module | None]:
    """Each Python file's tree; None for one that Python 3.11 does not parse."""
    trees: dict[str, ast.Module | None] = {}
    for path, text in files.items():
        if path.endswith(".py"):
            try:
                trees[path] = ast.parse(text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                trees[path] = None
    return trees


def locate(name: str, trees: Mapping[str, ast.Module | None]) -> list[Located] | str:
    """The functions ``name`` runs, or why there is none."""
    if "::" in name:
        path, _, rest = name.partition("::")
        return _in_file(path, rest.split("[", 1)[0].split("::"), trees)
    if sub := DJANGO_SUBTEST.fullmatch(name):
        name = sub.group(1)
    label = django_label(name)
    if label is not None:
        return _by_label(label.split("."), trees)
    if name.isidentifier():
        found = [
            Located(path, qualname, node)
            for path, tree in sorted(trees.items())
            if tree is not None
            for qualname, node in _functions(tree)
            if node.name == name
        ]
        # sympy runs a bare name in every test file given, and reports it once: the module
        # level functions of that name in all files, else every method of that name
        module_level = [f for f in found if "." not in f.qualname]
        if found:
            return module_level or found
        return NO_PARSE if any(tree is None for tree in trees.values()) else NOT_FOUND
    return _by_docstring(name.strip(), trees)


def _in_file(
    path: str, parts: list[str], trees: Mapping[str, ast.Module | None]
) -> list[Located] | str:
    if path not in trees:
        return NOT_IN_PATCH
    tree = trees[path]
    if tree is None:
        return NO_PARSE
    node = _find(tree, parts)
    return [Located(path, ".".join(parts), node)] if node is not None else NOT_FOUND


def _by_label(parts: list[str], trees: Mapping[str, ast.Module | None]) -> list[Located] | str:
    """``module.Class.test_x`` (django's and unittest's label): the module is the file whose
    path ends with it (django's tests live under ``tests/``)."""
    if len(parts) >= 3 and parts[-1] == parts[-2]:  # test_x (module.Class.test_x)
        parts = parts[:-1]
    reason = NOT_IN_PATCH
    for cut in range(len(parts) - 1, 0, -1):
        module, qual = parts[:cut], parts[cut:]
        suffixes = ("/".join(module) + ".py", "/".join(module) + "/__init__.py")
        for path in sorted(trees):
            if path in suffixes or path.endswith(tuple("/" + s for s in suffixes)):
                found = _in_file(path, qual, trees)
                if not isinstance(found, str):
                    return found
                reason = found if reason == NOT_IN_PATCH else reason
    return reason


def _by_docstring(line: str, trees: Mapping[str, ast.Module | None]) -> list[Located] | str:
    """A django test named by its docstring's first line."""
    for path, tree in sorted(trees.items()):
        for qualname, node in _functions(tree) if tree is not None else ():
            doc = ast.get_docstring(node)
            if doc and doc.strip().splitlines()[0].strip() == line:
                return [Located(path, qualname, node)]
    return NOT_FOUND


def _find(tree: ast.Module, parts: list[str]) -> Function | None:
    scope: list[ast.stmt] = tree.body
    classes = _classes(tree)
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        node = _member(scope, part, classes, want_function=last)
        if node is None:
            return None
        if last:
            return node if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else None
        assert isinstance(node, ast.ClassDef)
        scope = node.body
    return None


def _member(
    scope: list[ast.stmt], name: str, classes: Mapping[str, ast.ClassDef], *, want_function: bool,
    seen: frozenset[str] = frozenset(),
) -> ast.stmt | None:  # fmt: skip
    """``name`` defined in ``scope`` (under ``if``/``try`` too), else in the bases of the
    class whose body ``scope`` is, when they are classes of the same file."""
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef) if want_function else (ast.ClassDef,)
    for node in _statements(scope):
        if isinstance(node, kinds) and node.name == name:
            return node
    owner = next((c for c in classes.values() if c.body is scope), None)
    for base in owner.bases if owner is not None else ():
        base_name = base.id if isinstance(base, ast.Name) else ""
        if base_name in classes and base_name not in seen:
            found = _member(
                classes[base_name].body, name, classes, want_function=want_function,
                seen=seen | {base_name},
            )  # fmt: skip
            if found is not None:
                return found
    return None


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a block and of the ``if``/``try``/``with`` blocks inside it."""
    for node in body:
        yield node
        if isinstance(node, ast.If | ast.With):
            yield from _statements(node.body)
            yield from _statements(getattr(node, "orelse", []))
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _statements(block)
            for handler in node.handlers:
                yield from _statements(handler.body)


def _classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {node.name: node for node in _statements(tree.body) if isinstance(node, ast.ClassDef)}


def _functions(tree: ast.Module) -> Iterator[tuple[str, Function]]:
    """Module-level functions and the methods of module-level classes (nested classes too)."""

    def walk(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, Function]]:
        for node in _statements(body):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield prefix + node.name, node
            elif isinstance(node, ast.ClassDef):
                yield from walk(node.body, prefix + node.name + ".")

    return walk(tree.body, "")
