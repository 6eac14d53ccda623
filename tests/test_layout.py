"""The product's shape: only the Docker backend of the sandbox (one package) imports ``docker``."""

from __future__ import annotations

import ast
from pathlib import Path

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
