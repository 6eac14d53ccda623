"""Where a test function states an expected value, and the edits that change it: the literal
side of ``assert a == b`` (the right one when both are), the substring of ``assert 'x' in
out``, the expected argument of unittest's, numpy's, xarray's, django's and the projects'
own ``assert*`` helpers, the class and the message of ``pytest.raises`` / ``raises`` /
``assertRaises*`` / ``pytest.warns``, a literal that an ``expected = ...`` assignment in the
same function gives the expected side, the bound of an ordering (``assert f(x) < 0``,
``assertGreater``), the written-out container of ``assert f(x) in ('a', 'b')``, a named
singleton compared with ``is``. Pure but for the draws of :mod:`.natural`: a tree and its
text in, :class:`Edit` out."""

from __future__ import annotations

import ast
import collections
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from orchestrator.grading.twins import mutate
from orchestrator.grading.twins.natural import WORD, Natural

# the assertion helpers whose arguments are (actual, expected[, ...]) or (expected, actual):
# only the first two arguments are values, the rest are messages or tolerances
_TWO_VALUES = re.compile(
    r"^(assert(Equals?|AlmostEquals?|ListEqual|TupleEqual|SetEqual|DictEqual|CountEqual|"
    r"ItemsEqual|SequenceEqual|MultiLineEqual|HTMLEqual|XMLEqual|JSONEqual|XMLNotEqual_|"
    r"QuerysetEqual|QuerySetEqual|Is|Greater|Less|GreaterEqual|LessEqual|DictContainsSubset)|"
    r"assert_(equal|array_equal|allclose|almost_equal|array_almost_equal|"
    r"array_almost_equal_nulp|approx_equal|identical|equal_nan|series_equal|frame_equal|"
    r"index_equal|quantity_allclose|duckarray_equal|duckarray_allclose|array_less|"
    r"array_max_ulp|string_equal|extension_array_equal)|eq_|assert_eq|"
    r"assert_(?!not)\w*_(equal|allclose|close|identical|equiv|equivalent))$"
)
# (a, b) of an ordering helper: the comparison that holds between them
_ORDERING = {"assertGreater": ast.Gt(), "assertGreaterEqual": ast.GtE(), "assertLess": ast.Lt(),
             "assertLessEqual": ast.LtE()}  # fmt: skip
# (member, container): the member is the expected value
_MEMBER_FIRST = {"assertIn", "assertInHTML"}
# (response-or-text, expected, ...)
_SECOND = {"assertContains", "assertRegex", "assertRegexpMatches", "assertRedirects",
           "assertTemplateUsed", "assertStartsWith", "assertEndsWith"}  # fmt: skip
_REGEX_SECOND = {"assertRegex", "assertRegexpMatches"}
_FIRST_COUNT = {"assertNumQueries"}
_RAISES = {"raises", "assertRaises", "assert_raises", "warns", "assertWarns", "assert_warns",
           "assertRaisesMessage", "assertRaisesRegex", "assertRaisesRegexp", "assertWarnsMessage",
           "assertWarnsRegex", "assert_raises_regex"}  # fmt: skip
_MESSAGE_SECOND = {"assertRaisesMessage", "assertWarnsMessage"}
_REGEX_MESSAGE_SECOND = {"assertRaisesRegex", "assertRaisesRegexp", "assertWarnsRegex",
                         "assert_raises_regex"}  # fmt: skip
_NEGATIVE = re.compile(r"Not|not_|False|IsNone|True|_no_|Raises|Warns|raises|warns|Logs|NoLogs")
_FIRST_PATTERNS = {"fnmatch_lines", "re_match_lines", "fnmatch_lines_random",
                   "re_match_lines_random"}  # fmt: skip
