"""Which tests of the wider run exercise what the gold patch changes: the functions its hunks
change, read from the base code, and the tests whose code names one (pure)."""

from __future__ import annotations

from orchestrator.diffs.diff import Patch
from orchestrator.grading.wider.reach import (
    changed_lines,
    changed_names,
    gold_functions,
    name_parts,
    reach_of,
)

# a module in requests' style, at the base commit
UTILS = '''\
"""Utilities."""
import os

DEFAULT_CA = "certs.pem"


class Session:
    trust_env = True

    def __init__(self, url):
        self.url = url

    def _prepare(self):
        return self.url

    def send(self, request):
        def hook(response):
            return response

        return hook(request)


def super_len(o):
    return len(o)


if os.name == "nt":

    def proxy_bypass(host):
        return False
'''

GOLD = """\
diff --git a/requests/utils.py b/requests/utils.py
--- a/requests/utils.py
+++ b/requests/utils.py
@@ -16,7 +16,8 @@ class Session:
     def send(self, request):
         def hook(response):
-            return response
+            return response or None

         return hook(request)


@@ -23,4 +24,5 @@ class Session:
 def super_len(o):
+    o = o or ""
     return len(o)


diff --git a/requests/new.py b/requests/new.py
new file mode 100644
--- /dev/null
+++ b/requests/new.py
@@ -0,0 +1 @@
+def brand_new(): pass
"""


def test_a_hunk_changes_the_lines_it_removes_and_the_line_an_addition_follows():
    assert changed_lines(Patch.parse(GOLD)) == {"requests/utils.py": {18, 23}}


def test_a_changed_line_names_the_functions_enclosing_it():
    # a nested function's line names it and the method around it, not the class
    assert changed_names(UTILS, [18]) == {"send", "hook"}
    assert changed_names(UTILS, [23]) == {"super_len"}
    # a private method names its class too
    assert changed_names(UTILS, [14]) == {"_prepare", "Session"}
    # a special method names its class; the class's own body names the class
    assert changed_names(UTILS, [11]) == {"Session"}
    assert changed_names(UTILS, [8]) == {"Session"}
    # outside any definition: what the statement assigns; a blank line names nothing
    assert changed_names(UTILS, [4]) == {"DEFAULT_CA"}
    assert changed_names(UTILS, [5]) == set()
    # a definition inside a compound statement is still found
    assert changed_names(UTILS, [30]) == {"proxy_bypass"}
    assert changed_names("def f(:\n", [1]) == set()  # does not parse: nothing


def test_the_gold_functions_come_from_the_modules_it_changes_at_the_base():
    patch = Patch.parse(GOLD)
    assert gold_functions(patch, {"requests/utils.py": UTILS}) == ["hook", "send", "super_len"]
    # the module it adds, and a module not read, name nothing
    assert gold_functions(patch, {}) == []


TESTS = '''\
import pytest
from requests.utils import super_len as length


def test_length():
    assert length("ab") == 2


def test_described():
    """super_len of a string"""
    # super_len is not called here
    assert "super_len"


@pytest.fixture
def sized(raw):
    return length(raw)


@pytest.fixture
def raw():
    return "ab"


def test_fixture(sized):
    assert sized == 2


def test_raw(raw):
    assert raw


if True:

    def test_conditional():
        assert length("")


class TestSession:
    def setup_method(self):
        self.session = make()
        self.session.send(None)

    def test_url(self):
        assert self.session.url


class TestOther:
    def test_unrelated(self):
        assert True

    @pytest.mark.parametrize("value", [1])
    def test_sends(self, value):
        assert client().send(value)
'''


def test_a_test_exercises_a_gold_function_when_its_code_or_its_class_s_names_it():
    reach = reach_of({"tests/test_utils.py": TESTS}, ["send", "super_len"])
    covered = {
        "tests/test_utils.py::test_length": True,  # an imported name
        "tests/test_utils.py::test_described": False,  # a string and a comment only
        "tests/test_utils.py::test_fixture": True,  # a fixture it asks for names it
        "tests/test_utils.py::test_raw": False,  # its fixture names nothing changed
        "tests/test_utils.py::test_conditional": True,  # defined under an `if`
        "tests/test_utils.py::TestSession::test_url": True,  # its class's setup names it
        "tests/test_utils.py::TestOther::test_unrelated": False,
        "tests/test_utils.py::TestOther::test_sends[1]": True,  # parametrized
        "tests/test_other.py::test_length": False,  # another module
        "tests/test_utils.py::TestSession::test_length": False,  # another class
        "test_length": True,  # sympy: by the bare name, in any module
        "test_url (test_utils.TestSession)": True,  # django: by name and class
        "test_url (test_utils.TestOther)": False,
        "test_unrelated": False,
        "a description of a test": False,
    }
    assert {name: reach.covers(name) for name in covered} == covered
    # a runner rooted below the repository names the module by its tail
    assert reach.covers("test_utils.py::test_length")
    assert not reach_of({"tests/test_utils.py": TESTS}, []).covers("test_length")


def test_a_runner_s_test_name_is_read_in_its_parts():
    assert name_parts("a/t.py::TestA::TestB::test_b[x::y]") == (
        "a/t.py",
        ("TestA", "TestB"),
        "test_b",
    )
    assert name_parts("test_x (app.tests.C)") == (None, ("C",), "test_x")
    assert name_parts("test_x (app.tests.C.test_x)") == (None, ("C",), "test_x")
    assert name_parts("test_q") == (None, None, "test_q")
    assert name_parts("Checks the thing.") == (None, None, "")
