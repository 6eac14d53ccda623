"""The synthetic repositories (:mod:`.synthetic` builds them): a calculator tested by pytest,
a text kit by a Django-style unittest runner, a units package by a sympy-style runner; each
with its bug, its tests, its fix and its environment recipe."""

from __future__ import annotations

from dataclasses import dataclass, field

from sandbox_tools.contract import SERVICES_DIR


@dataclass
class SyntheticRepo:
    """One repository: files at the setup commit, the base change, and the upstream fix."""

    repo: str
    instance_id: str
    problem_statement: str
    setup_files: dict[str, str]
    base_files: dict[str, str]
    fix_src: dict[str, str]
    fix_tests: dict[str, str]
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    recipe: dict[str, object]
    extra: dict[str, str] = field(default_factory=dict)


# a test that reaches a local service, as old requests tests reach httpbin
_SERVICE_TEST = (
    "def test_local_service_answers():\n"
    "    import os\n    import urllib.request\n\n"
    '    with urllib.request.urlopen(os.environ["CALC_SERVICE_URL"], timeout=10) as answer:\n'
    '        assert answer.read().strip() == b"calc-service"\n'
    "\n\n"
    # a flaky test: passes on a container's first run, fails on its second
    "def test_flaky_between_runs():\n"
    "    import os\n\n"
    '    marker = "/tmp/calc-flaky-ran-before"\n'
    "    ran_before = os.path.exists(marker)\n"
    '    open(marker, "w").close()\n'
    "    assert not ran_before\n"
)

# the start of calc's test module, at the base and with the fix
_CALC_TESTS_HEAD = (
    "import pytest\n\nfrom calc import add, floordiv, mul\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    '@pytest.mark.parametrize("a, b", [(1, 2), (-1, 1)])\n'
    "def test_add_commutes(a, b):\n    assert add(a, b) == add(b, a)\n\n\n"
    "def test_mul_positive():\n    assert mul(3, 2) == 6\n\n\n"
)


CALC = SyntheticRepo(
    repo="demo/calc",
    instance_id="demo__calc-1",
    problem_statement=(
        "`calc.mul` gives 0 when the second factor is negative (`mul(3, -2)` should be -6), "
        "and `calc.floordiv(-7, 2)` returns -3 where Python's floor division gives -4."
    ),
    setup_files={
        "pyproject.toml": (
            '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
            '\n[project]\nname = "calc"\nversion = "0.1"\n'
        ),
        "calc/__init__.py": (
            "def add(a, b):\n    return a + b\n\n\n"
            "def mul(a, b):\n    result = 0\n    for _ in range(b):\n        result += a\n"
            "    return result\n\n\n"
            "def floordiv(a, b):\n    return int(a / b)\n"
        ),
        "tests/test_calc.py": (
            _CALC_TESTS_HEAD
            + "def test_floordiv_positive():\n    assert floordiv(7, 2) == 3\n\n\n"
            + _SERVICE_TEST
        ),
        # the repository's other tests of calc, beyond the task's (the wider run's)
        "tests/test_calc_more.py": (
            "import urllib.request\n\nfrom calc import add, floordiv, mul\n\n\n"
            "def test_mul_by_zero():\n    assert mul(0, 4) == 0\n\n\n"
            "def test_floordiv_exact():\n    assert floordiv(6, 3) == 2\n\n\n"
            "def test_add_negative():\n    assert add(-2, -3) == -5\n\n\n"
            "def test_needs_a_server():\n"
            '    urllib.request.urlopen("http://127.0.0.1:9/", timeout=5)\n'
        ),
    },
    base_files={"README.md": "calc: tiny arithmetic helpers.\n"},
    fix_src={
        "calc/__init__.py": (
            "def add(a, b):\n    return a + b\n\n\n"
            "def mul(a, b):\n    return a * b\n\n\n"
            "def floordiv(a, b):\n    return a // b\n"
        ),
    },
    fix_tests={
        "tests/test_calc.py": (
            _CALC_TESTS_HEAD + "def test_mul_negative():\n    assert mul(3, -2) == -6\n\n\n"
            "def test_floordiv_positive():\n    assert floordiv(7, 2) == 3\n\n\n"
            "def test_floordiv_negative():\n    assert floordiv(-7, 2) == -4\n\n\n" + _SERVICE_TEST
        ),
    },
    fail_to_pass=[
        "tests/test_calc.py::test_mul_negative",
        "tests/test_calc.py::test_floordiv_negative",
    ],
    pass_to_pass=[
        "tests/test_calc.py::test_add",
        "tests/test_calc.py::test_add_commutes[1-2]",
        "tests/test_calc.py::test_add_commutes[-1-1]",
        "tests/test_calc.py::test_mul_positive",
        "tests/test_calc.py::test_floordiv_positive",
        "tests/test_calc.py::test_local_service_answers",
        "tests/test_calc.py::test_flaky_between_runs",
    ],
    recipe={
        "python": "3.11",
        # a complete frozen set: recipe pins are installed with --no-deps
        "packages": ["pytest==8.3.4", "pluggy==1.5.0", "iniconfig==2.0.0", "packaging==24.2"],
        "install": "python -m pip install --no-build-isolation -e .",
        "test_cmd": "pytest -rA",
        "log_format": "pytest",
        # a test that needs a local service (like old requests' httpbin), network off
        "service_setup": [
            f"mkdir -p {SERVICES_DIR}/www",
            f"echo calc-service > {SERVICES_DIR}/www/index.html",
        ],
        "services": [
            {
                "command": "python3 -m http.server 8766 --bind 127.0.0.1 "
                f"--directory {SERVICES_DIR}/www",
                "port": 8766,
            }
        ],
        "env": {"CALC_SERVICE_URL": "http://127.0.0.1:8766/"},
    },
)

