"""The tamper check's rules for code that loads other code by path: what a call in the patch's
added code does when it runs a file, puts a place on ``sys.path``, or reaches into pip's build
output.

Code that lives outside a ``.py`` file (a data file run with ``runpy.run_path``, text read and
passed to ``exec``/``compile``, a module loaded with ``importlib``'s file loaders, an archive put
on ``sys.path``) is out of sight of a check that reads ``.py`` files only, so the loading
itself is named: :data:`RUNS_FILE` for any file run by path, :data:`RUNS_NON_PYTHON` when the
path is not a ``.py`` file (or cannot be told), :data:`SYS_PATH` for a change of ``sys.path``,
:data:`FINDERS` for one of the import system's finders (a finder that loads ``.dat`` files as
modules), :data:`BUILD_OUTPUT` for code that names pip's build output (``build/lib``), which the
check does not read. All pure: each function takes the call's resolved name and its node.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

RUNS_FILE = "runs code from a file by path"
RUNS_NON_PYTHON = "runs code from a non-Python file"
SYS_PATH = "changes sys.path"
FINDERS = "changes how Python finds modules (sys.meta_path, sys.path_hooks)"
BUILD_OUTPUT = "loads code from pip's build output"

# calls that run or import the file their path argument names
_PATH_RUNNERS = frozenset(
    {"runpy.run_path", "importlib.machinery.SourceFileLoader", "machinery.SourceFileLoader",
     "SourceFileLoader", "importlib.machinery.SourcelessFileLoader", "SourcelessFileLoader",
     "importlib.machinery.ExtensionFileLoader", "ExtensionFileLoader",
     "importlib.util.spec_from_file_location", "util.spec_from_file_location",
     "spec_from_file_location", "imp.load_source", "imp.load_compiled", "imp.load_dynamic",
     "imp.load_module", "zipimport.zipimporter", "zipimporter", "site.addsitedir",
     "pkgutil.extend_path", "execfile"}
)  # fmt: skip
# calls whose first argument is code: code read from a file is run from that file
_CODE_RUNNERS = frozenset({"exec", "eval", "compile", "builtins.exec", "builtins.compile"})
_READS = frozenset({"open", "io.open", "read", "read_text", "read_bytes", "Path", "get_data"})
_SYS_PATH_CALLS = frozenset({"sys.path.insert", "sys.path.append", "sys.path.extend"})
_FINDER_LISTS = frozenset({"sys.meta_path", "sys.path_hooks"})
_PY_SOURCE = re.compile(r"\.pyw?$")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}$")
# pip's build output as a path or a dotted module name
_BUILD = re.compile(r"(?:^|[/\\.])build[/\\.](?:lib|bdist|scripts)\b|^build$")


def call_reasons(
    func: str, node: ast.Call, resolve: Callable[[ast.AST], str | None], strings: list[str]
) -> set[str]:
    """The loader reasons of one added call: ``func`` its resolved name, ``resolve`` the
    visitor's name resolution, ``strings`` every constant string of the call."""
    found: set[str] = set()
    short = func.rsplit(".", 1)[-1]
    if func in _PATH_RUNNERS or (short in {"run_path", "spec_from_file_location"}):
        found.add(RUNS_FILE)
        if not _names_python_source(strings):
            found.add(RUNS_NON_PYTHON)
    elif func in _CODE_RUNNERS and node.args and _reads_a_file(node.args[0], resolve):
        found.add(RUNS_FILE)
        if not _names_python_source(_constants(node.args[0])):
            found.add(RUNS_NON_PYTHON)
    if func in _SYS_PATH_CALLS or func == "site.addsitedir":
        found.add(SYS_PATH)
    if func.rsplit(".", 1)[0] in _FINDER_LISTS and short in ("insert", "append", "extend"):
        found.add(FINDERS)
    if any(_BUILD.search(text) for text in strings) or _build_parts(strings):
        found.add(BUILD_OUTPUT)
    return found


def assign_reasons(target: ast.AST, resolve: Callable[[ast.AST], str | None]) -> set[str]:
    """The loader reasons of an added assignment target: ``sys.path``, ``sys.meta_path`` or
    ``sys.path_hooks`` itself, or an item or slice of it."""
    if isinstance(target, ast.Subscript):
        target = target.value
    name = resolve(target)
    return {SYS_PATH} if name == "sys.path" else {FINDERS} if name in _FINDER_LISTS else set()


def import_reasons(module: str) -> set[str]:
    """The loader reasons of an added import of ``module`` (``build.lib.pkg``: pip's output
    as a namespace package)."""
    return {BUILD_OUTPUT} if _BUILD.search(module) else set()


def _names_python_source(strings: list[str]) -> bool:
    """Whether the path's constant parts name a ``.py`` file and no file of another kind."""
    named = [text for text in strings if _EXTENSION.search(text.strip())]
    return bool(named) and all(_PY_SOURCE.search(text.strip()) for text in named)


def _build_parts(strings: list[str]) -> bool:
    """``os.path.join(root, "build", "lib")``: the build directory's parts as separate
    constants."""
    parts = [text.strip("/\\") for text in strings]
    return any(
        a == "build" and (b.startswith(("lib", "bdist", "scripts")))
        for a, b in zip(parts, parts[1:], strict=False)
    )


def _reads_a_file(node: ast.AST, resolve: Callable[[ast.AST], str | None]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            name = resolve(sub.func) or ""
            if name in _READS or name.rsplit(".", 1)[-1] in _READS:
                return True
    return False


def _constants(node: ast.AST) -> list[str]:
    return [
        sub.value
        for sub in ast.walk(node)
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str)
    ]
