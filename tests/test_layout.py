"""The product's shape: only the Docker backend of the sandbox (one package) imports ``docker``;
complexity (ruff's rules), not size, bounds a function; no import cycle, none hidden in a
function and none ignored by the import contracts."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("orchestrator", "sandbox_tools")
DOCKER_BACKEND = Path("orchestrator/sandbox/docker")


def imported_modules(path: Path) -> set[str]:
    """The top-level names of every module ``path`` imports (in functions too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_only_the_docker_backend_imports_docker() -> None:
    importers = sorted(
        str(path.relative_to(ROOT))
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        if "docker" in imported_modules(path)
    )
    outside = [path for path in importers if Path(path).parent != DOCKER_BACKEND]
    assert importers and outside == []


def test_the_import_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from docker.errors import NotFound\n    import docker.types\n")
    assert imported_modules(module) == {"docker"}


def runs_the_docker_command(path: Path) -> bool:
    """Whether ``path`` has an argv list starting with ``docker`` (the command-line client)."""
    return any(
        isinstance(node, ast.List)
        and node.elts
        and isinstance(node.elts[0], ast.Constant)
        and node.elts[0].value == "docker"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    )


def test_only_the_docker_backend_runs_the_docker_command() -> None:
    # `inspect` opens its shell through the backend (SandboxBackend.open_shell)
    runners = sorted(
        str(path.relative_to(ROOT))
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        if runs_the_docker_command(path)
    )
    assert runners == ["orchestrator/sandbox/docker/backend.py"]


def _imports_connect(path: Path) -> bool:
    """Whether ``path`` imports ``connect`` from a sandbox backend (in functions too)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if (
            isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith("orchestrator.sandbox.")
            and any(alias.name == "connect" for alias in node.names)
        ):
            return True
    return False


def test_only_the_backend_factory_imports_a_backends_connect() -> None:
    importers = sorted(
        str(path.relative_to(ROOT))
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        if _imports_connect(path) and DOCKER_BACKEND not in path.relative_to(ROOT).parents
    )
    assert importers == ["orchestrator/sandbox/factory.py"]


COMPLEXITY_RULES = {"C901", "PLR0911", "PLR0912", "PLR0915"}
NOQA = re.compile(r"#\s*noqa:\s*((?:[A-Z]+\d+(?:,\s*)?)+)(.*)$")


def unexplained_complexity_noqas(paths: list[Path]) -> list[str]:
    """The ``noqa`` of a complexity rule with no reason: none after its codes on the line,
    and no comment on the line above."""
    found = []
    for path in paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            match = NOQA.search(line)
            if not match or not COMPLEXITY_RULES & set(re.split(r",\s*", match[1].strip())):
                continue
            above = lines[number - 2].strip() if number > 1 else ""
            if not match[2].strip() and not above.startswith("#"):
                found.append(f"{path.name}:{number}")
    return found


def test_complexity_not_size_bounds_a_function() -> None:
    # ruff's complexity rules with their thresholds; each exception says why it is one job
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    lint = config["tool"]["ruff"]["lint"]
    assert COMPLEXITY_RULES <= set(lint["select"])
    assert lint["mccabe"]["max-complexity"] and lint["pylint"]["max-returns"]
    paths = [p for d in (*PRODUCT, "tests", "bench") for p in (ROOT / d).rglob("*.py")]
    assert unexplained_complexity_noqas(paths) == []


def test_the_noqa_check_wants_a_reason(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "def a():  # noqa: C901\n"
        "    pass\n"
        "def b():  # noqa: PLR0911, C901 a rule table\n"
        "    pass\n"
        "# one return per rule\n"
        "def c():  # noqa: PLR0912\n"
        "x = 1  # noqa: E501\n"
    )
    assert unexplained_complexity_noqas([tmp_path / "m.py"]) == ["m.py:1"]


def import_cycles(package: str) -> list[tuple[str, ...]]:
    """The import cycles between the modules of ``package`` (grimp's graph, so imports inside
    functions and under TYPE_CHECKING count): for each import ``a -> b`` that closes one, the
    shortest chain ``a -> b -> ... -> a``."""
    graph = grimp.build_graph(package, cache_dir=None)
    found = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                found.add((importer, *back))
    return sorted(found)


def test_no_module_imports_itself_through_others() -> None:
    # no function-level import hides a cycle (the `acyclic` contract checks siblings)
    assert import_cycles("orchestrator") == []


def test_the_cycle_check_sees_a_cycle_hidden_in_a_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cyc" / "sub").mkdir(parents=True)
    for init in (tmp_path / "cyc" / "__init__.py", tmp_path / "cyc" / "sub" / "__init__.py"):
        init.write_text("")
    (tmp_path / "cyc" / "a.py").write_text("from cyc.sub import b\n")
    (tmp_path / "cyc" / "sub" / "b.py").write_text("def f():\n    from cyc import a\n")
    (tmp_path / "cyc" / "c.py").write_text("from cyc import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles("cyc") == [
        ("cyc.a", "cyc.sub.b", "cyc.a"),
        ("cyc.sub.b", "cyc.a", "cyc.sub.b"),
    ]


def test_the_import_contracts_ignore_no_import() -> None:
    # an ignored import hides an upward import or a cycle: remove its cause instead
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    assert {c["id"] for c in contracts} >= {"layers", "acyclic"}
    assert [c["id"] for c in contracts if c.get("ignore_imports")] == []
