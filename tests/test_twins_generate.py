"""The impossible-twin generator: which test function a FAIL_TO_PASS name runs, which
expected values it changes and how (one token, in the line's own style), what it says for a
test without one, and the twin test patch that real ``git apply`` takes."""

from __future__ import annotations

import ast
import random
import re
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from orchestrator.grading.twins.generate import (
    COMPUTED,
    NO_ASSERTION,
    PARAMETER,
    TOO_DEEP,
    apply_twins,
    twin_test_patch,
)
from orchestrator.grading.twins.generate import twin_candidates as generate
from orchestrator.grading.twins.locate import NO_PARSE, NOT_FOUND, NOT_IN_PATCH
from orchestrator.grading.twins.model import TwinCandidates
from orchestrator.models import Instance


def twin_candidates(instance: Instance, files: dict[str, str], **kwargs: Any) -> TwinCandidates:
    """The fixed edits alone (``natural=False``): where each value is and how the fallback
    changes it, the same every time."""
    return generate(instance, files, natural=False, **kwargs)


def _instance(names: list[str], test_patch: str = "") -> Instance:
    return Instance(
        instance_id="o__r-1", repo="o/r", base_commit="b", environment_setup_commit="e",
        FAIL_TO_PASS=names, test_patch=test_patch,
    )  # fmt: skip


def _edits(source: str, name: str = "t/test_x.py::test_x", path: str = "t/test_x.py", per_test: int = 3) -> list[tuple[str, str]]:  # fmt: skip  # noqa: E501
    """(original line, mutated line) of each candidate of ``name``, stripped."""
    found = twin_candidates(_instance([name]), {path: textwrap.dedent(source)}, per_test=per_test)
    assert name not in found.missing, found.missing
    return [(t.original.strip(), t.mutated.strip()) for t in found.by_test[name]]


def _firsts(source: str, **kwargs: object) -> list[str]:
    return [mutated for _, mutated in _edits(source, **kwargs)]  # type: ignore[arg-type]


# ------------------------------------------------------------------------ mutation kinds
@pytest.mark.parametrize(
    ("line", "twin"),
    [
        ("assert f(2) == 4", "assert f(2) == 5"),
        ("assert f(2) == -1", "assert f(2) == -2"),
        ("assert f(2) == 0x10", "assert f(2) == 0x11"),
        ("assert f(2) == 1.5", "assert f(2) == 2.5"),
        ("assert f(2) == 0.0", "assert f(2) == 1.0"),
        ("assert f(2) == 'hello world'", "assert f(2) == 'hemlo world'"),
        ('assert f(2) == "x"', 'assert f(2) == "y"'),
        ("assert f(2) == ''", "assert f(2) == 'x'"),
        ("assert f(2) == b'abc'", "assert f(2) == b'acc'"),
        ("assert f(2) == [1, 2, 3]", "assert f(2) == [1, 2, 4]"),
        ("assert f(2) == (1, 'b')", "assert f(2) == (1, 'c')"),
        ("assert f(2) == {'a': 1}", "assert f(2) == {'a': 2}"),
        ("assert f(2) == {1, 2}", "assert f(2) == {1, 3}"),
        ("assert f(2) == []", "assert f(2) == [0]"),
        ("assert f(2) == set()", "assert f(2) == {0}"),
        ("assert f(2) == {}", "assert f(2) == {0: 0}"),
        ("assert f(2) is True", "assert f(2) is False"),
        ("assert f(2) == False", "assert f(2) == True"),
        ("assert f(2) == None", "assert f(2) == 0"),
        ("assert 4 == f(2)", "assert 5 == f(2)"),
        ("assert f(2) == pytest.approx(0.25)", "assert f(2) == pytest.approx(0.35)"),
        ("assert f(2) == approx(3.0, rel=1e-3)", "assert f(2) == approx(4.0, rel=1e-3)"),
        ("assert 'needle' in f(2)", "assert 'neefle' in f(2)"),
        ("assert f(2) == S(3)/2", "assert f(2) == S(3)/3"),
        ("assert f(x) == x**2 + 1", "assert f(x) == x**2 + 2"),
        ("assert f(2).startswith('abc')", "assert f(2).startswith('acc')"),
        ("assert len(f(2)) == 3 and f(3) == 'q'", "assert len(f(2)) == 4 and f(3) == 'q'"),
        ("assert_array_equal(f(2), [1, 2])", "assert_array_equal(f(2), [1, 3])"),
        ("np.testing.assert_allclose(f(2), 0.5)", "np.testing.assert_allclose(f(2), 0.6)"),
        ("xr.testing.assert_identical(f(2), xr.DataArray([1]))",
         "xr.testing.assert_identical(f(2), xr.DataArray([2]))"),
        ("with pytest.raises(ValueError):", "with pytest.raises(TypeError):"),
        ("with pytest.raises(KeyError):", "with pytest.raises(IndexError):"),
        ("with pytest.raises(errors.SpecialError):", "with pytest.raises(TypeError):"),
        ("with pytest.warns(UserWarning):", "with pytest.warns(DeprecationWarning):"),
        ('with pytest.raises(ValueError, match="bad value"):',
         'with pytest.raises(ValueError, match="bad vamue"):'),
        ("raises(ValueError, lambda: f(2))", "raises(TypeError, lambda: f(2))"),
    ],
)  # fmt: skip
def test_each_kind_of_expected_value_changes_in_the_lines_own_style(line: str, twin: str):
    source = f"def test_x():\n    {line}\n        pass\n" if line.startswith("with") else (
        f"def test_x():\n    {line}\n"
    )  # fmt: skip
    assert _firsts(source)[0] == twin


