"""What a repository's packaging files say, read as data (pure functions of their text):
``pyproject.toml`` (``tomllib``: its project, its PEP 735 dependency groups), ``setup.cfg``
and ``tox.ini`` (``configparser``), ``setup.py`` (``ast``: its ``setup(...)`` call's
literal arguments and the module-level literals they name, dictionaries and lists built
up with subscripts, ``+``, ``extend`` and ``update`` included, never executed),
requirements files, CI workflows and ``.travis.yml`` (YAML). What a reader meets and
cannot read as data is named in :attr:`Packaging.unread`."""

from __future__ import annotations

import ast
import configparser
import re
import tomllib
from collections.abc import Callable, Iterator
from typing import Any

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from pydantic import BaseModel, Field

from orchestrator.setup.infer.setup_py_imports import build_imports

Reader = Callable[[str], str | None]


class Packaging(BaseModel):
    """The facts the inference uses, each from the files named in ``sources``."""

    name: str = ""
    python_requires: str = ""
    declared_pythons: list[str] = Field(default_factory=list)  # classifiers, tox, CI: "3.9"
    install_requires: list[str] = Field(default_factory=list)
    extras: dict[str, list[str]] = Field(default_factory=dict)
    # PEP 735 ``[dependency-groups]``, includes resolved
    groups: dict[str, list[str]] = Field(default_factory=dict)
    # what tox's test environment installs the project with (``extras``) and beside it
    # (``dependency_groups``)
    tox_extras: list[str] = Field(default_factory=list)
    tox_groups: list[str] = Field(default_factory=list)
    tests_require: list[str] = Field(default_factory=list)
    build_requires: list[str] = Field(default_factory=list)
    build_backend: str = ""
    setup_imports: list[str] = Field(default_factory=list)  # third-party modules setup.py imports
    pytest_addopts: str = ""
    pytest_configured: bool = False
    sources: list[str] = Field(default_factory=list)
    unread: list[str] = Field(default_factory=list)  # what was met and not read, with why


# --------------------------------------------------------------------------- requirements


def requirement_name(text: str) -> str:
    """The canonical distribution name of a requirement ("" when it is not one)."""
    try:
        return canonicalize_name(Requirement(text).name)
    except InvalidRequirement:
        return ""


def requirements_file(path: str, read: Reader, seen: set[str] | None = None) -> list[str]:
    """The requirements a requirements file lists, following ``-r`` includes inside the
    repository; editable, URL and option lines (``-e .``, ``git+https://``, ``-c``, ``-i``)
    are left out (the project itself is installed on its own; nothing but the index is
    reachable)."""
    seen = set() if seen is None else seen
    if path in seen:
        return []
    seen.add(path)
    text = read(path)
    if text is None:
        return []
    folder = path.rpartition("/")[0]
    found: list[str] = []
    for raw in _logical_lines(text):
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        include = re.match(r"^(-r|--requirement)[\s=]+(\S+)$", line)
        if include:
            target = include.group(2)
            found += requirements_file(_join(folder, target), read, seen)
            continue
        if not line or line.startswith("-") or "://" in line or line.startswith("."):
            continue
        line = re.sub(r"\s+--hash=\S+", "", line)
        if requirement_name(line):
            found.append(line)
    return found


def _logical_lines(text: str) -> Iterator[str]:
    """Lines with backslash continuations joined."""
    yield from re.sub(r"\\\r?\n", " ", text).splitlines()


def _join(folder: str, target: str) -> str:
    parts = [p for p in (folder.split("/") if folder else []) + target.split("/") if p != "."]
    out: list[str] = []
    for part in parts:
        if part == ".." and out:
            out.pop()
        elif part != "..":
            out.append(part)
    return "/".join(out)


# --------------------------------------------------------------------------- pyproject.toml