# keywords of a helper's call that give what it checks against (``assert_outcomes(passed=1)``,
# pylint's ``_runtest(args, code=0)``)
_EXPECTED_KEYWORD = re.compile(
    r"^(expected\w*|\w*_expected|code|exit_code|returncode|ret|status_code|passed|failed|"
    r"errors|error|skipped|xfailed|xpassed|warnings|deselected|count)$"
)
# a name that says it holds the expected value
_EXPECTED_NAME = re.compile(r"expect|^exp(_|$)|want|desired|correct|^ref|answer|^should", re.I)
_OPPOSITE_METHOD = {
    "assertTrue": "assertFalse", "assertFalse": "assertTrue", "assertIsNone": "assertIsNotNone",
    "assertIsNotNone": "assertIsNone", "assertNotIn": "assertIn", "assertNotEqual": "assertEqual",
    "assertIsNot": "assertIs", "assertNotIsInstance": "assertIsInstance",
    "assertIsInstance": "assertNotIsInstance",
}  # fmt: skip
# a name that says it holds the value under test
_ACTUAL_NAME = re.compile(r"^(actual|result|res|got|out|output|obtained|computed|observed)", re.I)
_REGEX_FUNCS = {"search", "match", "fullmatch", "findall"}
_VALUE_BUILDERS = {"approx", "array", "asarray", "arange", "linspace", "zeros", "ones", "full",
                   "set", "frozenset", "tuple", "list", "dict", "str", "bytes", "bytearray",
                   "int", "float", "complex", "bool", "range", "sympify", "symbols", "Symbol",
                   "date", "datetime", "time", "timedelta", "timezone", "datetime64",
                   "timedelta64", "Decimal", "Fraction", "OrderedDict", "namedtuple", "mark",
                   "sqrt", "exp", "log", "sin", "cos", "tan", "pi", "oo", "Q",
                   "_", "gettext", "dedent", "Path", "PurePath", "PosixPath"}  # fmt: skip
_NUMPY_SCALAR = re.compile(r"^(u?int|float|complex)(8|16|32|64|128)$")
_CONSTRUCTORS = {"set", "frozenset", "tuple", "list", "dict"}


@dataclass(frozen=True)
class Edit:
    """One candidate change: the node's source segment (or the character ``span``) becomes
    ``text``; ``tier`` orders the kinds of site (0: a literal expected side, 1: an exception
    or its message, 2: a constant inside a computed expected expression, 3: an assertion
    turned around, only for a test with nothing else), ``site`` groups the edits of one
    assertion."""

    node: ast.AST
    text: str
    kind: str
    tier: int
    site: int
    span: tuple[int, int] | None = None