_RUNTESTS = '''\
"""A Django-style test runner: `python runtests.py label ...` with labels like test_text."""
import sys
import unittest

sys.path.insert(0, "tests")


class Result(unittest.TextTestResult):
    def getDescription(self, test):
        return "%s (%s.%s)" % (test._testMethodName, type(test).__module__,
                               type(test).__qualname__)


labels = []
args = iter(sys.argv[1:])
for arg in args:
    if arg == "--verbosity":
        next(args, None)
    elif not arg.startswith("-"):
        # a path, as the test directives give it, becomes a label: tests/test_text.py -> test_text
        if arg.endswith(".py"):
            arg = arg[: -len(".py")].replace("/", ".")
            arg = arg[len("tests."):] if arg.startswith("tests.") else arg
        labels.append(arg)
suite = unittest.defaultTestLoader.loadTestsFromNames(labels)
result = unittest.TextTestRunner(verbosity=2, resultclass=Result).run(suite)
sys.exit(not result.wasSuccessful())
'''

TEXTKIT = SyntheticRepo(
    repo="demo/textkit",
    instance_id="demo__textkit-1",
    problem_statement=(
        "`textkit.slugify('Hello World')` returns `'Hello-World'`; slugs must be lower case "
        "(`'hello-world'`)."
    ),
    setup_files={
        "setup.py": "from setuptools import setup\n\nsetup(name='textkit', version='0.1', "
        "packages=['textkit'])\n",
        "runtests.py": _RUNTESTS,
        "textkit/__init__.py": (
            "def slugify(text):\n    return '-'.join(text.split())\n\n\n"
            "def title(text):\n    return text.title()\n"
        ),
        "tests/test_text.py": (
            "import unittest\n\nfrom textkit import slugify, title\n\n\n"
            "class TextTests(unittest.TestCase):\n"
            "    def test_title(self):\n        self.assertEqual(title('a b'), 'A B')\n\n"
            "    def test_slugify_spaces(self):\n"
            "        self.assertEqual(slugify('a  b'), 'a-b')\n"
        ),
    },
    base_files={"README.md": "textkit\n"},
    fix_src={
        "textkit/__init__.py": (
            "def slugify(text):\n    return '-'.join(text.lower().split())\n\n\n"
            "def title(text):\n    return text.title()\n"
        ),
    },
    fix_tests={
        "tests/test_text.py": (
            "import unittest\n\nfrom textkit import slugify, title\n\n\n"
            "class TextTests(unittest.TestCase):\n"
            "    def test_title(self):\n        self.assertEqual(title('a b'), 'A B')\n\n"
            "    def test_slugify_spaces(self):\n"
            "        self.assertEqual(slugify('a  b'), 'a-b')\n\n"
            "    def test_slugify_lowercases(self):\n"
            "        self.assertEqual(slugify('Hello World'), 'hello-world')\n"
        ),
    },
    fail_to_pass=["test_slugify_lowercases (test_text.TextTests)"],
    pass_to_pass=["test_title (test_text.TextTests)", "test_slugify_spaces (test_text.TextTests)"],
    recipe={
        "python": "3.11",
        "packages": [],
        "install": "python -m pip install --no-build-isolation -e .",
        "test_cmd": "python runtests.py --verbosity 2",
        "log_format": "django",
    },
)

