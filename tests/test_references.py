"""Every cross-reference to code in the product's docstrings and comments and in the docs
resolves: a path (``orchestrator/x/y.py``, ``x/y.py:name``, ``y.py:name``), a Sphinx role
(``:func:`...```, ``:class:`...```, ``:mod:`.x```...), a dotted name (``orchestrator.x.y``,
``module.name``). The code and the docs cite no issue numbers: they state the rule.

The resolver reads the sources (no import of the product): a module's names are what its top
level defines or imports, a class's what its body defines or assigns (``self.x = ...``
too); a name imported from outside the product is looked up in that library."""

from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# where cross-references are read: these trees' Python files (docstrings and comments) and
# shell scripts (comments), then the documentation
CODE_TREES = ("orchestrator", "sandbox_tools", "bench", "scripts")
DOCS = ("README.md", "docs")
# the top-level directories a path may start with; the product's packages
TOP_DIRS = ("orchestrator", "sandbox_tools", "bench", "scripts", "docs", "tests", ".ci")
PACKAGES = ("orchestrator", "sandbox_tools")


# --------------------------------------------------------------------------- the index
@dataclass
class ClassInfo:
    members: set[str] = field(default_factory=set)
    bases: list[str] = field(default_factory=list)


@dataclass
class ModuleInfo:
    name: str
    path: Path
    package: bool
    # a top-level name: "import:<qualified name>", "class", "def" or "value"
    names: dict[str, str] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    # (first line, last line, class) of each class, for the class a comment is in
    spans: list[tuple[int, int, str]] = field(default_factory=list)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _top_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's top-level statements, those under ``if``/``try``/``with`` too."""
    for node in body:
        yield node
        if isinstance(node, ast.If | ast.Try | ast.With):
            for block in ("body", "orelse", "finalbody", "handlers"):
                for inner in getattr(node, block, []):
                    yield from _top_statements(getattr(inner, "body", [inner]))


def _targets(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, ast.AnnAssign | ast.AugAssign):
        return [node.target]
    return []


def _class_info(node: ast.ClassDef) -> ClassInfo:
    info = ClassInfo(bases=[ast.unparse(base) for base in node.bases])
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            info.members.add(stmt.name)
        for target in _targets(stmt):
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    info.members.add(name.id)
    for inner in ast.walk(node):  # self.x = ... in its methods
        for target in _targets(inner) if isinstance(inner, ast.stmt) else []:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id in ("self", "cls")
            ):
                info.members.add(target.attr)
    return info