class Sites:
    """The candidate edits of one test function (and the functions it defines inside)."""

    def __init__(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, source: Source,
        parameters: Mapping[str, ast.expr] | None = None, natural: Natural | None = None,
    ) -> None:  # fmt: skip
        """``parameters``: the values the test's parametrization gives parameters (only
        those the body reads once: in the assertion, not as an input); ``natural``: draws
        values from the files' own (without it, the fixed edits of :mod:`.mutate`)."""
        self.function = function
        self.source = source
        self.natural = natural
        self._statement: ast.stmt | None = None
        self.edits: list[Edit] = []
        self._site = 0
        self._names = _Assignments(function)
        reads = collections.Counter(n.id for n in _reads(function))
        self._compared_only = _compared_only(function)
        self._parameters = {
            k: v for k, v in (parameters or {}).items()
            if reads[k] == 1 or k in self._compared_only
        }  # fmt: skip
        self._loops = [n for n in _walk_body(function) if isinstance(n, ast.For)]
        self._flips: list[Edit] = []
        for node in _walk_body(function):
            self._visit(node)
        if not self.edits:  # the last resort: an assertion that says the opposite
            self.edits = self._flips

    # ------------------------------------------------------------------ visiting
    def _visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.stmt):
            self._statement = node
        if isinstance(node, ast.Assert):
            self._assertion(node.test)
        elif isinstance(node, ast.Call):
            self._call(node)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            # a helper called for its checks: its keywords that name an expected value
            for keyword in node.value.keywords:
                if (
                    keyword.arg
                    and _EXPECTED_KEYWORD.match(keyword.arg)
                    and not _is_bool(keyword.value)
                ):
                    self._value(self._resolved(keyword.value), tier=2)

    def _assertion(self, test: ast.expr) -> None:
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            for value in test.values:
                self._assertion(value)
            return
        self._flip(test)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, op, right = test.left, test.ops[0], test.comparators[0]
            if isinstance(op, ast.Eq):
                self._expected_of_pair(left, right)
            elif isinstance(op, ast.Is) and _is_bool(right):
                self._value(right, tier=0)
            elif isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value is None:
                self._add([(right, "False")], kind="none", tier=2)
            elif isinstance(op, ast.Is) and mutate.is_named_value(ast.unparse(right)):
                self._value(right, tier=0)
            elif isinstance(op, ast.In):
                if _tier(self._resolved(left)) == 0 or not self._members(self._resolved(right)):
                    self._value(self._resolved(left), tier=0, in_check=True)
            elif isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE):
                self._bound(left, op, right)
            return
        if isinstance(test, ast.Call) and not _negated(test):
            self._truthy_call(test)

    def _class(self, kind: ast.expr) -> None:
        """The class of ``isinstance(x, T)`` / ``assertIsInstance(x, T)``: ``str`` (``bytes``
        for ``str``)."""
        if isinstance(kind, ast.Name | ast.Attribute):
            other = "bytes" if ast.unparse(kind) == "str" else "str"
            self._add([(kind, other)], kind="class", tier=2)

    def _flip(self, test: ast.expr) -> None:
        """The opposite assertion (``assert not x`` -> ``assert x``, ``not in`` -> ``in``,
        ``is not`` -> ``is``, ``!=`` -> ``==``, and back), kept for a test that states no
        value."""
        text = self.source.segment(test)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            operand = self.source.segment(test.operand)
            if isinstance(test.operand, ast.BoolOp | ast.IfExp | ast.Lambda | ast.NamedExpr):
                operand = f"({operand})"  # ``x and not (a or b)``: the parentheses stay
            self._flips.append(Edit(test, operand, "truth", 3, -1 - len(self._flips)))
        elif isinstance(test, ast.Compare) and len(test.ops) == 1:
            start = self.source.span(test.left)[1]
            end = self.source.span(test.comparators[0])[0]
            gap = self.source.text[start:end]
            match = re.search(r"not\s+in|is\s+not|!=|==|\bin\b|\bis\b", gap)
            other = {"!=": "==", "==": "!=", "in": "not in", "is": "is not"}
            if match and not isinstance(test.ops[0], ast.Lt | ast.Gt | ast.LtE | ast.GtE):
                word = re.sub(r"\s+", " ", match.group())
                new = {"not in": "in", "is not": "is"}.get(word) or other[word]
                span = (start + match.start(), start + match.end())
                self._flips.append(Edit(test, new, "truth", 3, -1 - len(self._flips), span))
        elif isinstance(test, ast.Call | ast.Attribute | ast.Name | ast.Subscript):
            self._flips.append(Edit(test, f"not {text}", "truth", 3, -1 - len(self._flips)))

    def _flip_method(self, call: ast.Call, name: str) -> None:
        """``assertTrue`` <-> ``assertFalse``, ``assertIsNone`` <-> ``assertIsNotNone``, ..."""
        other = _OPPOSITE_METHOD.get(name)
        if other is None or not isinstance(call.func, ast.Attribute):
            return
        end = self.source.span(call.func)[1]
        self._flips.append(
            Edit(call, other, "truth", 3, -1 - len(self._flips), (end - len(name), end))
        )

    def _truthy_call(self, test: ast.Call) -> None:
        """``assert isinstance(x, T)``, ``assert a.equals(b)``, ``assert s.startswith('x')``,
        ``assert re.search(r'...', s)``."""
        name = _call_name(test)
        if name == "isinstance" and len(test.args) == 2:
            self._class(test.args[1])
            return
        if name == "equals" and isinstance(test.func, ast.Attribute) and len(test.args) == 1:
            self._expected_of_pair(test.func.value, test.args[0])
            return
        regex = name in _REGEX_FUNCS
        for arg in test.args:
            arg = self._resolved(arg)
            if _tier(arg) == 0 and not _is_bool(arg):
                self._value(arg, tier=2, regex=regex, in_check=True)

    def _expected_of_pair(self, left: ast.expr, right: ast.expr) -> None:
        """The expected one of two compared values: the more literal, the right on a tie; a
        name assigned a literal once in the function stands for that literal."""
        for side in (right, left):  # ``assert_identical(expected, actual)``
            if isinstance(side, ast.Name) and _EXPECTED_NAME.search(side.id):
                resolved = self._resolved(side)
                if resolved is not side:
                    self._value(resolved, tier=min(_tier(resolved), 2))
                    return
        named_left = self._resolved(left)
        left_named, left, right = named_left is not left, named_left, self._resolved(right)
        tl, tr = _tier(left), _tier(right)
        if tr <= 1 and tr <= tl:
            self._value(right, tier=tr)
        elif tl <= 1 or (tl == 2 and tr == 3 and left_named):
            self._value(left, tier=tl)
        elif tr == 2:
            self._value(right, tier=2)

    def _resolved(self, node: ast.expr) -> ast.expr:
        """What stands for ``node``; for ``table[1]``, the element of what stands for
        ``table`` (a list, tuple or dict written out)."""
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            whole = self._resolved_name(node.value)
            if whole is not node.value:
                return _element(whole, node.slice.value) or node
            return node
        return self._resolved_name(node)

    def _resolved_name(self, node: ast.expr) -> ast.expr:
        """What stands for a name: the parametrization's value of a parameter the body reads
        once; the value the last assignment before this use gives a name that holds an
        expected value (read only where values are compared, or named ``expected...``), not
        an input (``expected = [...]``, ``hnf = Matrix(...)``); for ``expected.strip()``, the
        literal of ``expected``."""
        root = node
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
        ):
            root = node.func.value
        if not isinstance(root, ast.Name):
            return node
        if root.id in self._parameters:
            return self._parameters[root.id] if root is node else node
        if root is node and root.id in self._compared_only and (row := self._loop_row(root)):
            return row
        value = self._names.before(root)
        if value is None:
            return node
        tier = _tier(value)
        if _ACTUAL_NAME.search(root.id):
            return node
        named = _EXPECTED_NAME.search(root.id) is not None
        if tier == 0 and (named or root.id in self._compared_only):
            return value
        if root is node and (tier <= 2 and named or tier == 1 and root.id in self._compared_only):
            return value
        return node

    def _loop_row(self, use: ast.Name) -> ast.expr | None:
        """For a loop over a table written out (``for text, result in inputs.items()``, ``for
        q, expected in [(1, 2), ...]``), the first row's value of the loop variable ``use``
        (read only as a compared value: an expected column, not an input)."""
        for loop in self._loops:
            names = loop.target.elts if isinstance(loop.target, ast.Tuple) else [loop.target]
            position = next(
                (i for i, n in enumerate(names) if isinstance(n, ast.Name) and n.id == use.id), None
            )  # fmt: skip
            if position is None or not (loop.lineno <= use.lineno <= (loop.end_lineno or 0)):
                continue
            rows = self._table(loop.iter)
            if not rows:
                return None
            row = rows[0]
            if isinstance(loop.target, ast.Tuple):
                cells = row.elts if isinstance(row, ast.Tuple | ast.List) else []
                return cells[position] if len(cells) == len(names) else None
            return row
        return None

    def _table(self, iterable: ast.expr) -> list[ast.expr]:
        """The rows of a table written out: a list or tuple (of tuples), or a dict's
        ``.items()`` as (key, value) rows; the table may be a name assigned before."""
        items = (
            isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute)
            and iterable.func.attr == "items" and not iterable.args
        )  # fmt: skip
        base = iterable
        if items and isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute):
            base = iterable.func.value
        if isinstance(base, ast.Name):
            base = self._names.before(base) or base
        if items and isinstance(base, ast.Dict):
            pairs = [(k, v) for k, v in zip(base.keys, base.values, strict=True) if k is not None]
            return [ast.Tuple(elts=[k, v], ctx=ast.Load()) for k, v in pairs]
        if not items and isinstance(base, ast.List | ast.Tuple | ast.Set):
            return list(base.elts)
        return []

    def _call(self, call: ast.Call) -> None:  # noqa: C901 one branch per kind of helper, a table
        name = _call_name(call)
        if name is None:
            return
        if name in _RAISES:
            self._raises(call, name)
            return
        if not name.lower().startswith("assert"):
            self._expected_parameters(call)
        self._flip_method(call, name)
        args = [self._resolved(arg) for arg in call.args]
        if name in ("assertTrue", "assert_") and args:
            self._assertion(args[0])
        elif name in _ORDERING and len(args) >= 2:
            self._bound(args[0], _ORDERING[name], args[1])
        elif name == "assertIsInstance" and len(args) >= 2:
            self._class(call.args[1])
        elif name in _MEMBER_FIRST and args:
            self._value(args[0], tier=_literal_tier(args[0]), in_check=True)
        elif name in _SECOND and len(args) >= 2:
            self._value(args[1], tier=_literal_tier(args[1]), regex=name in _REGEX_SECOND,
                        in_check=True)  # fmt: skip
        elif name in _FIRST_PATTERNS and args:
            self._value(args[0], tier=_literal_tier(args[0]), regex=True, in_check=True)
        elif name in _FIRST_COUNT and args:
            self._value(args[0], tier=_literal_tier(args[0]))
        elif _TWO_VALUES.match(name) and len(args) >= 2:
            self._expected_of_pair(call.args[0], call.args[1])
        elif name.lower().startswith(("assert", "check")) and not _NEGATIVE.search(name):
            self._helper(call, args)

    def _helper(self, call: ast.Call, args: list[ast.expr]) -> None:
        """A project's own assertion helper: its expected values come after the value it
        checks (``assert_node(node, [nodes.paragraph, 'text'], refdomain='py')``)."""
        values = [arg for arg in args[1:] if _tier(arg) <= 2] if len(args) > 1 else args
        for arg in values[-1:]:  # the last: before it, the inputs (``check(name, input, ids)``)
            self._value(arg, tier=2)
        for keyword in call.keywords:
            if keyword.arg and _tier(keyword.value) <= 1:
                self._value(self._resolved(keyword.value), tier=2)

    def _expected_parameters(self, call: ast.Call) -> None:
        """A parametrized expected value handed to a checking helper (``verify(rst,
        html_expected)``)."""
        for arg in call.args:
            if isinstance(arg, ast.Name) and arg.id in self._parameters:
                if _EXPECTED_NAME.search(arg.id):
                    self._value(self._parameters[arg.id], tier=1)

    def _raises(self, call: ast.Call, name: str) -> None:
        message: ast.expr | None = None
        regex = True
        for keyword in call.keywords:
            if keyword.arg in ("match", "expected_regex", "expected_message"):
                message = keyword.value
        if name in _MESSAGE_SECOND | _REGEX_MESSAGE_SECOND and len(call.args) >= 2:
            message, regex = call.args[1], name not in _MESSAGE_SECOND
        message = self._resolved(message) if message is not None else None
        if message is not None and _is_string(message):
            self._value(message, tier=1, regex=regex, in_check=True, kind="match")
        if call.args:
            self._exception(call.args[0])

    def _exception(self, node: ast.expr) -> None:
        if isinstance(node, ast.Name):
            last = node.id
        elif isinstance(node, ast.Attribute):
            last = node.attr
        else:
            return
        texts = self.natural.exception_texts(last) if self.natural else mutate.exception_names(last)
        self._add([(node, text) for text in texts], kind="exception", tier=1)

    def _bound(self, left: ast.expr, op: ast.cmpop, right: ast.expr) -> None:
        """``f(x) < 0`` (or ``0 > f(x)``, ``assertLess(f(x), 0)``): bounds stricter by several
        steps (``< -1``, ``< -5``, ...), of which validation keeps those the gold value
        does not meet."""
        bound, stricter_up = right, isinstance(op, ast.Gt | ast.GtE)
        if _number(right) is None:
            bound, stricter_up = left, not stricter_up
        value = _number(bound)
        if value is None or _number(right if bound is left else left) is not None:
            return
        rng = self.natural.rng if self.natural else None
        text = self.source.segment(bound)
        texts = [mutate.bound_text(text, value, step if stricter_up else -step)
                 for step in mutate.bound_steps(value, rng)]  # fmt: skip
        self._add([(bound, t) for t in texts if t is not None], kind="bound", tier=0)

    def _members(self, container: ast.expr) -> bool:
        """``f(x) in ('a', 'b')``: every member of a written-out container changed at once;
        False when the container is not one."""
        if not isinstance(container, ast.List | ast.Tuple | ast.Set) or not container.elts:
            return False
        if len(container.elts) > 4 or not all(isinstance(e, ast.Constant) for e in container.elts):
            return False
        start = self.source.span(container)[0]
        members = {repr(e.value) for e in container.elts if isinstance(e, ast.Constant)}
        texts = []
        for draw in range(2):
            text = self.source.segment(container)
            for element in reversed(container.elts):
                new = [t for t in self._leaf_texts(element, regex=False)
                       if repr(mutate.literal(t)) not in members]  # fmt: skip
                if not new:
                    return False
                a, b = self.source.span(element)
                text = text[: a - start] + new[draw % len(new)] + text[b - start :]
            texts.append(text)
        self._add([(container, t) for t in dict.fromkeys(texts)], kind="member", tier=0)
        return True

    # ------------------------------------------------------------------ values
    def _value(
        self, node: ast.expr, *, tier: int, regex: bool = False, in_check: bool = False,
        kind: str | None = None,
    ) -> None:  # fmt: skip
        """The edits of one expected value: each of its constants changed (the last one
        first: the tail of a list, the value of the last key), a list or tuple one element
        longer, an empty container given an element."""
        edits: list[tuple[ast.AST, str, str]] = []
        empty = mutate.empty_container_texts(self.source.segment(node))
        if self.natural is not None and empty:
            text = self.source.text
            quote = '"' if text.count('"') > text.count("'") else "'"
            empty = self.natural.container_texts(self.source.segment(node), quote) or empty
        if empty and not in_check:
            edits.extend((node, text, "container") for text in empty)
        # changed last: an index (``paths[3:]``, ``node.body[0]``: it picks a part of an
        # input), a dict's key (its value first), an empty string (a word changes better)
        indices = {id(n) for s in ast.walk(node) if isinstance(s, ast.Subscript)
                   for n in ast.walk(s.slice)}  # fmt: skip
        keys = {id(k) for d in ast.walk(node) if isinstance(d, ast.Dict) for k in d.keys if k}
        late = [leaf for leaf in _leaves(node) if id(leaf[0]) in keys or _empty(leaf[0])]
        leaves = [leaf for leaf in _leaves(node) if id(leaf[0]) not in indices and leaf not in late]
        order = leaves[::-1] if len(leaves) <= 2 else [leaves[-1], leaves[0], *leaves[1:-1][::-1]]
        if self.natural is not None:  # any of its values, not the last by rule
            self.natural.rng.shuffle(order)
        order += [leaf for leaf in late if id(leaf[0]) not in indices]
        if not in_check:  # a changed key of ``d['key'] in text`` fails whatever the code
            order += [leaf for leaf in _leaves(node) if id(leaf[0]) in indices]
        for leaf, leaf_kind in order:
            for text in self._leaf_texts(leaf, regex=regex):
                edits.append((leaf, text, kind or leaf_kind))
        if (
            isinstance(node, ast.List | ast.Tuple)
            and node.elts
            and not in_check
            and not (self.natural and edits)
        ):
            last = node.elts[-1]
            if not isinstance(last, ast.Starred):
                edits.append((last, f"{self.source.segment(last)}, {self.source.segment(last)}",
                              "longer"))  # fmt: skip
        if not edits and isinstance(node, ast.Constant) and node.value is None and not in_check:
            edits.append((node, "0", "none"))
        # the first text of each leaf first, the second texts after them
        seen: set[int] = set()
        firsts: list[tuple[ast.AST, str, str]] = []
        rest: list[tuple[ast.AST, str, str]] = []
        for edit in edits:
            (rest if id(edit[0]) in seen else firsts).append(edit)
            seen.add(id(edit[0]))
        self._add([(n, t) for n, t, _ in firsts + rest], kinds=[k for _, _, k in firsts + rest],
                  tier=tier)  # fmt: skip

    def _leaf_texts(self, leaf: ast.expr, *, regex: bool) -> list[str]:
        text = self.source.segment(leaf)
        if self.natural is not None and (drawn := self._natural_texts(leaf, text, regex=regex)):
            return drawn
        if isinstance(leaf, ast.JoinedStr):
            return mutate.string_texts(text, regex=regex)
        if not isinstance(leaf, ast.Constant):
            return mutate.name_texts(ast.unparse(leaf))
        value = leaf.value
        if isinstance(value, bool):
            return mutate.bool_texts(text)
        if isinstance(value, str | bytes):
            return mutate.string_texts(text, regex=regex)
        if isinstance(value, int | float | complex):
            return mutate.number_texts(text, value)
        return []

    def _natural_texts(self, leaf: ast.expr, text: str, *, regex: bool) -> list[str]:
        """Values drawn from the files' own (empty: none fits, the fixed edits then)."""
        assert self.natural is not None
        value = leaf.value if isinstance(leaf, ast.Constant) else None
        if isinstance(leaf, ast.JoinedStr) or isinstance(value, str | bytes):
            return self.natural.string_texts(text, regex=regex, around=self._around(leaf))
        if isinstance(value, int) and not isinstance(value, bool):
            return self.natural.int_texts(text, value)
        if isinstance(value, float):
            return self.natural.float_texts(text, value)
        return []

    def _around(self, leaf: ast.AST) -> list[str]:
        """The words of the other strings of the statement (the call's own arguments)."""
        inside = {id(n) for n in ast.walk(leaf)}
        return [
            word for node in ast.walk(self._statement or leaf)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in inside for word in WORD.findall(node.value)
        ]  # fmt: skip

    def _add(
        self, pairs: list[tuple[ast.AST, str]], *, tier: int, kind: str = "",
        kinds: list[str] | None = None,
    ) -> None:  # fmt: skip
        if not pairs:
            return
        for i, (node, text) in enumerate(pairs):
            self.edits.append(Edit(node, text, kinds[i] if kinds else kind, tier, self._site))
        self._site += 1


