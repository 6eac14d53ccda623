"""The modules a setup.py needs when the build runs it (a pure function of its ``ast``, never
run): the imports of the code a build reaches, not those of branches it never takes.

Reached: the module's top level; the functions it calls or hands over (``setup_package()``
under ``if __name__ == "__main__"``, ``configuration=configuration``), and the functions
those reach; the methods of command classes deriving from a build command (``build_ext``
subclasses: the build runs them). Not reached:

- a branch for a Python the inference never chooses (``if sys.version_info[0] < 3``,
  ``if PY2``): the Python 3 side is;
- a branch taken only for commands no build runs (``if {"upload_all"} & set(sys.argv)``,
  ``if sys.argv[-1] == "publish"``): a test of ``sys.argv`` naming no build command;
- an optional import: the body of a ``try`` whose handler catches the failed import without
  raising (the handler's imports are fallbacks, never requirements); a ``try`` whose handler
  raises makes its body's imports required;
- functions nothing reaches and other classes' methods (a ``test`` command's
  ``import pytest``).

Modules of the standard library of any Python (Python 2's ``__builtin__`` and the modules
later releases removed included) are never requirements.
"""

from __future__ import annotations

import ast
import operator
import sys
from collections.abc import Callable, Iterator
from typing import Any

# every Python the inference may choose (:data:`.inference.PYTHON_RELEASES`)
PYTHONS = [(3, minor) for minor in range(6, 15)]
# the standard library's modules no longer in the running Python's list: Python 2's, and
# those later Python 3 releases removed
FORMER_STDLIB = frozenset(
    "__builtin__ BaseHTTPServer CGIHTTPServer ConfigParser Cookie HTMLParser Queue "
    "SimpleHTTPServer SocketServer StringIO Tkinter UserDict UserList UserString anydbm "
    "commands cPickle cStringIO copy_reg cookielib dbhash dummy_thread exceptions "
    "htmlentitydefs httplib md5 mimetools new popen2 repr rfc822 sets sha thread urllib2 "
    "urlparse whichdb xmlrpclib imp asynchat asyncore smtpd distutils aifc audioop cgi "
    "cgitb chunk crypt imghdr mailcap msilib nis nntplib ossaudiodev pipes sndhdr spwd "
    "sunau telnetlib uu xdrlib lib2to3 dummy_threading formatter macpath parser symbol"
    .split()
)  # fmt: skip
# tools every environment has
BUILD_TOOLS = frozenset({"setuptools", "pkg_resources", "wheel", "pip", "__future__"})
# the setup.py commands a build or an editable install runs
BUILD_COMMANDS = frozenset(
    "build build_ext build_py build_clib build_src build_scripts egg_info dist_info develop "
    "install install_lib install_egg_info bdist_wheel bdist_egg editable_wheel "
    "--single-version-externally-managed".split()
)  # fmt: skip


def build_imports(tree: ast.Module, own_modules: set[str]) -> set[str]:
    """The top-level modules the code a build reaches imports (see the module's text) that
    are neither the standard library, the build tools, nor the project's own."""
    values = _string_values(tree)
    found: set[str] = set()
    for node in _reached(tree, values):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return {
        m for m in found
        if m not in sys.stdlib_module_names and m not in FORMER_STDLIB
        and m not in BUILD_TOOLS and m not in own_modules
    }  # fmt: skip