_BIN_TEST = '''\
#!/usr/bin/env python
"""A sympy-style runner: `bin/test -C --verbose path.py ...` prints `name ok|F|E` per test."""
import importlib.util
import sys
import traceback

paths = [a for a in sys.argv[1:] if not a.startswith("-")]
failed = passed = 0
print("=" * 29 + " test process starts " + "=" * 29)
for path in paths:
    spec = importlib.util.spec_from_file_location("t", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    names = [n for n in vars(module) if n.startswith("test_")]
    print("%s[%d] " % (path, len(names)))
    for name in names:
        try:
            getattr(module, name)()
            print(name, "ok")
            passed += 1
        except AssertionError:
            print(name, "F")
            failed += 1
        except Exception:
            traceback.print_exc()
            print(name, "E")
            failed += 1
print("=" * 18 + " tests finished: %d passed, %d failed " % (passed, failed) + "=" * 18)
sys.exit(1 if failed else 0)
'''

UNITS = SyntheticRepo(
    repo="demo/units",
    instance_id="demo__units-1",
    problem_statement="`units.to_celsius(212)` should be 100.0 but returns 180.0.",
    setup_files={
        "setup.py": "from setuptools import setup\n\nsetup(name='units', version='0.1', "
        "packages=['units'])\n",
        "bin/test": _BIN_TEST,
        "units/__init__.py": (
            "def to_celsius(f):\n    return f - 32\n\n\n"
            "def to_fahrenheit(c):\n    return c * 9 / 5 + 32\n"
        ),
        "units/tests/test_units.py": (
            "from units import to_fahrenheit\n\n\n"
            "def test_to_fahrenheit():\n    assert to_fahrenheit(100) == 212\n"
        ),
    },
    base_files={"README.md": "units\n"},
    fix_src={
        "units/__init__.py": (
            "def to_celsius(f):\n    return (f - 32) * 5 / 9\n\n\n"
            "def to_fahrenheit(c):\n    return c * 9 / 5 + 32\n"
        ),
    },
    fix_tests={
        "units/tests/test_units.py": (
            "from units import to_celsius, to_fahrenheit\n\n\n"
            "def test_to_fahrenheit():\n    assert to_fahrenheit(100) == 212\n\n\n"
            "def test_to_celsius():\n    assert to_celsius(212) == 100\n"
        ),
    },
    fail_to_pass=["test_to_celsius"],
    pass_to_pass=["test_to_fahrenheit"],
    recipe={
        "python": "3.11",
        "packages": [],
        "install": "python -m pip install --no-build-isolation -e .",
        "test_cmd": "python bin/test -C --verbose",
        "log_format": "sympy",
    },
)

SYNTHETIC_REPOS = [CALC, TEXTKIT, UNITS]