class Source:
    """A file's text with character offsets for ast positions (which count UTF-8 bytes)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        self.lines = re.split(r"\r\n|\r|\n", text)
        for line, ending in zip(self.lines, re.findall(r"\r\n|\r|\n", text), strict=False):
            self.starts.append(self.starts[-1] + len(line) + len(ending))

    def offset(self, lineno: int, col: int) -> int:
        line = self.lines[lineno - 1]
        if line.isascii():
            return self.starts[lineno - 1] + col
        raw = line.encode("utf-8", "surrogatepass")[:col]
        chars = len(raw.decode("utf-8", "surrogatepass"))
        return self.starts[lineno - 1] + chars

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def segment(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def line_of(self, offset: int) -> int:
        low, high = 0, len(self.starts) - 1
        while low < high:
            mid = (low + high + 1) // 2
            if self.starts[mid] <= offset:
                low = mid
            else:
                high = mid - 1
        return low + 1


# ---------------------------------------------------------------------- helpers
def _walk_body(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """Every node of the function's body in source order (not its decorators or defaults)."""
    for statement in function.body:
        yield from _preorder(statement)


def _preorder(node: ast.AST) -> Iterator[ast.AST]:
    """The node and those inside it in source order, without recursion (a sum of a thousand
    terms nests a thousand deep)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(ast.iter_child_nodes(current))))


class _Assignments:
    """The plain assignments of a function (``name = value``), to read the last one before a
    use; a name that is also bound otherwise (parameter, loop, ``with``, unpacking,
    augmented assignment) has none."""

    def __init__(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.values: dict[str, list[tuple[tuple[int, int], ast.expr]]] = {}
        blocked: set[str] = set()
        for node in _walk_body(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    where = (node.lineno, node.col_offset)
                    self.values.setdefault(target.id, []).append((where, node.value))
                    continue
            for bound in _bound_names(node):
                blocked.add(bound)
        arguments = function.args
        blocked.update(a.arg for a in [*arguments.posonlyargs, *arguments.args,
                                       *arguments.kwonlyargs])  # fmt: skip
        for name in blocked:
            self.values.pop(name, None)

    def before(self, use: ast.Name) -> ast.expr | None:
        where = (use.lineno, use.col_offset)
        earlier = [value for at, value in self.values.get(use.id, []) if at < where]
        return earlier[-1] if earlier else None


def _compared_only(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names the function reads only as a compared value (``assert f(m) == hnf``,
    ``assert_equal(hnf, f(m))``): what they hold is an expected value, not an input."""
    compared: set[int] = set()
    for node in _walk_body(function):
        sides: list[ast.expr] = []
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
        elif isinstance(node, ast.Call) and (_call_name(node) or "").lower().startswith("assert"):
            sides = list(node.args)
        for side in sides:  # ``expected`` or ``expected[0]``
            compared.add(id(side.value if isinstance(side, ast.Subscript) else side))
    reads: dict[str, bool] = {}
    for node in _reads(function):
        reads[node.id] = reads.get(node.id, True) and id(node) in compared
    return {name for name, only in reads.items() if only}