def read_pyproject(text: str, facts: Packaging) -> None:
    """``[project]`` and ``[build-system]`` of a pyproject.toml, and its pytest section."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return
    facts.sources.append("pyproject.toml")
    build = data.get("build-system") or {}
    facts.build_requires = [r for r in build.get("requires", []) if isinstance(r, str)]
    facts.build_backend = str(build.get("build-backend", ""))
    project = data.get("project") or {}
    facts.name = facts.name or str(project.get("name", ""))
    facts.python_requires = facts.python_requires or str(project.get("requires-python", ""))
    facts.install_requires += [r for r in project.get("dependencies", []) if isinstance(r, str)]
    for extra, reqs in (project.get("optional-dependencies") or {}).items():
        facts.extras.setdefault(extra, []).extend(r for r in reqs if isinstance(r, str))
    facts.declared_pythons += classifier_pythons(project.get("classifiers", []))
    groups = data.get("dependency-groups")
    if isinstance(groups, dict):
        facts.groups, unread = dependency_groups(groups)
        facts.unread += unread
    pytest = ((data.get("tool") or {}).get("pytest") or {}).get("ini_options")
    if isinstance(pytest, dict):
        facts.pytest_configured = True
        addopts = pytest.get("addopts", "")
        facts.pytest_addopts = " ".join(addopts) if isinstance(addopts, list) else str(addopts)
    poetry = (data.get("tool") or {}).get("poetry") or {}
    if poetry:
        facts.name = facts.name or str(poetry.get("name", ""))
        python = (poetry.get("dependencies") or {}).get("python")
        if isinstance(python, str) and not facts.python_requires:
            facts.python_requires = _poetry_spec(python)


def dependency_groups(table: dict[str, Any]) -> tuple[dict[str, list[str]], list[str]]:
    """PEP 735 ``[dependency-groups]``: each group's requirements, its ``{include-group =
    "other"}`` entries replaced by the other group's (a cycle or an unknown group is left
    out and named), and what was not read."""
    unread: list[str] = []
    resolved: dict[str, list[str]] = {}

    def resolve(name: str, trail: tuple[str, ...]) -> list[str]:
        if name in resolved:
            return resolved[name]
        found: list[str] = []
        for item in table.get(name) or []:
            if isinstance(item, str):
                found.append(item)
            elif isinstance(item, dict) and isinstance(item.get("include-group"), str):
                other = item["include-group"]
                if other in trail or other not in table:
                    why = "a cycle" if other in trail else "no such group"
                    unread.append(
                        f"pyproject.toml dependency group {name}: includes {other} ({why})"
                    )
                    continue
                found += resolve(other, (*trail, other))
            else:
                unread.append(f"pyproject.toml dependency group {name}: entry {item!r}")
        resolved[name] = found
        return found

    for name in table:
        resolve(str(name), (str(name),))
    return resolved, list(dict.fromkeys(unread))


def _poetry_spec(text: str) -> str:
    """Poetry's ``^3.8`` / ``~3.8`` as a PEP 440 specifier (``>=3.8``)."""
    return re.sub(r"[\^~](\d)", r">=\1", text)


def classifier_pythons(classifiers: object) -> list[str]:
    """The ``3.X`` versions the trove classifiers name."""
    if not isinstance(classifiers, list):
        return []
    found = (
        re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", str(c).strip())
        for c in classifiers
    )
    return [m.group(1) for m in found if m]


# --------------------------------------------------------------------------- setup.cfg


def read_setup_cfg(text: str, facts: Packaging) -> None:
    """``[metadata]``, ``[options]``, ``[options.extras_require]`` and pytest's section."""
    config = _ini(text)
    if config is None:
        return
    facts.sources.append("setup.cfg")
    get = _getter(config)
    facts.name = facts.name or get("metadata", "name")
    facts.python_requires = facts.python_requires or get("options", "python_requires")
    facts.install_requires += _listed(get("options", "install_requires"))
    facts.tests_require += _listed(get("options", "tests_require"))
    facts.declared_pythons += classifier_pythons(_listed(get("metadata", "classifiers")))
    if config.has_section("options.extras_require"):
        for extra, value in config.items("options.extras_require", raw=True):
            facts.extras.setdefault(extra, []).extend(_listed(value))
    for section in ("tool:pytest", "pytest"):
        if config.has_section(section):
            facts.pytest_configured = True
            facts.pytest_addopts = facts.pytest_addopts or get(section, "addopts")


def _ini(text: str) -> configparser.RawConfigParser | None:
    config = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        config.read_string(text)
    except configparser.Error:
        return None
    return config


def _getter(config: configparser.RawConfigParser) -> Callable[[str, str], str]:
    def get(section: str, key: str) -> str:
        if config.has_option(section, key):
            return str(config.get(section, key, raw=True)).strip()
        return ""

    return get