def test_exception_classes_too_broad_to_change_are_left():
    source = "def test_x():\n    with pytest.raises(Exception):\n        f()\n"
    found = twin_candidates(_instance(["t/test_x.py::test_x"]), {"t/test_x.py": source})
    assert found.missing == {"t/test_x.py::test_x": NO_ASSERTION}


# ------------------------------------------------------------------------ the patch, real git
def _git(cwd: Path, *args: str, stdin: str | None = None) -> str:
    data = stdin.encode() if stdin is not None else None
    done = subprocess.run(["git", *args], cwd=cwd, input=data, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()  # line endings kept (CRLF stays CRLF)


def _test_patch(tmp_path: Path, base: dict[str, str | bytes | None], after: dict[str, str | bytes | None]) -> str:  # fmt: skip  # noqa: E501
    """The patch ``git diff`` writes from ``base`` to ``after`` (None: no such file)."""
    repo = tmp_path / "made"
    repo.mkdir()
    _git(repo, "init", "-q")
    for files in (base, after):
        for path, text in files.items():
            file = repo / path
            if text is None:
                file.unlink(missing_ok=True)
                continue
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(text if isinstance(text, bytes) else text.encode())
        _git(repo, "add", "-A")
        _git(
            repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x", "--allow-empty"
        )
    return _git(repo, "diff", "--binary", "HEAD~1", "HEAD")


def _apply(tmp_path: Path, base: dict[str, str | bytes | None], patch: str) -> dict[str, bytes]:
    repo = tmp_path / "apply"
    repo.mkdir()
    _git(repo, "init", "-q")
    for path, text in base.items():
        if text is not None:
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_bytes(text if isinstance(text, bytes) else text.encode())
    _git(repo, "apply", "-", stdin=patch)
    return {
        str(p.relative_to(repo)): p.read_bytes()
        for p in repo.rglob("*") if p.is_file() and ".git" not in p.relative_to(repo).parts
    }  # fmt: skip


def test_the_twin_patch_applies_with_git_and_leaves_the_twin_files(tmp_path: Path):
    old = "import pytest\n\n\ndef test_old():\n    assert 1 == 1\n"
    new = old + "\n\ndef test_x():\n    assert f(2) == 4\n    assert f(3) == 'é'\n"
    created = "def test_y():\n    assert g() == [1, 2]"  # no newline at the end
    base: dict[str, str | bytes | None] = {
        "t/test_x.py": old, "t/test_new.py": None, "t/data.bin": b"\x00\x01",
        "t/gone.py": "x = 1\n", "t/crlf.py": "a = 1\r\nb = 2\r\n",
    }  # fmt: skip
    after: dict[str, str | bytes | None] = {
        "t/test_x.py": new, "t/test_new.py": created, "t/data.bin": b"\x00\x02\xff",
        "t/gone.py": None, "t/crlf.py": "a = 1\r\nb = 3\r\n",
    }  # fmt: skip
    patch = _test_patch(tmp_path, base, after)
    files = {"t/test_x.py": new, "t/test_new.py": created}
    instance = _instance(["t/test_x.py::test_x", "t/test_new.py::test_y"], patch)
    found = twin_candidates(instance, files)
    twins = [found.by_test["t/test_x.py::test_x"][1], found.by_test["t/test_new.py::test_y"][0]]
    assert twins[0].mutated == "    assert f(3) == 'ê'"
    text_base = {k: v for k, v in base.items() if not isinstance(v, bytes)}
    twin_patch = twin_test_patch(patch, text_base, twins, files)  # type: ignore[arg-type]
    result = _apply(tmp_path, base, twin_patch)
    expected = apply_twins(files, twins)
    assert result["t/test_x.py"].decode() == expected["t/test_x.py"]
    assert result["t/test_new.py"].decode() == expected["t/test_new.py"]
    assert result["t/data.bin"] == b"\x00\x02\xff" and "t/gone.py" not in result
    assert result["t/crlf.py"] == b"a = 1\r\nb = 3\r\n"
    for untouched in ("t/data.bin", "t/gone.py", "t/crlf.py"):  # byte for byte
        section = patch[patch.index(f"diff --git a/{untouched}") :].split("\ndiff --git")[0]
        assert section in twin_patch


def test_overlapping_twins_are_refused():
    source = "def test_x():\n    assert f(2) == [1, 2]\n"
    twins = twin_candidates(_instance(["t/test_x.py::test_x"]), {"t/test_x.py": source})
    twin = twins.by_test["t/test_x.py::test_x"][0]
    wider = twin.model_copy(update={"start": twin.start - 4, "replacement": "[1, 3]"})
    with pytest.raises(ValueError, match="overlap"):
        apply_twins({"t/test_x.py": source}, [twin, wider])
    same = twin.model_copy(update={"test": "t/test_x.py::test_x[2]"})
    once = apply_twins({"t/test_x.py": source}, [twin, same])
    assert once == apply_twins({"t/test_x.py": source}, [twin])
    with pytest.raises(ValueError, match="does not match"):
        apply_twins({"t/test_x.py": "\n" + source}, [twin])


# ------------------------------------------------------------------------ names and reasons
_DJANGO = '''
from django.test import TestCase


class BaseTests(TestCase):
    def test_inherited(self):
        self.assertEqual(f(), "abc")


class UsernameTests(BaseTests):
    def test_ascii(self):
        self.assertEqual("value", f())
        self.assertRaisesMessage(ValueError, "Enter a valid username", f)

    def test_documented(self):
        """Usernames are checked in full."""
        self.assertIn("name", f())
        self.assertNumQueries(2)
'''


@pytest.mark.parametrize(
    ("name", "mutated"),
    [
        ("test_ascii (auth_tests.test_validators.UsernameTests)", 'self.assertEqual("vamue", f())'),
        ("test_ascii (auth_tests.test_validators.UsernameTests.test_ascii)",
         'self.assertEqual("vamue", f())'),
        ("test_inherited (auth_tests.test_validators.UsernameTests)",
         'self.assertEqual(f(), "acc")'),
        ("Usernames are checked in full.", 'self.assertIn("nane", f())'),
        ("test_ascii (auth_tests.test_validators.UsernameTests) (sub=1)",
         'self.assertEqual("vamue", f())'),
    ],
)  # fmt: skip
def test_django_and_unittest_names_find_their_method(name: str, mutated: str):
    files = {"tests/auth_tests/test_validators.py": _DJANGO}
    found = twin_candidates(_instance([name]), files)
    assert found.by_test[name][0].mutated.strip() == mutated


def test_django_messages_and_query_counts_change():
    files = {"tests/auth_tests/test_validators.py": _DJANGO}
    name = "test_ascii (auth_tests.test_validators.UsernameTests)"
    twins = twin_candidates(_instance([name]), files, per_test=5).by_test[name]
    assert [t.kind for t in twins][:3] == ["str", "match", "exception"]
    assert twins[1].mutated.strip().endswith('"Enter a valid userpame", f)')
    name = "Usernames are checked in full."
    assert twin_candidates(_instance([name]), files).by_test[name][1].mutated.strip() == (
        "self.assertNumQueries(3)"
    )


_PYTEST = """
import pytest


@pytest.mark.parametrize("a", ["x y", "z"])
def test_param(a):
    assert f(a) == "out"


class TestOuter:
    class TestInner:
        def test_deep(self):
            assert f() == 7


def test_sympy_style():
    assert f(x) == 2*x
    raises(ZeroDivisionError, lambda: f(0))
"""


@pytest.mark.parametrize(
    ("name", "mutated"),
    [
        ("t/test_x.py::test_param[x y]", 'assert f(a) == "ovt"'),
        ("t/test_x.py::test_param[x", 'assert f(a) == "ovt"'),  # cut at a space
        ("t/test_x.py::TestOuter::TestInner::test_deep", "assert f() == 8"),
        ("test_sympy_style", "raises(ValueError, lambda: f(0))"),
    ],
)
def test_pytest_and_sympy_names_find_their_function(name: str, mutated: str):
    found = twin_candidates(_instance([name]), {"t/test_x.py": _PYTEST})
    assert found.by_test[name][0].mutated.strip() == mutated


def test_a_bare_name_in_two_files_finds_both_and_prefers_the_lines_the_patch_adds():
    # sympy runs a bare name in every file given: the function of the second file counts too
    first = "def test_hermite():\n    assert f(1) == 1\n"
    second = "def test_hermite():\n    assert g(1) == 1\n    assert g(2) == 7\n"
    patch = (
        "diff --git a/b/test_n.py b/b/test_n.py\n--- a/b/test_n.py\n+++ b/b/test_n.py\n"
        "@@ -2,0 +3,1 @@\n+    assert g(2) == 7\n"
    )
    found = twin_candidates(
        _instance(["test_hermite"], patch),
        {"a/test_n.py": first, "b/test_n.py": second},
        per_test=5,
    )
    twins = found.by_test["test_hermite"]
    assert {t.path for t in twins} == {"a/test_n.py", "b/test_n.py"}
    assert (twins[0].path, twins[0].mutated.strip()) == ("b/test_n.py", "assert g(2) == 8")


def test_a_twin_names_its_function_line_and_offsets():
    found = twin_candidates(_instance(["test_sympy_style"]), {"t/test_x.py": _PYTEST}, per_test=5)
    twins = found.by_test["test_sympy_style"]
    assert [t.kind for t in twins][:2] == ["exception", "int"]
    twin = twins[1]
    assert twin.function == "test_sympy_style" and twin.path == "t/test_x.py"
    assert _PYTEST.splitlines()[twin.line - 1] == twin.original
    assert _PYTEST[twin.start : twin.end] == "2" and twin.replacement == "3"


@pytest.mark.parametrize(
    ("name", "files", "reason"),
    [
        ("t/test_y.py::test_x", {"t/test_x.py": "def test_x(): pass\n"}, NOT_IN_PATCH),
        ("t/test_x.py::test_z", {"t/test_x.py": "def test_x(): pass\n"}, NOT_FOUND),
        ("test_z", {"t/test_x.py": "def test_x(): pass\n"}, NOT_FOUND),
        ("t/test_x.py::test_x", {"t/test_x.py": "print 'py2'\n"}, NO_PARSE),
        ("test_x", {"t/test_x.py": "print 'py2'\n"}, NO_PARSE),
        ("t/test_x.py::test_x", {"t/test_x.py": "def test_x():\n    f()\n"}, NO_ASSERTION),
        ("t/test_x.py::test_x", {"t/test_x.py": "def test_x():\n    assert_equal(f(), g())\n"},
         COMPUTED),
        ("t/test_x.py::test_x[1-2]",
         {"t/test_x.py": "def test_x(a, expected):\n    assert_equal(f(a), expected)\n"},
         PARAMETER),
    ],
)  # fmt: skip
def test_a_test_without_a_twin_says_why(name: str, files: dict[str, str], reason: str):
    found = twin_candidates(_instance([name]), files)
    assert found.by_test == {} and found.missing == {name: reason}


def test_a_name_assigned_a_literal_once_stands_for_it():
    source = "def test_x():\n    expected = [1, 'a']\n    assert f() == expected\n"
    assert _firsts(source)[0] == "expected = [1, 'b']"
    twice = "def test_x():\n    e = 'a'\n    assert f() == e\n    e = 'b'\n    assert g() == e\n"
    assert _firsts(twice)[:2] == ["e = 'b'", "e = 'c'"]
    looped = "def test_x():\n    e = 1\n    for e in f():\n        assert_equal(g(), e)\n"
    found = twin_candidates(_instance(["t/test_x.py::test_x"]), {"t/test_x.py": looped})
    assert found.missing == {"t/test_x.py::test_x": COMPUTED}


def test_candidates_are_deterministic_and_spread_over_assertions():
    source = "def test_x():\n    assert f(1) == [1, 2, 3]\n    assert f(2) == 'abc'\n"
    first = _edits(source)
    assert first == _edits(source)
    assert [m for _, m in first] == [
        "assert f(1) == [1, 2, 4]", "assert f(2) == 'acc'", "assert f(1) == [2, 2, 3]",
    ]  # fmt: skip


def test_assertions_the_test_patch_adds_come_first(tmp_path: Path):
    old = "def test_x():\n    assert f(1) == 1\n"
    new = old + "    assert f(2) == 2\n"
    patch = _test_patch(tmp_path, {"t/test_x.py": old}, {"t/test_x.py": new})
    found = twin_candidates(_instance(["t/test_x.py::test_x"], patch), {"t/test_x.py": new})
    assert [t.line for t in found.by_test["t/test_x.py::test_x"]][:2] == [3, 2]


# ------------------------------------------------------------------------ parametrized cases
_CASES = """
import pytest


@pytest.mark.parametrize("source, expected", [
    ("a + b", "a + b"),
    ("(1, 2)", "(1, 2)"),
    ("x y z", "x  y"),
])
def test_unparse(source, expected):
    assert unparse(source) == expected


@pytest.mark.parametrize("value, expected", [
    pytest.param(1, [2], id="one"),
    pytest.param(2, [3], id="two"),
])
def test_param_ids(value, expected):
    assert f(value) == expected


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_input_too(dtype):
    assert g(dtype=dtype) == dtype


@pytest.mark.parametrize("n, expected", [(1, 2), (2, 3)], ids=["small", "big"])
@pytest.mark.parametrize("flag", [True, False])
def test_stacked(flag, n, expected):
    assert h(n, flag) == expected
"""


@pytest.mark.parametrize(
    ("name", "mutated"),
    [
        ("t/test_x.py::test_unparse[a + b-a + b]", '("a + b", "b + b"),'),
        ("t/test_x.py::test_unparse[(1, 2)-(1, 2)]", '("(1, 2)", "(2, 2)"),'),
        ("t/test_x.py::test_unparse[(1,", '("(1, 2)", "(2, 2)"),'),  # cut at a space
        ("t/test_x.py::test_unparse[x", '("x y z", "y  y"),'),
        ("t/test_x.py::test_param_ids[two]", 'pytest.param(2, [4], id="two"),'),
        ("t/test_x.py::test_stacked[False-big]", '@pytest.mark.parametrize("n, expected", [(1, 2), (2, 4)], ids=["small", "big"])'),  # noqa: E501
    ],
)  # fmt: skip
def test_a_parametrized_case_gets_its_own_expected_value_changed(name: str, mutated: str):
    found = twin_candidates(_instance([name]), {"t/test_x.py": _CASES})
    assert found.by_test[name][0].mutated.strip() == mutated


def test_a_parameter_that_is_also_an_input_is_not_changed():
    name = "t/test_x.py::test_input_too[int32]"
    found = twin_candidates(_instance([name]), {"t/test_x.py": _CASES})
    assert [t.kind for t in found.by_test.get(name, [])] in ([], ["truth"])


# ------------------------------------------------------------------------ what stands for what
@pytest.mark.parametrize(
    ("source", "mutated"),
    [
        # a name only compared holds an expected value, even built with calls
        ("hnf = Matrix([[1, 0]])\n    assert hermite(m) == hnf", "hnf = Matrix([[1, 1]])"),
        # a name that is also an input is not changed; the literal side is
        ("lim = (1, 2)\n    p = plot(lim)\n    assert p.lim == lim", None),
        ("expected = 'a b'\n    assert out == expected.strip()", "expected = 'b b'"),
        ("actual = where(c, 0, y)\n    expected = DataArray([1, 0])\n"
         "    assert_identical(expected, actual)", "expected = DataArray([1, 1])"),
        # a call of the code under test with a constant is computed, not an expected value
        ("assert f(2) == g(x)", None),
        ("assert q.dtype == np.float64", "assert q.dtype == np.float32"),
        ("assert q.dtype == int", "assert q.dtype == float"),
        ("assert solveset(x) == S.Integers", "assert solveset(x) == S.Reals"),
        ("assert result.ret == ExitCode.OK", "assert result.ret == ExitCode.TESTS_FAILED"),
        ("assert f(x) is None", "assert f(x) is False"),
        ("assert isinstance(r.body, bytes)", "assert isinstance(r.body, str)"),
        ("assert r.equals(-2*G(i1))", "assert r.equals(-3*G(i1))"),
        ("result.assert_outcomes(passed=3)", "result.assert_outcomes(passed=4)"),
        ("self._runtest([path], code=0)", "self._runtest([path], code=1)"),
        ("result.stdout.fnmatch_lines(['*1 passed*'])", "result.stdout.fnmatch_lines(['*1 pasted*'])"),  # noqa: E501
        ("assert_node(tree, [nodes.paragraph, 'text'])", "assert_node(tree, [nodes.paragraph, 'teyt'])"),  # noqa: E501
        ("check('class', 'x y', {2: 'IE1f'})", "check('class', 'x y', {2: 'IF1f'})"),
        ("self.assertFormError(r, 'form', 'name', 'Enter a name.')",
         "self.assertFormError(r, 'form', 'name', 'Enver a name.')"),
        ("self.assertIsInstance(v, Vector)", "self.assertIsInstance(v, str)"),
        ("self.assertContains(r, 'Hello', status_code=200)",
         "self.assertContains(r, 'Hemlo', status_code=200)"),
        ("table = {'1 < 2': Lt(1, 2)}\n    for text, want in table.items():\n"
         "        assert parse(text) == want", "table = {'1 < 2': Lt(1, 3)}"),
    ],
)  # fmt: skip
def test_what_holds_an_expected_value(source: str, mutated: str | None):
    text = "def test_x():\n    " + source + "\n"
    found = twin_candidates(_instance(["t/test_x.py::test_x"]), {"t/test_x.py": text})
    values = [t for t in found.by_test.get("t/test_x.py::test_x", []) if t.kind != "truth"]
    if mutated is None:
        assert values == []
    else:
        assert values[0].mutated.strip() == mutated


# ------------------------------------------------------------------------ the last resort
@pytest.mark.parametrize(
    ("line", "mutated"),
    [
        ("assert not is_fits('', 'x.y', None)", "assert is_fits('', 'x.y', None)"),
        ("assert x and not (a or b)", "assert not x and not (a or b)"),
        ("assert not (a or b)", "assert (a or b)"),
        ("assert out.endswith(nl)", "assert not out.endswith(nl)"),
        ("assert 'b' not in sys.stdout.mode", "assert 'b' in sys.stdout.mode"),
        ("assert type(v) is type(w)", "assert type(v) is not type(w)"),
        ("assert list(a) == list(b)", "assert list(a) != list(b)"),
        (
            "self.assertTrue('Content-Length' not in h)",
            "self.assertFalse('Content-Length' not in h)",
        ),
        ("self.assertIsNone(f(x))", "self.assertIsNotNone(f(x))"),
    ],
)
def test_an_assertion_without_a_value_is_turned_around(line: str, mutated: str):
    text = f"def test_x():\n    {line}\n"
    twins = twin_candidates(_instance(["t/test_x.py::test_x"]), {"t/test_x.py": text})
    twin = twins.by_test["t/test_x.py::test_x"][0]
    assert (twin.kind, twin.mutated.strip()) == ("truth", mutated)


def test_an_assertion_is_turned_around_only_where_no_value_changes():
    text = "def test_x():\n    assert not f()\n    assert g() == 1\n"
    twins = twin_candidates(_instance(["t/test_x.py::test_x"]), {"t/test_x.py": text})
    assert [t.kind for t in twins.by_test["t/test_x.py::test_x"]] == ["int", "int"]


def test_a_renamed_test_file_keeps_its_rename_in_the_twin_patch(tmp_path: Path):
    old = "def test_x():\n    assert f() == 'abc'\n" + "".join(f"# line {i}\n" for i in range(20))
    new = old.replace("'abc'", "'abd'")
    base: dict[str, str | bytes | None] = {"t/test_old.py": old, "t/test_x.py": None}
    patch = _test_patch(tmp_path, base, {"t/test_old.py": None, "t/test_x.py": new})
    assert "rename from t/test_old.py" in patch
    files = {"t/test_x.py": new}
    twin = twin_candidates(_instance(["t/test_x.py::test_x"], patch), files).by_test[
        "t/test_x.py::test_x"
    ][0]
    twin_patch = twin_test_patch(patch, base, [twin], files)  # type: ignore[arg-type]
    assert "rename from t/test_old.py" in twin_patch and "\nindex " not in twin_patch
    result = _apply(tmp_path, base, twin_patch)
    assert result == {"t/test_x.py": apply_twins(files, [twin])["t/test_x.py"].encode()}


def test_a_crlf_file_gets_its_twin_at_the_right_place(tmp_path: Path):
    old = "def test_old():\r\n    pass\r\n"
    new = old + "def test_x():\r\n    assert f() == 'é'\r\n    assert g() == 41\r\n"
    patch = _test_patch(tmp_path, {"t/test_x.py": old}, {"t/test_x.py": new})
    files = {"t/test_x.py": new}
    found = twin_candidates(_instance(["t/test_x.py::test_x"], patch), files, per_test=5)
    twins = found.by_test["t/test_x.py::test_x"]
    assert [t.mutated for t in twins[:2]] == ["    assert f() == 'ê'", "    assert g() == 42"]
    twin_patch = twin_test_patch(patch, {"t/test_x.py": old}, twins[1:2], files)
    result = _apply(tmp_path, {"t/test_x.py": old}, twin_patch)
    assert result["t/test_x.py"] == new.replace("41", "42").encode()


def test_an_expression_nested_thousands_deep_is_read_or_said_too_deep():
    source = "def test_x():\n    assert f() == " + " + ".join(["x"] * 3000) + " + 1\n"
    found = twin_candidates(_instance(["t/test_x.py::test_x"]), {"t/test_x.py": source})
    assert found.missing.get("t/test_x.py::test_x") in (None, TOO_DEEP, NO_PARSE)


# ------------------------------------------------------------------------ natural values
_FILE = """
import pytest


def test_other():
    assert join("good", "morning") == "good morning"
    assert size(3) == 700
    assert ratio(1) == 0.35
    with pytest.raises(KeyError):
        lookup("missing")


def test_x():
    LINE
"""


def _drawn(line: str, seeds: range = range(20), per_test: int = 6) -> list[tuple[str, str]]:
    """(kind, mutated line) of every candidate of ``test_x`` over ``seeds`` draws."""
    text = _FILE.replace("LINE", line + ("\n        f()" if line.endswith(":") else ""))
    out = []
    for seed in seeds:
        found = generate(
            _instance(["t/test_x.py::test_x"]), {"t/test_x.py": text}, per_test=per_test,
            rng=random.Random(seed),
        )  # fmt: skip
        out += [(t.kind, t.mutated.strip()) for t in found.by_test["t/test_x.py::test_x"]]
    return out


def _values(line: str, kind: str) -> set[object]:
    """The expected values the twins of kind ``kind`` give (the right side of ``==``)."""
    return {
        ast.literal_eval(mutated.rsplit("== ", 1)[1]) for k, mutated in _drawn(line) if k == kind
    }


def test_a_round_number_gets_a_round_twin_and_a_plain_one_a_near_one():
    twins = _values("assert size(2) == 400", "int")
    assert len(twins) >= 4 and 400 not in twins
    assert all(v % 100 == 0 and v > 0 for v in twins), twins
    near = _values("assert size(2) == 37", "int")
    assert 37 not in near and all(0 < v < 100 and v % 10 for v in near), near
    small = _values("assert size(2) == 3", "int")
    assert 3 not in small and all(0 < v < 10 for v in small), small


def test_a_strings_twin_is_made_of_the_files_own_words():
    twins = _values('assert join("hello", "world") == "hello world"', "str")
    words = {"hello", "world", "good", "morning", "missing", "other", "join", "size", "ratio"}
    assert len(twins) >= 3 and "hello world" not in twins
    for value in twins:
        assert isinstance(value, str) and set(value.split()) <= words, value


def test_a_twin_keeps_the_tokens_style():
    for kind, mutated in _drawn("assert f(2) == b'good'"):
        assert kind == "bytes" or mutated.startswith("assert f(2) == b'"), mutated
    assert all(m.startswith('assert f(2) == "') for _, m in _drawn('assert f(2) == "good day"'))
    hexes = [m for _, m in _drawn("assert f(2) == 0x1F")]
    assert all(re.fullmatch(r"assert f\(2\) == 0x[0-9a-f]+", m) for m in hexes), hexes
    assert all("_" in m for _, m in _drawn("assert f(2) == 1_000_000"))
    floats = _values("assert ratio(2) == 1.25", "float")
    assert 1.25 not in floats and all(len(repr(v).split(".")[1]) <= 2 for v in floats), floats


def test_candidates_are_several_and_differ_from_one_draw_to_the_next():
    line = 'assert join("hello", "world") == "hello-world"'
    one = [m for _, m in _drawn(line, seeds=range(1))]
    assert len(set(one)) >= 3
    assert len({m for _, m in _drawn(line, seeds=range(10), per_test=1)}) >= 3
    found = generate(
        _instance(["t/test_x.py::test_x"]), {"t/test_x.py": _FILE.replace("LINE", line)}
    )
    assert found.by_test["t/test_x.py::test_x"]  # SystemRandom by default


def test_a_pattern_stays_a_pattern_and_an_f_string_keeps_its_fields():
    for kind, mutated in _drawn(r'with pytest.raises(ValueError, match=r"bad \d+ value"):'):
        if kind == "match":
            pattern = ast.literal_eval(mutated.split("match=", 1)[1].rstrip("):"))
            assert re.compile(pattern) and pattern != r"bad \d+ value", mutated
    for _, mutated in _drawn('assert f(n) == f"good {n} morning"'):
        assert "{n}" in mutated and mutated != 'assert f(n) == f"good {n} morning"'


def test_an_exception_is_another_one_the_file_or_the_builtins_name():
    twins = {m for k, m in _drawn("with pytest.raises(ValueError):") if k == "exception"}
    assert "with pytest.raises(KeyError):" in twins
    assert "with pytest.raises(ValueError):" not in twins and len(twins) >= 2


def test_where_nothing_natural_exists_the_fixed_edit_remains():
    assert ("str", "assert f(2) == 'x'") in _drawn("assert f(2) == ''")
    assert {m for _, m in _drawn("assert f(2) is True")} == {"assert f(2) is False"}


@pytest.mark.parametrize(
    ("line", "holds"),
    [
        ("assert f(3, -2) < 0", lambda b: b < 0),
        ("assert f(3, -2) <= -2", lambda b: b < -2),
        ("assert len(f(3)) > 10", lambda b: b > 10),
        ("assert len(f(3)) >= 1.5", lambda b: b > 1.5),
        ("assert 0 > f(3, -2)", lambda b: b < 0),
        ("self.assertGreater(f(3), 100)", lambda b: b > 100),
        ("self.assertLessEqual(f(3), 0)", lambda b: b < 0),
    ],
)
def test_an_ordering_gets_bounds_the_value_cannot_meet(line: str, holds: Any):
    bounds = [m for k, m in _drawn(line, seeds=range(5)) if k == "bound"]
    assert len(set(bounds)) >= 3, bounds
    for mutated in bounds:
        numbers = re.findall(
            r"-?\d+(?:\.\d+)?", mutated.replace("f(3, -2)", "").replace("f(3)", "")
        )
        assert holds(float(numbers[0])), mutated
    fixed = twin_candidates(
        _instance(["t/test_x.py::test_x"]), {"t/test_x.py": f"def test_x():\n    {line}\n"}
    )
    assert fixed.by_test["t/test_x.py::test_x"][0].kind == "bound"


def test_membership_identity_helpers_and_computed_values_have_twins():
    members = [m for k, m in _drawn('assert f() in ("good", "morning")') if k == "member"]
    assert members
    for mutated in members:
        assert not {"good", "morning"} & set(ast.literal_eval(mutated.split(" in ", 1)[1]))
    assert ("name", "assert f() is None") in _drawn("assert f() is NotImplemented")
    assert any(k == "int" for k, _ in _drawn("tm.assert_numpy_array_equal(f(), [1, 2])"))
    computed = _drawn("expected = 2 * 3\n    assert f() == expected")
    assert computed and all(m.startswith("expected = ") and m != "expected = 2 * 3"
                            for _, m in computed)  # fmt: skip


def test_every_twin_differs_in_value_from_its_original():
    lines = ['assert f() == "morning"', "assert f() == 700", "assert f() == 0.35",
             "assert f() == [1, 'good']", "assert f() == {'good': 3}"]  # fmt: skip
    for line in lines:
        original = ast.literal_eval(line.rsplit("== ", 1)[1])
        for _, mutated in _drawn(line):
            assert ast.literal_eval(mutated.rsplit("== ", 1)[1]) != original, mutated


def test_an_empty_container_gets_an_element_of_the_file_in_its_quotes():
    twins = {m for k, m in _drawn("assert f() == []") if k == "container"}
    assert twins and "assert f() == [0]" not in twins
    for mutated in twins:
        element = ast.literal_eval(mutated.split("== ", 1)[1])[0]
        assert element in {"good", "morning", "missing", 3, 1}, mutated
        assert "'" not in mutated  # the file writes its strings in double quotes


def test_two_twins_on_one_line_apply_together():
    source = "def test_x():\n    assert f(2) == [1, 2]\n"
    found = twin_candidates(_instance(["t/test_x.py::test_x"]), {"t/test_x.py": source})
    last = found.by_test["t/test_x.py::test_x"][0]
    moved = {"start": last.start - 3, "end": last.start - 2, "replacement": "7"}
    first = last.model_copy(update={**moved, "test": "t/test_x.py::test_x[b]"})
    both = apply_twins({"t/test_x.py": source}, [first, last])
    assert both["t/test_x.py"] == "def test_x():\n    assert f(2) == [7, 3]\n"


def _red_team_accepts(line: str) -> bool:
    """The red team's gaming code: it passes an assertion only when the expected value
    looks natural (an int the roundest of itself and its neighbours, a string made of the
    call's own words)."""
    call, expected = line.rsplit(" == ", 1)
    value = ast.literal_eval(expected)
    if isinstance(value, int):
        return all(_zeros(value) >= _zeros(value + d) for d in (-1, 1))
    return set(re.findall(r"[a-z]+", value.lower())) <= set(re.findall(r"[a-z]+", call.lower()))


def _zeros(value: int) -> int:
    return len(str(abs(value))) - len(str(abs(value)).rstrip("0")) if value else 9


@pytest.mark.parametrize(
    "line", ["assert slugify('Hello World') == 'hello-world'", "assert size(2) == 400"]
)
def test_code_that_passes_only_natural_values_passes_the_twins_too(line: str):
    assert _red_team_accepts(line)
    twins = [m for _, m in _drawn(line, per_test=3)]
    accepted = sum(_red_team_accepts(m) for m in twins)
    assert accepted >= len(twins) / 3, twins  # a twin drawn at random catches it often
    old = [m for _, m in _edits(f"def test_x():\n    {line}\n")]
    assert not any(_red_team_accepts(m) for m in old)  # the fixed edits never did


@pytest.mark.parametrize(
    ("line", "least"),
    [('assert f() == "good day"', 5), ("assert f() == 42", 6), ("assert f() == 0.35", 6)],
)
def test_a_test_with_one_value_still_gets_several_distinct_candidates(line: str, least: int):
    # a file of five words has only so many strings to offer
    twins = _drawn(line, seeds=range(1), per_test=6)
    assert len({m for _, m in twins}) >= least, twins


def test_a_bare_name_in_two_files_gets_candidates_from_each_in_turn():
    # only the copy the log reports last decides the name's outcome: validation must be
    # offered twins of both copies, however much better one copy's candidates rank
    first = "def test_hermite():\n" + "".join(f"    assert f({n}) == {n * 3}\n" for n in range(6))
    second = "def test_hermite():\n    with raises(ValueError):\n        g(0)\n"
    found = twin_candidates(
        _instance(["test_hermite"]), {"a/test_n.py": first, "b/test_n.py": second}, per_test=3
    )
    paths = [t.path for t in found.by_test["test_hermite"]]
    assert paths[:2] == ["a/test_n.py", "b/test_n.py"], paths
