"""The values a parametrized test id runs with: ``test_x[in2-out2]`` is the case of
``@pytest.mark.parametrize("a, expected", [...])`` whose id pytest makes ``in2-out2`` (or
that ``ids=``/``pytest.param(id=...)`` names). Read from the decorator's literal list, so an
expected value given there can be changed for that one case. Pure."""

from __future__ import annotations

import ast

from orchestrator.grading.log_parsers import is_truncated


def case_values(
    function: ast.FunctionDef | ast.AsyncFunctionDef, name: str, module: ast.Module | None = None
) -> dict[str, ast.expr]:
    """Parameter name -> the source node of its value in the case ``name``'s ``[...]`` runs;
    only for decorators whose case the id names unambiguously. The cases may be a list or a
    dict's ``.values()`` that ``module`` assigns at its top level."""
    if "[" not in name:
        return {}
    truncated = is_truncated(name)
    label = name.split("[", 1)[1]
    label = label if truncated else label[:-1]
    out: dict[str, ast.expr] = {}
    for decorator in function.decorator_list:
        cases = _cases(decorator, _module_values(module))
        if not cases:
            continue
        ids = [case_id for case_id, _ in cases]
        hits = [
            values
            for case_id, values in cases
            if ids.count(case_id) == 1 and _occurs(case_id, label, truncated=truncated)
        ]
        if len(hits) == 1:
            out.update(hits[0])
    return out


def _occurs(case_id: str, label: str, *, truncated: bool) -> bool:
    """``case_id`` is one dash-separated stretch of ``label`` (where it was cut, a prefix)."""
    starts = [0] + [i + 1 for i, char in enumerate(label) if char == "-"]
    for start in starts:
        end = start + len(case_id)
        if label[start:end] == case_id and (end == len(label) or label[end] == "-"):
            return True
        if truncated and start < len(label) and case_id.startswith(label[start:]):
            return True
    return False


def _module_values(module: ast.Module | None) -> dict[str, ast.expr]:
    """The names a module assigns once at its top level, and their values."""
    found: dict[str, list[ast.expr]] = {}
    for node in module.body if module is not None else []:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            if isinstance(target := node.targets[0], ast.Name):
                found.setdefault(target.id, []).append(node.value)
    return {name: values[0] for name, values in found.items() if len(values) == 1}


def _written_out(node: ast.expr | None, module_values: dict[str, ast.expr]) -> ast.expr | None:
    """The list of cases as written: itself, a module-level name's list, or the values of a
    module-level dict (``compound_models.values()``)."""
    if isinstance(node, ast.Name):
        return module_values.get(node.id)
    if (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr == "values" and not node.args
        and isinstance(node.func.value, ast.Name)
        and isinstance(table := module_values.get(node.func.value.id), ast.Dict)
    ):  # fmt: skip
        return ast.List(elts=list(table.values), ctx=ast.Load())
    return node


def _cases(
    decorator: ast.expr, module_values: dict[str, ast.expr]
) -> list[tuple[str, dict[str, ast.expr]]]:
    """(id, argument name -> value node) of each case of a ``parametrize`` decorator whose
    names and values are written out; [] for any other."""
    if not (isinstance(decorator, ast.Call) and _name(decorator.func) == "parametrize"):
        return []
    arguments = {k.arg: k.value for k in decorator.keywords if k.arg}
    positional = list(decorator.args)
    names_node = positional[0] if positional else arguments.get("argnames")
    values_node = _written_out(
        positional[1] if len(positional) > 1 else arguments.get("argvalues"), module_values
    )
    names = _argnames(names_node)
    if not names or not isinstance(values_node, ast.List | ast.Tuple):
        return []
    given_ids = _given_ids(arguments.get("ids"), len(values_node.elts))
    if given_ids is None:
        return []
    out = []
    for index, element in enumerate(values_node.elts):
        explicit, values = _case(element, len(names))
        if values is None:
            return []
        case_id = given_ids[index] if given_ids else explicit
        if case_id is None:
            case_id = "-".join(_value_id(v, n, index) for v, n in zip(values, names, strict=True))
        out.append((case_id, dict(zip(names, values, strict=True))))
    return out


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _argnames(node: ast.expr | None) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [part.strip() for part in node.value.split(",") if part.strip()]
    if isinstance(node, ast.List | ast.Tuple):
        names = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        return [n for n in names if isinstance(n, str)] if len(names) == len(node.elts) else []
    return []


def _given_ids(node: ast.expr | None, count: int) -> list[str | None] | None:
    """``ids=[...]`` written out: its strings ([] without ``ids``); None when they cannot be
    read (a function, a generator)."""
    if node is None:
        return []
    if not isinstance(node, ast.List | ast.Tuple) or len(node.elts) != count:
        return None
    ids: list[str | None] = []
    for element in node.elts:
        if isinstance(element, ast.Constant) and isinstance(element.value, str | type(None)):
            ids.append(element.value)
        else:
            return None
    return ids


def _case(element: ast.expr, count: int) -> tuple[str | None, list[ast.expr] | None]:
    """A case's explicit id (``pytest.param(..., id='x')``) and its value nodes."""
    explicit = None
    if isinstance(element, ast.Call) and _name(element.func) == "param":
        for keyword in element.keywords:
            if keyword.arg == "id" and isinstance(keyword.value, ast.Constant):
                explicit = keyword.value.value if isinstance(keyword.value.value, str) else None
        values: list[ast.expr] = list(element.args)
    elif count == 1:
        values = [element]
    elif isinstance(element, ast.Tuple | ast.List):
        values = list(element.elts)
    else:
        return None, None
    return explicit, values if len(values) == count else None


def _value_id(node: ast.expr, argname: str, index: int) -> str:
    """pytest's id of one value: a string, number, bool or None as itself (non-ASCII escaped),
    anything else the argument name and the case's index."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return f"{argname}{index}"
    if isinstance(value, str | bytes):
        text = value.decode("ascii", "backslashreplace") if isinstance(value, bytes) else value
        escaped = text.encode("unicode_escape").decode("ascii")
        return escaped if isinstance(value, str) else text
    if value is None or isinstance(value, bool | int | float | complex):
        return str(value)
    return f"{argname}{index}"