def _listed(value: str | list[str]) -> list[str]:
    """A setup.cfg list: one item a line, or separated by ``;`` / ``,`` on one line."""
    if isinstance(value, list):
        return [str(v) for v in value]
    lines = [
        ln.strip() for ln in value.splitlines() if ln.strip() and not ln.strip().startswith("#")
    ]
    if len(lines) == 1 and "\n" not in value.strip() and ";" not in lines[0]:
        lines = (
            [p.strip() for p in lines[0].split(",") if p.strip()] if "==" not in lines[0] else lines
        )
    return lines


# --------------------------------------------------------------------------- setup.py


def read_setup_py(text: str, facts: Packaging, own_modules: set[str]) -> None:
    """The literal arguments of setup.py's ``setup(...)`` call (names bound to literals at
    module level resolved), and the third-party modules the code a build runs imports
    (build requirements of a legacy build, :mod:`.setup_py_imports`). Parsed with ``ast``,
    never run."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    facts.sources.append("setup.py")
    facts.setup_imports = sorted(build_imports(tree, own_modules))
    values = _module_literals(tree)
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        if _called_name(call) != "setup":
            continue
        for keyword in _setup_keywords(call, tree):
            value = _literal(keyword.value, values)
            if value is _UNKNOWN and keyword.arg in _REQUIREMENT_KEYWORDS:
                facts.unread.append(
                    f"setup.py {keyword.arg}: {ast.unparse(keyword.value)[:60]} is computed, "
                    "not a literal"
                )
                continue
            _take_setup_keyword(keyword.arg or "", value, facts)


_REQUIREMENT_KEYWORDS = ("install_requires", "extras_require", "tests_require", "python_requires")


def _setup_keywords(call: ast.Call, tree: ast.Module) -> list[ast.keyword]:
    """A ``setup()`` call's keywords, those of a dictionary it is handed (``setup(**metadata)``
    where ``metadata = dict(name=..., ...)`` or ``{"name": ..., ...}``) included."""
    keywords = [k for k in call.keywords if k.arg]
    handed = {k.value.id for k in call.keywords if k.arg is None and isinstance(k.value, ast.Name)}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        if not (isinstance(target, ast.Name) and target.id in handed):
            continue
        if isinstance(value, ast.Call) and _called_name(value) == "dict":
            keywords += [k for k in value.keywords if k.arg]
        elif isinstance(value, ast.Dict):
            keywords += [
                ast.keyword(arg=k.value, value=v)
                for k, v in zip(value.keys, value.values, strict=True)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            ]
    return keywords


def _take_setup_keyword(name: str, value: Any, facts: Packaging) -> None:  # noqa: C901 - a rule table, one branch a keyword
    """One ``setup()`` keyword into the facts (a rule table)."""
    strings = [str(v) for v in value] if isinstance(value, list | tuple) else []
    if name == "name" and isinstance(value, str):
        facts.name = facts.name or value
    elif name == "python_requires" and isinstance(value, str):
        facts.python_requires = facts.python_requires or value
    elif name == "install_requires":
        facts.install_requires += strings or _listed(value if isinstance(value, str) else "")
    elif name == "tests_require":
        facts.tests_require += strings
    elif name == "classifiers":
        facts.declared_pythons += classifier_pythons(strings)
    elif name == "extras_require" and isinstance(value, dict):
        for extra, reqs in value.items():
            listed = [str(r) for r in reqs] if isinstance(reqs, list | tuple) else []
            facts.extras.setdefault(str(extra), []).extend(listed)


def _called_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


_UNKNOWN = object()


def _module_literals(tree: ast.Module) -> dict[str, Any]:
    """Module-level names bound to literal values (``install_requires = [...]``), as the
    module builds them up: ``EXTRAS["tests"] = EXTRAS["base"] + [...]``, ``x += [...]``,
    ``x.extend([...])`` / ``.append(...)`` / ``.update({...})``, and the same in the body
    of a module-level ``if`` (taken, its ``else`` not: a guard on the Python or the
    platform, whose first branch is the common one)."""
    values: dict[str, Any] = {}
    for node in _module_statements(tree.body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            _bind(node.targets[0], _literal(node.value, values), values)
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
            current = _literal(node.target, values)
            added = _literal(node.value, values)
            if isinstance(current, list) and isinstance(added, list):
                current.extend(added)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            _mutate(node.value, values)
    return values


def _module_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for node in body:
        if isinstance(node, ast.If):
            yield from _module_statements(node.body)
        else:
            yield node


def _bind(target: ast.expr, value: Any, values: dict[str, Any]) -> None:
    """``name = value`` or ``name[key] = value`` (a value not read unbinds the name)."""
    if isinstance(target, ast.Name):
        if value is _UNKNOWN:
            values.pop(target.id, None)
        else:
            values[target.id] = value
    elif isinstance(target, ast.Subscript):
        container, key = _literal(target.value, values), _literal(target.slice, values)
        if isinstance(container, dict) and isinstance(key, str | int):
            if value is _UNKNOWN:
                container.pop(key, None)
            else:
                container[key] = value


def _mutate(call: ast.Call, values: dict[str, Any]) -> None:
    """``x.extend([...])``, ``x.append(...)``, ``x.update({...})`` on a known value."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and len(call.args) == 1):
        return
    target, arg = _literal(func.value, values), _literal(call.args[0], values)
    if arg is _UNKNOWN:
        return
    if isinstance(target, list) and func.attr == "extend" and isinstance(arg, list):
        target.extend(arg)
    elif isinstance(target, list) and func.attr == "append":
        target.append(arg)
    elif isinstance(target, dict) and func.attr == "update" and isinstance(arg, dict):
        target.update(arg)


