"""The in-container contract has one home, ``sandbox_tools/contract.py``: no other module of
the host, of the in-container programs, of the benchmarks or of the recipes' generator spells
a container path of its own, and the bundled recipes (data the generator wrote) spell only
paths under the contract's."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import sandbox_tools.contract as contract

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / "sandbox_tools" / "contract.py"
# a container path of the contract, as a string literal would spell it
SPELLED = re.compile(r"(?<![\w.])(/testbed|/opt/swe|/tmp/\.swe-)")


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes (they may name the paths: they explain them)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.add(id(value))
    return found


def spelled_paths(path: Path) -> list[str]:
    """``file:line: literal`` for each string literal of ``path`` that spells a contract path."""
    tree = ast.parse(path.read_text(), str(path))
    docs = _docstrings(tree)
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.value[:60]!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and SPELLED.search(node.value)
    ]


def test_no_module_but_the_contract_spells_a_container_path():
    sources = [
        p
        for d in ("orchestrator", "sandbox_tools", "bench")
        for p in sorted((ROOT / d).rglob("*.py"))
        if p != HOME
    ]
    sources.append(ROOT / "scripts" / "make_recipes.py")
    offenders = [line for p in sources for line in spelled_paths(p)]
    assert not offenders, "use sandbox_tools.contract instead:\n" + "\n".join(offenders)


def contract_paths() -> list[str]:
    """The container paths the contract names (its constants that are absolute paths)."""
    return [
        value
        for name, value in vars(contract).items()
        if name.isupper() and isinstance(value, str) and value.startswith("/")
    ]


# a container path as data spells it: up to a quote, a space or a shell operator
SPELLED_PATH = re.compile(SPELLED.pattern + r"[^\s\"';&|)]*")


def paths_outside_the_contract(path: Path) -> list[str]:
    """``file: key: path`` for each container path in the JSON file ``path``'s strings that is
    not one of the contract's paths or under one."""
    known = contract_paths()
    offenders = []

    def walk(value: object, key: str) -> None:
        if isinstance(value, dict):
            for name, item in value.items():
                walk(item, str(name))
        elif isinstance(value, list):
            for item in value:
                walk(item, key)
        elif isinstance(value, str):
            for match in SPELLED_PATH.finditer(value):
                spelled = match.group(0)
                if not any(spelled == p or spelled.startswith(p + "/") for p in known):
                    offenders.append(f"{path.relative_to(ROOT)}: {key}: {spelled}")

    walk(json.loads(path.read_text()), "")
    return offenders


def test_the_bundled_recipes_spell_only_the_contracts_paths():
    """scripts/make_recipes.py writes them with the contract's paths (its fixes: the venv, the
    services, the tool's directory); the specs' own lines name the repository (TESTBED).
    A contract path moved makes this fail until the recipes are made again."""
    recipes = ROOT / "orchestrator" / "data" / "recipes.json"
    assert SPELLED_PATH.search(recipes.read_text())  # the check has paths to look at
    offenders = paths_outside_the_contract(recipes)
    assert not offenders, "run scripts/make_recipes.py again:\n" + "\n".join(offenders)


def test_the_data_check_finds_a_path_outside_the_contract(tmp_path):
    data = tmp_path / "r.json"
    data.write_text(json.dumps({"a": [f"cd {contract.VENV}/lib", "cp x /opt/swe2/y"]}))
    found = _relative(paths_outside_the_contract, data)
    assert found == ["r.json: a: /opt/swe2/y"]


def test_the_check_finds_a_spelled_path(tmp_path):
    """The check above can fail: a module with its own ``/testbed`` is found."""
    module = tmp_path / "m.py"
    module.write_text('"""Works in /testbed (a docstring may say so)."""\nWORKDIR = "/testbed"\n')
    assert [line.split(": ", 1)[1] for line in _relative(spelled_paths, module)] == ["'/testbed'"]


def _relative(check, path: Path) -> list[str]:
    global ROOT
    saved, ROOT = ROOT, path.parent
    try:
        return check(path)
    finally:
        ROOT = saved


def test_the_contract_is_stdlib_only_constants():
    """It is copied beside the in-container programs, which run on any Python: no import."""
    tree = ast.parse(HOME.read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert contract.ACTIVATE.startswith(contract.SWE_DIR + "/")
    assert contract.TESTBED == "/testbed"