def _reached(tree: ast.Module, values: dict[str, list[str]]) -> Iterator[ast.stmt]:
    """The statements a build runs: the top level's, then those of the functions and build
    command classes they reach, until no new one is reached."""
    defs: dict[str, ast.FunctionDef | ast.ClassDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            defs.setdefault(node.name, node)
    done: set[str] = set()
    todo: list[list[ast.stmt]] = [tree.body]
    while todo:
        for node in _live(todo.pop(), values):
            yield node
            for name in _names(node):
                target = defs.get(name)
                if target is None or name in done:
                    continue
                done.add(name)
                if isinstance(target, ast.FunctionDef):
                    todo.append(target.body)
                elif _is_build_command(target):
                    todo += [n.body for n in target.body if isinstance(n, ast.FunctionDef)]


def _live(body: list[ast.stmt], values: dict[str, list[str]]) -> Iterator[ast.stmt]:
    """The statements of ``body`` a build runs, nested blocks included (see the module's
    text); definitions are yielded, not entered (:func:`_reached` enters those reached)."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            taken = _branch(node.test, values)
            if taken is not False:
                yield from _live(node.body, values)
            if taken is not True:
                yield from _live(node.orelse, values)
        elif isinstance(node, ast.Try):
            if all(_raises(handler.body) for handler in node.handlers):
                yield from _live(node.body + node.orelse, values)
            yield from _live(node.finalbody, values)
        elif isinstance(node, ast.With | ast.For | ast.While):
            yield from _live(node.body, values)
            yield from _live(getattr(node, "orelse", []), values)


def _names(node: ast.stmt) -> Iterator[str]:
    """The names a statement reads itself: not those of the blocks it holds (:func:`_live`
    yields those that run) nor of the definitions."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return
    todo: list[ast.AST] = [node]
    while todo:
        current = todo.pop()
        if isinstance(current, ast.Name):
            yield current.id
        todo += [c for c in ast.iter_child_nodes(current) if not isinstance(c, ast.stmt)]


def _is_build_command(node: ast.ClassDef) -> bool:
    """A command class a build runs: one deriving from a build command (``build_ext``...)."""
    for base in node.bases:
        name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
        if "build" in name.lower() or "egg_info" in name.lower():
            return True
    return False


def _raises(body: list[ast.stmt]) -> bool:
    """Whether a handler ends the run: it raises or exits (the import was required)."""
    last = body[-1] if body else None
    if isinstance(last, ast.Raise):
        return True
    return (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and _dotted(last.value.func) in ("sys.exit", "exit", "SystemExit")
    )


# --------------------------------------------------------------------------- branches


def _branch(test: ast.expr, values: dict[str, list[str]]) -> bool | None:
    """Whether a build takes an ``if``'s body: False for a branch for Pythons the inference
    never chooses or for commands no build runs, True when its ``else`` is that branch, None
    when it depends or is not known."""
    outcomes = {_python_test(test, python) for python in PYTHONS}
    if len(outcomes) == 1 and None not in outcomes:
        return outcomes.pop()
    if _for_other_commands(test, values):
        return False
    return None


def _python_test(node: ast.expr, python: tuple[int, int]) -> bool | None:  # noqa: PLR0911 - one return a node type
    """The value of a test of the Python's version (``sys.version_info``, ``sys.version``,
    ``PY2``/``PY3``) on ``python``; None when it tests something else."""
    if isinstance(node, ast.BoolOp):
        parts = [_python_test(v, python) for v in node.values]
        if isinstance(node.op, ast.And):
            return False if False in parts else (None if None in parts else True)
        return True if True in parts else (None if None in parts else False)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _python_test(node.operand, python)
        return None if inner is None else not inner
    name = _dotted(node).rpartition(".")[2]
    if name in ("PY2", "PY26", "PY27", "IS_PY2"):
        return False
    if name in ("PY3", "IS_PY3"):
        return True
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left = _version_value(node.left, python)
        right = _version_value(node.comparators[0], python)
        if left is None or right is None or type(left) is not type(right):
            return None
        return _compare(node.ops[0], left, right)
    return None


def _version_value(node: ast.expr, python: tuple[int, int]) -> Any:
    """A version operand: ``sys.version_info`` (indexed, sliced, ``.major``/``.minor``),
    ``sys.version`` and ``platform.python_version()`` as on ``python``; literal ints,
    strings and tuples of them; else None."""
    if isinstance(node, ast.Call) and not node.args:
        node = node.func  # platform.python_version()
    text = f"{python[0]}.{python[1]}.0"
    info = {
        "version_info": (*python, 0, "final", 0),
        "version_info.major": python[0],
        "version_info.minor": python[1],
    }
    known = info | {f"sys.{k}": v for k, v in info.items()}
    known |= {"sys.version": text, "platform.python_version": text}
    dotted = _dotted(node)
    if dotted in known:
        return known[dotted]
    if isinstance(node, ast.Subscript):
        return _subscript(_version_value(node.value, python), node.slice)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | str):
        return node.value
    if isinstance(node, ast.Tuple):
        items = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        return tuple(items) if len(items) == len(node.elts) else None
    return None


def _subscript(base: Any, index: ast.expr) -> Any:
    """``base[index]`` for a literal index or slice (``[0]``, ``[:2]``), else None."""
    if not isinstance(base, tuple | str):
        return None
    if isinstance(index, ast.Constant) and isinstance(index.value, int):
        return base[index.value] if -len(base) <= index.value < len(base) else None
    if isinstance(index, ast.Slice) and index.step is None:
        lower, upper = _literal_int(index.lower), _literal_int(index.upper)
        if not isinstance(lower, str) and not isinstance(upper, str):
            return base[lower:upper]
    return None


def _literal_int(node: ast.expr | None) -> int | None | str:
    """A slice's literal end: an int, None when left out, "?" for anything else."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    return "?"


COMPARISONS: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}  # fmt: skip


def _compare(op: ast.cmpop, left: Any, right: Any) -> bool | None:
    compare = COMPARISONS.get(type(op))
    try:
        return None if compare is None else bool(compare(left, right))
    except TypeError:
        return None


def _for_other_commands(test: ast.expr, values: dict[str, list[str]]) -> bool:
    """Whether a test of ``sys.argv`` names commands and none a build runs (a release's
    ``upload_all``, ``publish``); not when it negates (``not in``, ``not``)."""
    if not any(_dotted(n) in ("sys.argv", "argv") for n in ast.walk(test)):
        return False
    if any(isinstance(n, ast.NotIn | ast.Not) for n in ast.walk(test)):
        return False
    named: list[str] = []
    for node in ast.walk(test):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            named.append(node.value)
        elif isinstance(node, ast.Name) and node.id in values:
            named += values[node.id]
    return bool(named) and not BUILD_COMMANDS.intersection(named)


def _string_values(tree: ast.Module) -> dict[str, list[str]]:
    """Module-level names bound to a string or a collection of strings (a set of command
    names)."""
    values: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if isinstance(value, ast.Call) and _dotted(value.func) in ("set", "frozenset"):
                value = value.args[0] if len(value.args) == 1 else value
            strings = [
                n.value for n in ast.walk(value)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            ]  # fmt: skip
            if isinstance(target, ast.Name) and strings:
                values[target.id] = strings
    return values


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` for a name or an attribute chain ("" for anything else)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""