def _literal(node: ast.AST, values: dict[str, Any]) -> Any:  # noqa: PLR0911 - one return a node type
    """The value of a literal expression, with known names, their subscripts and list ``+``
    (else _UNKNOWN): a name's own value, as Python binds it (``extend`` on it changes it)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values.get(node.id, _UNKNOWN)
    if isinstance(node, ast.Subscript):
        container, key = _literal(node.value, values), _literal(node.slice, values)
        if isinstance(container, dict) and isinstance(key, str | int):
            return container.get(key, _UNKNOWN)
        return _UNKNOWN
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        items = [_literal(e, values) for e in node.elts]
        return [i for i in items if i is not _UNKNOWN]
    if isinstance(node, ast.Dict):
        pairs = (
            (_literal(k, values) if k else _UNKNOWN, _literal(v, values))
            for k, v in zip(node.keys, node.values, strict=True)
        )
        return {k: v for k, v in pairs if k is not _UNKNOWN and v is not _UNKNOWN}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left, values), _literal(node.right, values)
        if isinstance(left, list) and isinstance(right, list):
            return left + right
        if isinstance(left, str) and isinstance(right, str):
            return left + right
    return _UNKNOWN


# --------------------------------------------------------------------------- tox, CI


def read_tox_ini(text: str, facts: Packaging, read: Reader) -> list[str]:
    """tox's envlist (``py39`` -> 3.9), pytest's section, ``[testenv]``'s ``extras`` and
    ``dependency_groups`` (:func:`tox_names`), and its deps (one a line; ``-r`` files
    followed; substitutions skipped, and lines conditional on factors unless they are a
    test environment's, as :func:`for_test_factors` tells)."""
    config = _ini(text)
    if config is None:
        return []
    facts.sources.append("tox.ini")
    get = _getter(config)
    facts.declared_pythons += tox_pythons(get("tox", "envlist") or get("tox", "env_list"))
    if config.has_section("pytest"):
        facts.pytest_configured = True
        facts.pytest_addopts = facts.pytest_addopts or get("pytest", "addopts")
    facts.tox_extras = tox_names(get("testenv", "extras"))
    facts.tox_groups = tox_names(get("testenv", "dependency_groups"))
    deps: list[str] = []
    for line in get("testenv", "deps").splitlines():
        line = line.strip()
        factors, sep, rest = line.partition(":")
        if sep and re.fullmatch(r"[\w,!\-{} ]+", factors) and not rest.startswith("/"):
            if not for_test_factors(factors):
                continue  # only for some of tox's environments (oldest versions, Python 2...)
            line = rest.strip()
        if "{" in line or not line:
            continue
        include = re.match(r"^(-r|--requirement)\s*(\S+)$", line)
        if include:
            deps += requirements_file(include.group(2), read)
        elif not line.startswith("-") and requirement_name(line):
            deps.append(line)
    return deps


# tox factors that mark a test environment (``tests: tests`` in ``dependency_groups``)
TEST_FACTORS = frozenset({"test", "tests", "testing", "unit"})


def tox_names(value: str) -> list[str]:
    """The names a tox setting lists (extras, dependency groups), one a line or separated
    by commas: a substitution's default taken (``{env:EXTRAS:tests}`` -> tests), a line
    conditional on factors kept when they include a test factor (``tests: tests``) or only
    exclude others (``!docs: fast``), left out otherwise (``docs: docs``)."""
    value = re.sub(r"\{env:[^:}]+:([^}]*)\}", r"\1", value)
    found: list[str] = []
    for line in value.splitlines():
        factors, sep, rest = line.partition(":")
        if sep:
            if not for_test_factors(factors):
                continue
            line = rest
        found += [n.strip() for n in line.split(",") if re.fullmatch(r"[\w.\-]+", n.strip())]
    return list(dict.fromkeys(found))


def for_test_factors(factors: str) -> bool:
    """Whether a tox line conditional on ``factors`` (``tests``, ``py38-tests``, ``!docs``)
    is a test environment's: they include a test factor, or only exclude others."""
    named = {f.strip() for f in re.split(r"[,\-]", factors)}
    positive = {f for f in named if not f.startswith("!")}
    negated = {f[1:] for f in named - positive}
    return bool(positive & TEST_FACTORS or not (positive or negated & TEST_FACTORS))


def tox_pythons(envlist: str) -> list[str]:
    """``py37,py38`` / ``py{37,38}-django`` / ``py3.10`` -> ["3.7", "3.8", "3.10"]."""
    expanded: list[str] = []
    for item in re.split(r"[\s,]+(?![^{]*\})", envlist):
        brace = re.match(r"^(.*?)\{([^}]*)\}(.*)$", item)
        if brace:
            expanded += [f"{brace[1]}{part.strip()}{brace[3]}" for part in brace[2].split(",")]
        else:
            expanded.append(item)
    found = []
    for env in expanded:
        match = re.match(r"^py(3)\.?(\d+)\b", env.strip())
        if match:
            found.append(f"3.{match[2]}")
    return found


def ci_pythons(text: str) -> list[str]:
    """The CPython 3 versions a CI file (GitHub workflow, .travis.yml) tests on: every
    ``python-version`` / ``python`` value in it, lists included."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    found: list[str] = []
    for key, value in _walk_yaml(data):
        if key in ("python-version", "python_version", "python", "python-versions"):
            for item in value if isinstance(value, list) else [value]:
                item = "3.10" if item == 3.1 else item  # YAML reads an unquoted 3.10 as 3.1
                match = re.fullmatch(
                    r"(?:cpython-?)?(3\.\d+)(?:\.\d+)?(?:-dev)?", str(item).strip()
                )
                if match:
                    found.append(match.group(1))
    return found


def _walk_yaml(data: object) -> Iterator[tuple[str, object]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield str(key), value
            yield from _walk_yaml(value)
    elif isinstance(data, list):
        for item in data:
            yield from _walk_yaml(item)


def read_noxfile(text: str, facts: Packaging) -> list[str]:
    """A noxfile's sessions: the Pythons of ``@nox.session(python=...)`` and the literal
    requirements its sessions ``session.install(...)`` (not ``-e``/``-r``/paths), parsed
    with ``ast``, never run."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    facts.sources.append("noxfile.py")
    values = _module_literals(tree)
    found: list[str] = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        name = _called_name(call)
        if name == "session":
            for keyword in call.keywords:
                if keyword.arg == "python":
                    value = _literal(keyword.value, values)
                    pythons = value if isinstance(value, list) else [value]
                    facts.declared_pythons += [
                        str(p) for p in pythons if re.fullmatch(r"3\.\d+", str(p))
                    ]
        elif name == "install":
            for arg in call.args:
                value = _literal(arg, values)
                if isinstance(value, str) and not value.startswith(("-", ".")):
                    if requirement_name(value):
                        found.append(value)
    return found


def read_environment_yml(text: str, facts: Packaging) -> list[str]:
    """A conda ``environment.yml``: its Python (``python=3.9``) and its ``pip:``
    requirements (conda's own packages have conda names, often not PyPI's: left out)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    deps = data.get("dependencies") if isinstance(data, dict) else None
    if not isinstance(deps, list):
        return []
    facts.sources.append("environment.yml")
    found: list[str] = []
    for dep in deps:
        if isinstance(dep, str):
            match = re.fullmatch(r"python\s*[=<>~]*=?\s*(3\.\d+)(\.[\d*]+)?", dep.strip())
            if match:
                facts.declared_pythons.append(match.group(1))
        elif isinstance(dep, dict) and isinstance(dep.get("pip"), list):
            found += [p for p in dep["pip"] if isinstance(p, str) and requirement_name(p)]
    return found