def _absolute(module: ModuleInfo, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.name.split(".")
    base = base[: len(base) - node.level + (1 if module.package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _imported(module: ModuleInfo, node: ast.Import | ast.ImportFrom) -> dict[str, str]:
    """The names an import statement binds, each ``import:<what it names>``."""
    if isinstance(node, ast.ImportFrom):
        source = _absolute(module, node)
        return {a.asname or a.name: f"import:{source}.{a.name}" for a in node.names}
    return {
        a.asname or a.name.split(".")[0]: f"import:{a.name if a.asname else a.name.split('.')[0]}"
        for a in node.names
    }


@cache
def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


@cache
def read_module(path: Path) -> ModuleInfo:
    module = ModuleInfo(module_name(path), path, path.name == "__init__.py")
    tree = parse(path)
    for node in _top_statements(tree.body):
        if isinstance(node, ast.Import | ast.ImportFrom):
            module.names.update(_imported(module, node))
        elif isinstance(node, ast.ClassDef):
            module.names[node.name] = "class"
            module.classes[node.name] = _class_info(node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            module.names[node.name] = "def"
        for target in _targets(node):
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    module.names.setdefault(name.id, "value")
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            module.spans.append((node.lineno, node.end_lineno or node.lineno, node.name))
    return module


@cache
def index() -> dict[str, ModuleInfo]:
    modules = {}
    for tree in CODE_TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            info = read_module(path)
            modules[info.name] = info
    return modules


# --------------------------------------------------------------------------- resolving
def _external(parts: list[str]) -> bool:
    """Whether a name outside the product exists (imported and looked up)."""
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr) and attr not in getattr(obj, "model_fields", {}):
                return False
            obj = getattr(obj, attr, None)
        return True
    return False


def resolve(name: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether the fully qualified ``name`` exists."""
    if name in seen:
        return False
    seen = seen | {name}
    parts = name.split(".")
    modules = index()
    for cut in range(len(parts), 0, -1):
        prefix = ".".join(parts[:cut])
        if prefix in modules:
            return _resolve_in(modules[prefix], parts[cut:], seen)
    if parts[0] in PACKAGES or parts[0] in ("bench", "scripts"):
        return False
    return _external(parts)


def _resolve_in(module: ModuleInfo, rest: list[str], seen: frozenset[str]) -> bool:
    if not rest:
        return True
    kind = module.names.get(rest[0])
    if kind is None:
        return False
    if kind.startswith("import:"):
        return resolve(".".join([kind.removeprefix("import:"), *rest[1:]]), seen)
    if kind == "class":
        return _class_has(module, module.classes[rest[0]], rest[1:], seen)
    return len(rest) == 1 or kind == "value"


def _class_has(module: ModuleInfo, cls: ClassInfo, rest: list[str], seen: frozenset) -> bool:
    if not rest or rest[0] in cls.members:
        return True
    for base in cls.bases:
        head = base.partition("[")[0]  # Generic[T]: Generic
        parts = head.split(".")
        kind = module.names.get(parts[0], "")
        if kind == "class" and len(parts) == 1:
            if _class_has(module, module.classes[parts[0]], rest, seen):
                return True
        elif kind.startswith("import:"):
            if resolve(".".join([kind.removeprefix("import:"), *parts[1:], rest[0]]), seen):
                return True
        elif _external(["builtins", head, rest[0]]):
            return True
    return False


@cache
def qualified_names() -> frozenset[str]:
    """Every module, top-level name and class member of the product, fully qualified."""
    names = set()
    for module in index().values():
        names.add(module.name)
        names.update(f"{module.name}.{name}" for name in module.names)
        for cls, info in module.classes.items():
            names.update(f"{module.name}.{cls}.{member}" for member in info.members)
    return frozenset(names)


def resolve_in_scope(target: str, module: ModuleInfo | None, cls: str | None) -> bool:
    """Whether ``target`` names something as seen from ``module`` (and its class ``cls``):
    in the class, the module, the module's packages, or as a fully qualified name; a target
    with a leading dot also as the end of any qualified name (as Sphinx searches it)."""
    name = target.lstrip(".")
    candidates = []
    if module is not None:
        if cls is not None:
            candidates.append(f"{module.name}.{cls}.{name}")
        candidates.append(f"{module.name}.{name}")
        package = module.name if module.package else module.name.rpartition(".")[0]
        while package:
            candidates.append(f"{package}.{name}")
            package = package.rpartition(".")[0]
    candidates.append(name)
    if any(resolve(candidate) for candidate in candidates):
        return True
    return target.startswith(".") and any(q.endswith(f".{name}") for q in qualified_names())


# --------------------------------------------------------------------------- the texts
@dataclass
class Text:
    where: str  # path:line
    text: str
    module: ModuleInfo | None = None
    cls: str | None = None


def _class_at(module: ModuleInfo, line: int) -> str | None:
    inside = [(last - first, name) for first, last, name in module.spans if first <= line <= last]
    return min(inside)[1] if inside else None


def python_texts(path: Path) -> Iterator[Text]:
    """The docstrings (every string statement) and comments of a Python file."""
    source = path.read_text(encoding="utf-8")
    rel = path.relative_to(ROOT)
    module = index().get(module_name(path))
    assert module is not None, path
    for node in ast.walk(parse(path)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            cls = _class_at(module, node.lineno)
            yield Text(f"{rel}:{node.lineno}", node.value.value, module, cls)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            line = token.start[0]
            yield Text(f"{rel}:{line}", token.string, module, _class_at(module, line))


def shell_texts(path: Path) -> Iterator[Text]:
    rel = path.relative_to(ROOT)
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if "#" in line:
            yield Text(f"{rel}:{number}", line[line.index("#") :])


def doc_texts(path: Path) -> Iterator[Text]:
    rel = path.relative_to(ROOT)
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        yield Text(f"{rel}:{number}", line)


def code_files() -> list[Path]:
    return sorted(
        path
        for tree in CODE_TREES
        for path in (ROOT / tree).rglob("*")
        if path.is_file() and (path.suffix == ".py" or (tree == "scripts" and not path.suffix))
    )


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def all_texts() -> Iterator[Text]:
    for path in code_files():
        yield from python_texts(path) if path.suffix == ".py" else shell_texts(path)
    for path in doc_files():
        yield from doc_texts(path)


# --------------------------------------------------------------------------- references
ROLE = re.compile(r":(?:mod|func|class|meth|attr|data|exc|obj|const):`([^`]+)`")
PATH = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)+[\w-]+(?:\.(?:py|md|toml|jsonl|json|txt|sh|cfg|ini|css|js)(?![\w-]))?)"
    r"(?::([A-Za-z_][\w.]*))?"
)
BARE_FILE = re.compile(r"(?<![\w/.-])(\w+\.py):([A-Za-z_][\w.]*)")
DOTTED = re.compile(r"(?<![\w.`:])`{1,2}([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(\))?`{1,2}")
FILE_SUFFIXES = {"py", "md", "json", "jsonl", "txt", "toml", "cfg", "ini", "log", "yml", "sh"}


@cache
def product_dirs() -> set[str]:
    """The directory names inside the packages (``environments``, ``setup``, ``report``...):
    a path may start with one (``setup/plan.py``)."""
    return {
        path.name
        for package in PACKAGES
        for path in (ROOT / package).rglob("*")
        if path.is_dir() and path.name != "__pycache__"
    }


def _path_target(path: str, in_docs: bool) -> Path | None:
    """The file or directory ``path`` names, None when it is no reference to the product's
    (an example path; a ``tests/`` path but for a test module of ours, and any in docs/,
    which describe the instances' tests)."""
    first = path.split("/")[0]
    if first == "tests" and (in_docs or not re.fullmatch(r"tests/(test_\w+|conftest)\.py", path)):
        return None  # an instance's tests (tests/runtests.py), or an example (tests/x.py)
    if first in TOP_DIRS:
        return ROOT / path
    if first in product_dirs():
        matches = [
            p
            for package in PACKAGES
            for p in (ROOT / package).rglob(Path(path).name)
            if str(p.relative_to(ROOT)).endswith("/" + path)
        ]
        if matches:
            return matches[0]
        # a file of the product by its path inside a package; else an example (data/x)
        return ROOT / "missing" / path if path.endswith(".py") else None
    return None


def broken_path(path: str, name: str | None, in_docs: bool = False) -> str | None:
    """Why the path reference (and its ``:name``) is broken, or None."""
    if re.search(r"(^|/)[A-Z][A-Z_]*(\.|/|$)", path):
        return None  # a pattern: NAME stands for any name (bench/NAME.py)
    target = _path_target(path.rstrip("/"), in_docs)
    if target is None:
        return None
    if not target.exists() and in_docs and (ROOT / "docs" / path).exists():
        return None  # a file of the documentation, named from docs/ (a snippet it includes)
    if not target.exists():
        return f"no file {path}"
    if name is not None and target.suffix == ".py":
        if not _resolve_in(read_module(target), name.split("."), frozenset()):
            return f"{path} defines no {name}"
    return None


def broken_bare_file(filename: str, name: str) -> str | None:
    """Why ``filename:name`` is broken (no module of the product by that file name defines
    ``name``), or None; a file name no module has is an example (``setup.py:setup``)."""
    modules = [
        m for m in index().values() if m.path.name == filename and m.name.split(".")[0] in PACKAGES
    ]
    if modules and not any(_resolve_in(m, name.split("."), frozenset()) for m in modules):
        return f"no {filename} defines {name}"
    return None


def broken_dotted(name: str, text: Text) -> str | None:
    """Why the backticked dotted name is broken, or None when it resolves or is no reference
    to code (a file name, an attribute of a value)."""
    parts = name.split(".")
    if parts[0] in PACKAGES:
        return None if resolve(name) else f"no {name}"
    if text.module is None or parts[-1] in FILE_SUFFIXES:
        return None
    kind = text.module.names.get(parts[0], "")
    ours = kind.startswith("import:") and kind.removeprefix("import:").split(".")[0] in PACKAGES
    if (ours or kind == "class") and not resolve_in_scope(name, text.module, None):
        return f"no {name}"
    return None


def broken_references(text: Text) -> Iterator[str]:
    for match in ROLE.finditer(text.text):
        target = match[1].strip().lstrip("~!")
        if "<" in target:
            target = target.split("<", 1)[1].rstrip(">")
        target = re.sub(r"\s+", "", target).removesuffix("()")
        if not resolve_in_scope(target, text.module, text.cls):
            yield f"{text.where}: {match[0]} resolves to nothing"
    for match in PATH.finditer(text.text):
        why = broken_path(match[1], match[2], in_docs=text.where.startswith("docs/"))
        if why:
            yield f"{text.where}: {match[0]}: {why}"
    for match in BARE_FILE.finditer(text.text):
        why = broken_bare_file(match[1], match[2])
        if why:
            yield f"{text.where}: {match[0]}: {why}"
    for match in DOTTED.finditer(text.text):
        why = broken_dotted(match[1], text)
        if why:
            yield f"{text.where}: {match[0]}: {why}"


def test_every_cross_reference_resolves() -> None:
    broken = [line for text in all_texts() for line in broken_references(text)]
    assert not broken, "broken references:\n" + "\n".join(broken)


# --------------------------------------------------------------------------- the checker's own
def _broken_in(text: str, module: str = "orchestrator.sandbox.protocol") -> list[str]:
    return list(broken_references(Text("here", text, index()[module])))


def test_the_resolver_finds_what_exists() -> None:
    assert (
        _broken_in(
            ":class:`Sandbox` and :meth:`SandboxBackend.keep`, :mod:`.docker`, "
            ":class:`.errors.Unsupported`, :func:`orchestrator.sandbox.factory.backend_from`, "
            ":class:`pathlib.Path`, orchestrator/sandbox/local.py:LocalBackend.open_shell, "
            "sandbox/docker/backend.py, ``orchestrator.sandbox.models.Limits.disk``, "
            "``Sandbox.exec``, local.py:LocalBackend, setup.py:setup (an example), scripts/test "
            "and docs/validation.md"
        )
        == []
    )


def test_the_resolver_names_each_broken_reference() -> None:
    assert _broken_in(
        ":class:`Sandboxes`, :meth:`SandboxBackend.kept`, :mod:`.dockers`, "
        "orchestrator/sandbox/nowhere.py, sandbox/local.py:LocalBackend.close_shell, "
        "``orchestrator.sandbox.models.Limits.disks``, ``Sandbox.execute``, local.py:Local, "
        "a/b.py and src/_pytest/nodes.py (examples, no references)"
    ) == [
        "here: :class:`Sandboxes` resolves to nothing",
        "here: :meth:`SandboxBackend.kept` resolves to nothing",
        "here: :mod:`.dockers` resolves to nothing",
        "here: orchestrator/sandbox/nowhere.py: no file orchestrator/sandbox/nowhere.py",
        "here: sandbox/local.py:LocalBackend.close_shell: sandbox/local.py defines no "
        "LocalBackend.close_shell",
        "here: local.py:Local: no local.py defines Local",
        "here: ``orchestrator.sandbox.models.Limits.disks``: no "
        "orchestrator.sandbox.models.Limits.disks",
        "here: ``Sandbox.execute``: no Sandbox.execute",
    ]


# --------------------------------------------------------------------------- issue numbers
ISSUE = re.compile(
    r"(?<![\w&#/'\"-])#\d{1,3}\b(?![\w-])"  # #31 (not a colour such as #666 in CSS: see below)
    r"|\bissues? #?\d+\b"  # issue 24, issues 10 and 12
    r"|\bPR #?\d+\b",
    re.IGNORECASE,
)
# what looks like one and is not: a CSS colour (``color: #666``), patch's ``Hunk #1``
NOT_ISSUES = re.compile(
    r"(color|background|border)[\w-]*\s*:[^;]*#\d{3}\b|Hunk #\d+", re.IGNORECASE
)


def issue_numbers(text: str) -> list[str]:
    """The issue numbers ``text`` cites."""
    found = []
    for line in text.splitlines():
        line = NOT_ISSUES.sub("", line)
        found += [m[0] for m in ISSUE.finditer(line)]
    return found


def test_the_code_and_docs_cite_no_issue_numbers() -> None:
    files = [
        *code_files(),
        # the tests (but for this one, whose examples are issue numbers)
        *(
            p
            for p in (ROOT / "tests").rglob("*.py")
            if "fixtures" not in p.parts and p != Path(__file__).resolve()
        ),
        *doc_files(),
    ]
    cited = [
        f"{path.relative_to(ROOT)}:{number}: {found}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if (found := issue_numbers(line))
    ]
    assert not cited, "state the rule instead:\n" + "\n".join(cited)


@pytest.mark.parametrize(
    ("text", "cited"),
    [
        ("the reinstall (#31) keeps it", ["#31"]),
        ("# issue 24: the forgery", ["issue 24"]),
        ("see Issue #7 and PR 12", ["Issue #7", "PR 12"]),
        (".muted { color: #666; } x = 1  # noqa: E501", []),
        ("Hunk #1 of a patch, #fff, page#12, a 6 issue run, #7", ["#7"]),
    ],
)
def test_issue_numbers_are_found_and_colours_are_not(text: str, cited: list[str]) -> None:
    assert issue_numbers(text) == cited