def _reads(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.Name]:
    """The names the function reads, not counting an assertion's message
    (``assert got == expected, f"got {got} instead of {expected}"``)."""
    messages: set[int] = set()
    for node in _walk_body(function):
        parts: list[ast.AST] = []
        if isinstance(node, ast.Assert) and node.msg is not None:
            parts = [node.msg]
        elif isinstance(node, ast.Call):
            parts = [k.value for k in node.keywords if k.arg in ("msg", "err_msg")]
        messages.update(id(n) for part in parts for n in ast.walk(part))
    for node in _walk_body(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if id(node) not in messages:
                yield node


def _bound_names(node: ast.AST) -> Iterator[str]:
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
        targets = [node.target]
    elif isinstance(node, ast.comprehension | ast.NamedExpr):
        targets = [node.target]
    elif isinstance(node, ast.With | ast.AsyncWith):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    while targets:  # names bound, not ``x.attr = ...`` / ``x[i] = ...`` (a change in place)
        target = targets.pop()
        if isinstance(target, ast.Name):
            yield target.id
        elif isinstance(target, ast.Tuple | ast.List):
            targets.extend(target.elts)
        elif isinstance(target, ast.Starred):
            targets.append(target.value)


def _call_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _negated(call: ast.Call) -> bool:
    name = _call_name(call) or ""
    return bool(re.match(r"(not_|is_not|isnot|no_)", name))


def _element(container: ast.expr, key: object) -> ast.expr | None:
    if isinstance(container, ast.List | ast.Tuple) and isinstance(key, int):
        if -len(container.elts) <= key < len(container.elts):
            return container.elts[key]
    if isinstance(container, ast.Dict):
        for k, value in zip(container.keys, container.values, strict=True):
            if isinstance(k, ast.Constant) and k.value == key:
                return value
    return None


def _number(node: ast.expr) -> int | float | None:
    """The value of a number written out (``3``, ``-2.5``), not a bool."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return -inner if inner is not None else None
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return None if isinstance(node.value, bool) else node.value
    return None


def _empty(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value in ("", b"")


def _is_bool(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, bool)


def _is_string(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str | bytes)
    return isinstance(node, ast.JoinedStr)


def _literal_tier(node: ast.expr) -> int:
    return min(_tier(node), 2)


def _tier(node: ast.expr) -> int:  # noqa: C901, PLR0911 one return per kind of node, a table
    """0: constants and containers of constants (``-1``, ``[1, 'a']``, f-strings); 1: the
    same built with calls (``S(3)``, ``np.array([1, 2])``, ``pytest.approx(1.5)``) or
    operators; 2: an expression with names and at least one constant (``x**2 + 1``); 3:
    nothing to change (a bare name, a call without constants)."""
    if isinstance(node, ast.Constant):
        return 0
    if isinstance(node, ast.JoinedStr):
        return 0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _tier(node.operand)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return _symbolic_tier(node, max((_tier(e) for e in node.elts), default=0))
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            return 3
        parts = [e for e in [*node.keys, *node.values] if e is not None]
        return _symbolic_tier(node, max((_tier(e) for e in parts), default=0))
    if isinstance(node, ast.Call) and _dotted(node.func):
        if _call_name(node) in _CONSTRUCTORS and not node.args and not node.keywords:
            return 0
        if not _constructor(node.func):  # the code under test, called: a computed value
            return _symbolic_tier(node, 3)
        parts = [*node.args, *(k.value for k in node.keywords)]
        if not parts:
            return 3
        inner = max(_tier(p) for p in parts)
        return 1 if inner <= 1 else _symbolic_tier(node, inner)
    if isinstance(node, ast.BinOp):
        inner = max(_tier(node.left), _tier(node.right))
        return 1 if inner <= 1 else 2 if _has_constant(node) else 3
    if isinstance(node, ast.Name | ast.Attribute):
        return 0 if mutate.is_named_value(ast.unparse(node)) else 3
    return 3 if not _has_constant(node) or not _symbolic(node) else 2


def _constructor(func: ast.expr) -> bool:
    """A call that builds a value rather than computes one: a class (``Matrix``,
    ``xr.DataArray``, ``S``), a builtin container or type, ``np.array``, ``approx``, ..."""
    parts = ast.unparse(func).split(".")
    return (
        any(part[:1].isupper() for part in parts)
        or parts[-1] in _VALUE_BUILDERS
        or _NUMPY_SCALAR.match(parts[-1]) is not None
    )


def _symbolic_tier(node: ast.expr, inner: int) -> int:
    if inner < 3:
        return inner
    return 2 if _has_constant(node) and _symbolic(node) else 3


def _dotted(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _has_constant(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and n.value is not None for n in ast.walk(node))


def _symbolic(node: ast.AST) -> bool:
    """Built of names, constants, operators, containers and calls only (``x**2 + 1``,
    ``Matrix([[1, x]])``): no subscripts, lambdas, comprehensions or attribute reads of
    computed values."""
    allowed = (ast.Name, ast.Attribute, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Call,
               ast.List, ast.Tuple, ast.Set, ast.Dict, ast.keyword, ast.operator, ast.unaryop,
               ast.expr_context, ast.Starred)  # fmt: skip
    return all(isinstance(n, allowed) for n in ast.walk(node))


def _leaves(node: ast.expr) -> Iterator[tuple[ast.expr, str]]:
    """The constants of an expected value that an edit may change, in source order: not
    ``None``, not a keyword argument's scalar value (``evaluate=False``, ``dtype='i8'``)."""
    skip: set[int] = set()
    for inner in ast.walk(node):
        if (
            isinstance(inner, ast.keyword)
            and _tier(inner.value) == 0
            and not isinstance(inner.value, ast.List | ast.Tuple | ast.Set | ast.Dict)
        ):  # an option (``evaluate=False``, ``dtype='i8'``), not data (``coords={...}``)
            skip.update(id(n) for n in ast.walk(inner.value))
        if isinstance(inner, ast.JoinedStr):
            skip.update(id(n) for n in ast.walk(inner) if n is not inner)
    found: list[ast.expr] = []
    for inner in ast.walk(node):
        if id(inner) in skip:
            continue
        if isinstance(inner, ast.JoinedStr):
            found.append(inner)
        elif isinstance(inner, ast.Constant) and inner.value is not None and inner.value is not ...:
            found.append(inner)
        elif isinstance(inner, ast.Name | ast.Attribute) and mutate.is_named_value(
            ast.unparse(inner)
        ):
            found.append(inner)
    found.sort(key=lambda n: (n.lineno, n.col_offset))
    for leaf in found:
        if isinstance(leaf, ast.Constant):
            yield leaf, type(leaf.value).__name__
        else:
            yield leaf, "str" if isinstance(leaf, ast.JoinedStr) else "name"
