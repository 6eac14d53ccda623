"""Log parsers against the real test logs and hand-written edge cases."""

from __future__ import annotations

import json
import subprocess
from functools import cache
from pathlib import Path

import pytest

from orchestrator.grading.log_parsers import (
    LOG_FORMATS,
    is_truncated,
    match_expected,
    parse_test_log,
    stricter_than_official,
)
from orchestrator.grading.markers import (
    END_MARKER,
    START_MARKER,
    extract_between_markers,
    format_end_line,
    wrap_test_command,
)
from orchestrator.grading.runner_summary import forged_output, runner_summary
from orchestrator.models import CaseStatus as TS

from .reference_data import SHARED_VERIFIED, SPECS, TEST_LOGS, VERIFIED, shared_data, verified_rows

LOGS = sorted(TEST_LOGS.glob("*.txt"))
NETWORK_TESTS = {
    "test_requests.py::TestTimeout::test_connect_timeout",
    "test_requests.py::TestTimeout::test_total_timeout_connect",
}
P, F, E, S, X = TS.PASSED, TS.FAILED, TS.ERROR, TS.SKIPPED, TS.XFAIL


@cache
def instances(path: Path = VERIFIED) -> dict[str, dict]:
    """The Verified rows by id: the excerpt of the fixtures unless told."""
    return {row["instance_id"]: row for row in verified_rows(path)}


@cache
def log_formats() -> dict[str, str]:
    return json.loads(SPECS.read_text())["log_format"]


def _passing(status: TS | None) -> bool:
    return status in (P, X)


# --------------------------------------------------------------------------- real logs


def test_real_logs_are_present() -> None:
    assert len(LOGS) >= 8
    assert {path.name.split("--")[0] for path in LOGS} >= {"pytest", "sympy", "seaborn"}


@pytest.mark.parametrize("path", LOGS, ids=lambda path: path.stem)
def test_real_log_grades_as_the_dataset_says(path: Path) -> None:
    log_format, instance_id, kind = path.stem.split("--")
    instance = instances()[instance_id]
    assert log_formats()[instance["repo"]] == log_format
    outcomes = parse_test_log(log_format, path.read_text(encoding="utf-8"))
    f2p = match_expected(instance["FAIL_TO_PASS"], outcomes)
    p2p = match_expected(instance["PASS_TO_PASS"], outcomes)
    assert f2p and p2p
    if kind == "gold":
        assert all(_passing(status) for status in f2p.values()), f2p
        failing = {name for name, status in p2p.items() if not _passing(status)}
        assert failing == (NETWORK_TESTS if instance_id == "psf__requests-2931" else set())
    else:
        assert all(status in (F, E) for status in f2p.values()), f2p
        assert all(_passing(status) for status in p2p.values())


def test_requests_network_tests_are_failed_not_missing() -> None:
    path = TEST_LOGS / "pytest_options--psf__requests-2931--gold.txt"
    outcomes = parse_test_log("pytest_options", path.read_text())
    assert {outcomes[name] for name in NETWORK_TESTS} == {F}
    # 81 tests error in setup (a recursive fixture) and must be reported as such
    assert sum(status == E for status in outcomes.values()) == 81


def test_nested_pytest_runs_and_captured_logs_do_not_add_junk() -> None:
    path = TEST_LOGS / "pytest--pytest-dev__pytest-10051--gold.txt"
    outcomes = parse_test_log("pytest", path.read_text())
    # ``ERROR    test_fixture:test_fixture.py:120 oops`` is a captured log line, not a test
    assert all("::" in name for name in outcomes)
    # the inner pytest run's failure is reported under its own (non-dataset) name
    assert (
        outcomes[
            "test_log_report_captures_according_to_config_option_upon_failure.py::test_that_fails"
        ]
        == F
    )


def test_sympy_file_tail_marker_is_parsed() -> None:
    # ``test_cosh_expansion ok    [OK]``: SWE-bench missed the last test of each file
    path = TEST_LOGS / "sympy--sympy__sympy-13480--gold.txt"
    outcomes = parse_test_log("sympy", path.read_text())
    assert outcomes["test_cosh_expansion"] == P
    assert len(outcomes) == 45


@pytest.mark.parametrize("path", LOGS, ids=lambda path: path.stem)
def test_real_logs_have_a_consistent_runner_summary(path: Path) -> None:
    summary = runner_summary(path.read_text(encoding="utf-8"))
    assert summary is not None
    reported = summary.reported or {}
    assert reported.get("PASSED", 0) == summary.counts.get("passed", 0)


# --------------------------------------------------------------------------- dataset names


def _dataset_names(repo_formats: set[str], path: Path = SHARED_VERIFIED) -> list[tuple[str, str]]:
    names = []
    for instance in instances(path).values():
        log_format = log_formats()[instance["repo"]]
        if log_format in repo_formats:
            for name in instance["FAIL_TO_PASS"] + instance["PASS_TO_PASS"]:
                names.append((log_format, name))
    return names


PYTEST_FORMATS = {"pytest", "pytest_options", "pytest_v2", "seaborn", "matplotlib"}


def test_the_excerpts_dataset_names_round_trip() -> None:
    """The checks below over every Verified name, on the names of the excerpt."""
    names = {f: _dataset_names({f}, VERIFIED) for f in ("pytest", "django", "sympy")}
    assert all(len(found) > 100 for found in names.values())
    pytest_names_round_trip(_dataset_names(PYTEST_FORMATS, VERIFIED))
    django_names_round_trip(names["django"])
    sympy_names_round_trip(names["sympy"])


@shared_data
def test_every_pytest_dataset_name_round_trips() -> None:
    names = _dataset_names(PYTEST_FORMATS)
    assert len(names) > 5000
    pytest_names_round_trip(names)


def pytest_names_round_trip(names: list[tuple[str, str]]) -> None:
    """A ``STATUS <id>`` line of any full dataset id parses back to that id."""
    bad = []
    for log_format, name in names:
        if is_truncated(name):
            continue
        text = f"PASSED {name}\nFAILED {name}x - AssertionError: boom\n"
        outcomes = parse_test_log(log_format, text)
        if outcomes.get(name) != P:
            bad.append((log_format, name, outcomes))
    assert not bad, bad[:5]


@shared_data
def test_every_truncated_dataset_name_matches_its_full_id() -> None:
    names = [pair for pair in _dataset_names(set(LOG_FORMATS)) if is_truncated(pair[1])]
    assert len(names) == 676
    for log_format, name in names:
        full = f"{name} with spaces]"
        outcomes = parse_test_log(log_format, f"PASSED {full}\n")
        assert full in outcomes, (log_format, name)
        assert match_expected([name], outcomes) == {name: P}


@shared_data
def test_every_django_dataset_name_round_trips() -> None:
    names = _dataset_names({"django"})
    assert len(names) > 15000
    django_names_round_trip(names)


def django_names_round_trip(names: list[tuple[str, str]]) -> None:
    for _, name in names:
        outcomes = parse_test_log("django", f"{name} ... ok\n")
        assert outcomes.get(name) == P, name


@shared_data
def test_every_sympy_dataset_name_round_trips() -> None:
    sympy_names_round_trip(_dataset_names({"sympy"}))


def sympy_names_round_trip(names: list[tuple[str, str]]) -> None:
    for _, name in names:
        assert parse_test_log("sympy", f"{name} ok\n{name}x F\n").get(name) == P, name


# --------------------------------------------------------------------------- pytest family


def test_pytest_short_summary_lines() -> None:
    text = "\n".join(
        [
            "PASSED tests/test_a.py::test_one",
            "PASSED tests/test_a.py::TestK::test_two[1-2]",
            "FAILED tests/test_a.py::test_three - AssertionError: assert [1] == [2]",
            "ERROR tests/test_a.py::test_four - RuntimeError: x",
            "ERROR tests/test_broken.py - ImportError: cannot import name 'y'",
            "XFAIL tests/test_a.py::test_five - reason: not yet",
            "XPASS tests/test_a.py::test_six unexpectedly passing",
            "SKIPPED [2] tests/test_a.py:40: needs numpy",
            "PASSED [100%]",
            "ERROR    root:test_a.py:6 a captured log line",
            "FAILED",
        ]
    )
    assert parse_test_log("pytest", text) == {
        "tests/test_a.py::test_one": P,
        "tests/test_a.py::TestK::test_two[1-2]": P,
        "tests/test_a.py::test_three": F,
        "tests/test_a.py::test_four": E,
        "tests/test_broken.py": E,
        "tests/test_a.py::test_five": X,
        "tests/test_a.py::test_six": P,
        "[100%]": P,
    }


def test_ansi_colour_codes_are_stripped() -> None:
    text = (
        "\x1b[32mPASSED\x1b[0m tests/test_a.py::test_one\n"
        "\x1b[31m\x1b[1mFAILED\x1b[0m tests/test_a.py::test_two - \x1b[31massert 0\x1b[0m\n"
        "tests/test_a.py::test_three \x1b[32mPASSED\x1b[0m\x1b[32m [ 50%]\x1b[0m\r\n"
    )
    assert parse_test_log("pytest_v2", text) == {
        "tests/test_a.py::test_one": P,
        "tests/test_a.py::test_two": F,
        "tests/test_a.py::test_three": P,
    }


@pytest.mark.parametrize("log_format", ["pytest_v2", "seaborn"])
def test_status_after_name_lines(log_format: str) -> None:
    text = "\n".join(
        [
            "astropy/io/tests/test_x.py::test_a PASSED",
            "astropy/io/tests/test_x.py::test_b FAILED",
            "astropy/io/tests/test_x.py::test_c[a b] ERROR",
            "astropy/io/tests/test_x.py::test_d SKIPPED",
            "astropy/io/tests/test_x.py::test_e XFAIL [ 80%]",
            "tests/_core/test_plot.py::TestInit::test_empty PASSED                   [100%]",
            "astropy/io/tests/test_x.py ....F.                                        [100%]",
            "something else PASSED",
        ]
    )
    assert parse_test_log(log_format, text) == {
        "astropy/io/tests/test_x.py::test_a": P,
        "astropy/io/tests/test_x.py::test_b": F,
        "astropy/io/tests/test_x.py::test_c[a b]": E,
        "astropy/io/tests/test_x.py::test_d": S,
        "astropy/io/tests/test_x.py::test_e": X,
        "tests/_core/test_plot.py::TestInit::test_empty": P,
    }


def test_plain_pytest_format_ignores_status_after_name() -> None:
    assert parse_test_log("pytest", "tests/test_x.py::test_a PASSED\n") == {}


def test_matplotlib_ids_with_spaces_and_brackets_are_kept_verbatim() -> None:
    text = "\n".join(
        [
            "PASSED lib/matplotlib/tests/test_axes.py::test_stem[png-w/ line collection]",
            "FAILED lib/matplotlib/tests/test_axes.py::test_stem[png-w/o line collection] - "
            "AssertionError: images not close [1]",
            "PASSED lib/matplotlib/tests/test_widgets.py::test_span[MouseButton.LEFT-x]",
            "PASSED lib/matplotlib/tests/test_text.py::test_x[[1, 2]-y]",
        ]
    )
    outcomes = parse_test_log("matplotlib", text)
    assert outcomes == {
        "lib/matplotlib/tests/test_axes.py::test_stem[png-w/ line collection]": P,
        "lib/matplotlib/tests/test_axes.py::test_stem[png-w/o line collection]": F,
        "lib/matplotlib/tests/test_widgets.py::test_span[1-x]": P,
        "lib/matplotlib/tests/test_text.py::test_x[[1, 2]-y]": P,
    }
    # the dataset's truncated ids: "w/" and "w/o" must not be confused
    expected = [
        "lib/matplotlib/tests/test_axes.py::test_stem[png-w/",
        "lib/matplotlib/tests/test_axes.py::test_stem[png-w/o",
    ]
    assert match_expected(expected, outcomes) == {expected[0]: P, expected[1]: F}


def test_pytest_options_shortens_absolute_path_parameters() -> None:
    text = (
        "PASSED tests/test_self.py::test_run[/tmp/pytest-of-root/pytest-0/data/file.py]\n"
        "PASSED tests/test_self.py::test_keep[//double]\n"
        "PASSED tests/test_self.py::test_glob[/a/*.py]\n"
    )
    assert parse_test_log("pytest_options", text) == {
        "tests/test_self.py::test_run[/file.py]": P,
        "tests/test_self.py::test_keep[//double]": P,
        "tests/test_self.py::test_glob[/a/*.py]": P,
    }


def test_failing_report_beats_passing_report() -> None:
    # passed the call, errored in teardown; and a fake line printed after the real one
    text = (
        "PASSED tests/t.py::test_a\n"
        "ERROR tests/t.py::test_a - teardown failed\n"
        "FAILED tests/t.py::test_b - assert 0\n"
        "PASSED tests/t.py::test_b\n"
        "SKIPPED tests/t.py::test_c\n"
        "PASSED tests/t.py::test_c\n"
        "XFAIL tests/t.py::test_d\n"
        "PASSED tests/t.py::test_d\n"
        "PASSED tests/t.py::test_e\n"
        "PASSED tests/t.py::test_e\n"
    )
    assert parse_test_log("pytest", text) == {
        "tests/t.py::test_a": E,
        "tests/t.py::test_b": F,
        # two different outcomes for one test: something else printed one, it fails
        "tests/t.py::test_c": F,
        "tests/t.py::test_d": F,
        "tests/t.py::test_e": P,
    }


def test_unknown_log_format_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown log format"):
        parse_test_log("nose", "")


# --------------------------------------------------------------------------- django

DJANGO_LOG = """\
Testing against Django installed in '/testbed/django' with up to 2 processes
Creating test database for alias 'default' ('file:memorydb_default?mode=memory&cache=shared')...
System check identified no issues (0 silenced).
test_ok (admin_views.tests.AdminViewTests) ... ok
test_fail (admin_views.tests.AdminViewTests) ... FAIL
test_error (admin_views.tests.AdminViewTests) ... ERROR
test_skip (admin_views.tests.AdminViewTests) ... skipped 'No support for: x ... y'
test_xfail (admin_views.tests.AdminViewTests) ... expected failure
test_xpass (admin_views.tests.AdminViewTests) ... unexpected success
test_docstring (admin_views.tests.AdminViewTests)
A lazy callable may be used for ForeignKey.default. ... ok
test_output (admin_views.tests.AdminViewTests) ... Internal Server Error: /test_admin/admin/
Traceback (most recent call last):
  File "/testbed/django/core/handlers/exception.py", line 47, in inner
ValueError: ok
ok
test_system_check (check_framework.tests.Tests) ... System check identified no issues (0 silenced).
ok
Applying sites.0002_alter_domain_unique...test_no_migrations (migrations.test_x.T) ... ok
test_new_style (model_fields.tests.T.test_new_style) ... ok
test_sub (forms_tests.tests.T) ... FAIL
test_doc_fail (admin_views.tests.AdminViewTests)
Regression test for #12345 ... FAIL

======================================================================
ERROR: test_error (admin_views.tests.AdminViewTests)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/tests/admin_views/tests.py", line 10, in test_error
    raise RuntimeError("boom")
RuntimeError: boom

======================================================================
FAIL: test_sub (forms_tests.tests.T) (value=3)
----------------------------------------------------------------------
AssertionError: 3 != 4

======================================================================
FAIL: test_doc_fail (admin_views.tests.AdminViewTests)
Regression test for #12345
----------------------------------------------------------------------
AssertionError: spans
several lines ... ok

----------------------------------------------------------------------
Ran 13 tests in 0.321s

FAILED (failures=3, errors=1, skipped=1, expected failures=1, unexpected successes=1)
"""


def test_django_results() -> None:
    outcomes = parse_test_log("django", DJANGO_LOG)
    cls = "(admin_views.tests.AdminViewTests)"
    assert outcomes[f"test_ok {cls}"] == P
    assert outcomes[f"test_fail {cls}"] == F
    assert outcomes[f"test_error {cls}"] == E
    assert outcomes[f"test_skip {cls}"] == S
    assert outcomes[f"test_xfail {cls}"] == X
    assert outcomes[f"test_xpass {cls}"] == F
    # the dataset names a test with a docstring by the docstring's first line
    assert outcomes["A lazy callable may be used for ForeignKey.default."] == P
    assert outcomes[f"test_docstring {cls}"] == P
    # output between `...` and the result, over several lines
    assert outcomes[f"test_output {cls}"] == P
    assert outcomes["test_system_check (check_framework.tests.Tests)"] == P
    assert outcomes["test_no_migrations (migrations.test_x.T)"] == P
    assert outcomes["test_new_style (model_fields.tests.T.test_new_style)"] == P
    assert outcomes["test_sub (forms_tests.tests.T)"] == F
    assert outcomes["Regression test for #12345"] == F
    assert outcomes[f"test_doc_fail {cls}"] == F
    # an assertion message ending in " ... ok" adds a junk name but cannot pass a real test
    assert outcomes["Regression test for #12345"] == F


def test_django_failure_header_overrides_a_printed_ok() -> None:
    text = "test_a (m.T) ... ok\n" + "=" * 70 + "\nFAIL: test_a (m.T)\n" + "-" * 70 + "\n"
    assert parse_test_log("django", text) == {"test_a (m.T)": F}


def test_django_run_verdict_is_not_a_test_result() -> None:
    text = "test_a (m.T) ... printing\n\nRan 1 test in 0.1s\n\nOK\n"
    assert parse_test_log("django", text) == {}


# --------------------------------------------------------------------------- sympy

SYMPY_LOG = """\
============================= test process starts ==============================
executable:         /venv/bin/python  (3.9.2-final-0) [CPython]

sympy/core/tests/test_basic.py[8]
test_ok ok
test_fail F
test_error E
test_xfail f
test_xpass X
test_skip requires numpy s
test_slow Slow w
test_warn /testbed/sympy/core/basic.py:3: DeprecationWarning: Using or importing the ABCs
  from collections import Mapping
ok
test_last ok                                                              [FAIL]

________________________________________________________________________________
_____________ sympy/core/tests/test_basic.py:test_fail _______________
AssertionError
_____________ sympy/core/tests/test_basic.py:test_lost ________________
Traceback (most recent call last):
ZeroDivisionError

======= tests finished: 3 passed, 2 failed, 2 skipped, 1 expected to fail, \
1 expected to fail but passed, 1 exceptions, in 0.10 seconds =======
DO *NOT* COMMIT!
"""


def test_sympy_results() -> None:
    assert parse_test_log("sympy", SYMPY_LOG) == {
        "test_ok": P,
        "test_fail": F,
        "test_error": E,
        "test_xfail": X,
        "test_xpass": F,
        "test_skip": S,
        "test_slow": S,
        "test_warn": P,
        "test_last": P,
        "test_lost": F,  # only its failure report survived
    }


# --------------------------------------------------------------------------- markers


def test_extract_between_markers() -> None:
    text = f"setup noise\n{START_MARKER}\nPASSED a::b\n{format_end_line(1)}\n"
    assert extract_between_markers(text, START_MARKER, END_MARKER) == ("PASSED a::b\n", 1)


def test_extract_uses_the_last_end_and_the_last_start_before_it() -> None:
    text = "\n".join(
        [
            START_MARKER,  # printed by a patched setup.py during a reinstall
            "PASSED fake::test",
            START_MARKER,
            "FAILED real::test",
            format_end_line(0),  # printed by the code under test
            "more output",
            format_end_line(1),
            "",
        ]
    )
    section, exit_code = extract_between_markers(text)
    assert exit_code == 1
    assert section is not None
    assert "fake::test" not in section
    assert "FAILED real::test" in section and "more output" in section


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no markers at all\n", (None, None)),
        (f"{START_MARKER}\nrunning...\n", (None, None)),
        (f"output\n{format_end_line(2)}\n", (None, 2)),
        (f"{START_MARKER}\nx\n{END_MARKER}\n", ("x\n", None)),
        (f"{START_MARKER}\r\nx\r\n{format_end_line(-9)}\r\n", ("x\n", -9)),
        (f"echo {START_MARKER}\nx\n{format_end_line(0)}\n", (None, 0)),
    ],
)
def test_extract_edge_cases(text: str, expected: tuple) -> None:
    section, code = extract_between_markers(text, START_MARKER, END_MARKER)
    if section is not None:
        section = section.replace("\r", "")
    assert (section, code) == expected


def test_wrapped_command_under_set_e_reports_its_exit_code(tmp_path: Path) -> None:
    script = "set -e\n" + wrap_test_command("echo 'PASSED a.py::t'; exit 3") + "\n"
    run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    section, exit_code = extract_between_markers(run.stdout)
    assert exit_code == 3
    assert parse_test_log("pytest", section or "") == {"a.py::t": P}


def test_with_a_nonce_only_the_script_s_own_markers_count() -> None:
    nonce = "0123456789abcdef"
    text = "\n".join(
        [
            f"{START_MARKER} {nonce}",
            "FAILED t.py::test_real",
            START_MARKER,  # the code under test imitates the markers, without the nonce
            "PASSED t.py::test_real",
            f"{START_MARKER} guessed",
            format_end_line(0),
            format_end_line(1, nonce),
            format_end_line(0, "guessed"),  # printed later by a leftover process
            "",
        ]
    )
    section, exit_code = extract_between_markers(text, nonce=nonce)
    assert exit_code == 1
    assert section is not None and section.startswith("FAILED t.py::test_real\n")
    assert forged_output(section) is not None and "imitates" in forged_output(section)


PYTEST_RUN = (
    "============================= test session starts ==============================\n"
    "collected 2 items\n\nt.py .F\n"
    "=========================== short test summary info ============================\n"
    "PASSED t.py::test_a\nFAILED t.py::test_b - assert 0\n"
    "========================= 1 failed, 1 passed in 0.05s ==========================\n"
)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (PYTEST_RUN, None),
        # a forged closing line after the real one (printed at exit)
        (PYTEST_RUN + "============ 2 passed in 0.01s ============\n", "2 closing pytest"),
        # nested runs before the top-level short summary are normal (pytester with -rA)
        ("======= 3 passed in 0.01s =======\n======= 1 failed in 0.01s =======\n" + PYTEST_RUN,
         None),
        ("test_a (m.C) ... ok\n\nRan 1 test in 0.001s\n\nOK\n", None),
        ("test_a (m.C) ... FAIL\nRan 1 test in 0.001s\nFAILED (failures=1)\n"
         "test_a (m.C) ... ok\nRan 1 test in 0.001s\nOK\n", "2 closing django"),
        ("test_a F\n=== tests finished: 0 passed, 1 failed ===\n"
         "test_a ok\n=== tests finished: 1 passed ===\n", "2 closing sympy"),
        (f"PASSED t.py::test_a\n  {END_MARKER} exit=0\n", "a line in the test output imitates"),
    ],
    ids=["pytest", "pytest-twice", "pytest-nested", "django", "django-twice", "sympy-twice",
         "marker"],
)  # fmt: skip
def test_forged_output_rules(text: str, reason: str | None) -> None:
    found = forged_output(text)
    assert found is None if reason is None else (found or "").startswith(reason), found


@pytest.mark.parametrize("path", LOGS, ids=[p.stem for p in LOGS])
def test_real_runner_logs_are_not_taken_for_forgeries(path: Path) -> None:
    assert forged_output(path.read_text(errors="replace")) is None


# --------------------------------------------------------------------------- match_expected


def test_match_expected() -> None:
    outcomes = {
        "t.py::test_a": P,
        "t.py::test_p[a b]": P,
        "t.py::test_p[a c]": P,
        "t.py::test_q[x y]": P,
        "t.py::test_q[x z]": F,
        "t.py::test_r[ab c]": P,
    }
    assert match_expected(
        ["t.py::test_a", "t.py::test_p[a", "t.py::test_q[x", "t.py::test_r[a", "t.py::gone"],
        outcomes,
    ) == {
        "t.py::test_a": P,
        "t.py::test_p[a": P,  # both candidates pass
        "t.py::test_q[x": None,  # candidates disagree
        "t.py::test_r[a": None,  # "ab c" does not continue "a" after a space
        "t.py::gone": None,
    }


def test_match_expected_prefers_an_exact_name() -> None:
    assert match_expected(["t.py::x[a"], {"t.py::x[a": F, "t.py::x[a b]": P}) == {"t.py::x[a": F}


# --------------------------------------------------------------------------- runner summaries


@pytest.mark.parametrize(
    ("line", "counts"),
    [
        ("===== 249 passed in 129.06s (0:02:09) =====", {"passed": 249}),
        (
            "==== 1 failed, 1 passed, 1 error in 0.20 seconds ====",
            {"failed": 1, "passed": 1, "error": 1},
        ),
        ("= 3 passed, 2 skipped, 1 deselected, 4 warnings in 1.0s =", {"passed": 3, "skipped": 2}),
        (
            "==== 1 xfailed, 2 xpassed, 5 errors in 2s ====",
            {"xfailed": 1, "xpassed": 2, "error": 5},
        ),
        ("============ no tests ran in 0.01s ============", {}),
        ("\x1b[31m====== \x1b[1m1 failed\x1b[0m in 0.1s ======\x1b[0m", {"failed": 1}),
    ],
)
def test_pytest_closing_lines(line: str, counts: dict[str, int]) -> None:
    summary = runner_summary(f"collected 1 item\n{line}\n")
    assert summary is not None and summary.runner == "pytest"
    assert summary.counts == counts
    assert summary.reported is None  # no short test summary section


def test_django_and_sympy_closing_lines() -> None:
    django = runner_summary(DJANGO_LOG)
    assert django is not None and django.runner == "django"
    assert django.counts == {
        "ran": 13,
        "failed": 3,
        "error": 1,
        "skipped": 1,
        "xfailed": 1,
        "xpassed": 1,
    }
    sympy = runner_summary(SYMPY_LOG)
    assert sympy is not None and sympy.runner == "sympy"
    assert sympy.counts == {
        "passed": 3,
        "failed": 2,
        "skipped": 2,
        "xfailed": 1,
        "xpassed": 1,
        "error": 1,
    }
    assert sympy.reported == {"PASSED": 3, "FAILED": 2, "ERROR": 1, "XFAIL": 1, "SKIPPED": 2}


def test_no_runner_summary() -> None:
    assert runner_summary("Traceback (most recent call last):\nImportError: x\n") is None
    assert runner_summary("PASSED tests/t.py::test_a\n") is None


def test_the_last_runner_summary_counts() -> None:
    # a sympy test that prints a pytest-like line before sympy's own summary
    text = "=== 1 passed in 0.1s ===\ntest_a ok\n=== tests finished: 1 passed, in 0.2 seconds ===\n"
    summary = runner_summary(text)
    assert summary is not None and summary.runner == "sympy"


def test_a_nested_run_short_summary_is_not_taken_for_the_outer_one() -> None:
    # the outer pytest printed no short summary; an inner (pytester) run did
    text = "\n".join(
        [
            "=========================== short test summary info ============================",
            "XFAIL test_inner.py::test_x - reason",
            "============================== 1 xfailed in 0.01s ==============================",
            "testing/test_outer.py::test_runs_inner PASSED",
            "============================== 1 passed in 0.20s ===============================",
        ]
    )
    summary = runner_summary(text)
    assert summary is not None and summary.counts == {"passed": 1}
    assert summary.reported is None


def test_a_long_sympy_summary_printed_bare_and_wrapped_is_the_runner_s():
    """sympy centres its summary between '=' only when it fits the terminal (sympy-18189)."""
    from orchestrator.grading.classify import detect_test_crash

    section = (
        "test_diophantine ok\ntest_quadratic F\ntest_other f\ntest_more f\ntest_skip s\n"
        + "".join(f"test_{i} ok\n" for i in range(41))
        + " tests finished: 42 passed, 1 failed, 1 skipped, 2 expected to fail, \n"
        "in 115.50 seconds \nDO *NOT* COMMIT!\n"
    )
    summary = runner_summary(section)
    assert summary is not None and summary.runner == "sympy"
    assert summary.counts == {"passed": 42, "failed": 1, "skipped": 1, "xfailed": 2}
    outcomes = parse_test_log("sympy", section)
    assert detect_test_crash(1, section, outcomes) is None


def test_unittest_runs_inside_pytest_s_own_tests_are_no_second_summary():
    """pytest's own tests run unittest cases that print "Ran 1 test" (pytest-10081, -7236)."""
    section = (
        "testing/test_unittest.py ..\n----------------------------------------------------------"
        "------------\nRan 1 test in 0.001s\n\nOK\n"
        "----------------------------------------------------------------------\n"
        "Ran 1 test in 0.002s\n\nOK\n"
        "=========================== short test summary info ============================\n"
        "PASSED testing/test_unittest.py::test_a\nPASSED testing/test_unittest.py::test_b\n"
        "============================== 2 passed in 0.10s ===============================\n"
    )
    assert forged_output(section) is None
    twice = section + "=============== 2 passed in 0.10s ===============\n"
    assert forged_output(twice) == "2 closing pytest summaries where the runner prints one"


# --------------------------------------------------------------------------- duplicate names


def test_sympy_one_name_in_several_files_takes_the_last_as_officially() -> None:
    # a real shape: test_MatrixSymbol_printing is a test of the str, pretty and latex printers
    log = (
        "sympy/printing/tests/test_str.py[2]\ntest_a ok\ntest_MatrixSymbol_printing ok\n"
        "sympy/printing/pretty/tests/test_pretty.py[1]\ntest_MatrixSymbol_printing F\n"
        "sympy/printing/tests/test_latex.py[1]\ntest_MatrixSymbol_printing ok\n"
    )
    assert parse_test_log("sympy", log)["test_MatrixSymbol_printing"] == P
    assert stricter_than_official("sympy", log) == []


@pytest.mark.parametrize(
    ("log", "stricter"),
    [
        # a forged line in the test's own section
        ("sympy/core/tests/test_basic.py[2]\ntest_x F\ntest_x ok\ntest_y ok\n", ["test_x"]),
        # in another file's section: more results than the section announces
        ("a/tests/test_a.py[1]\ntest_x F\nb/tests/test_b.py[1]\ntest_y ok\ntest_x ok\n",
         ["test_x"]),
        # before any section line (officially the last, F, wins too)
        ("test_x ok\na/tests/test_a.py[1]\ntest_x F\n", []),
    ],
    ids=["same-section", "extra-line-elsewhere", "outside-sections"],
)  # fmt: skip
def test_sympy_a_forged_duplicate_still_fails(log: str, stricter: list[str]) -> None:
    assert parse_test_log("sympy", log)["test_x"] == F
    assert stricter_than_official("sympy", log) == stricter


def test_pytest_conflicting_reports_fail_stricter_than_officially() -> None:
    log = "FAILED tests/test_a.py::test_x - boom\nPASSED tests/test_a.py::test_x\n"
    assert parse_test_log("pytest", log)["tests/test_a.py::test_x"] == F
    assert stricter_than_official("pytest", log) == ["tests/test_a.py::test_x"]
    assert stricter_than_official("pytest", "PASSED tests/test_a.py::test_x\n") == []


def test_sympy_slowest_tests_list_is_no_result():
    """sympy lists its slowest tests after the results (``test_x - Took N seconds``); a later
    traceback line that ends in a status word (``..., in f``: a function named f) is no
    result of that test: it stays passed, and the run's counts match its summary."""

    text = "\n".join(
        [
            "sympy/simplify/tests/test_simplify.py[3] ",
            "test_simplify_expr ok",
            "test_slow_other ok",
            "test_issue_17137 E                                                        [FAIL]",
            "",
            "________________________________ slowest tests _________________________________",
            "test_simplify_expr - Took 59.757 seconds",
            "________________________________________________________________________________",
            "____________ sympy/simplify/tests/test_simplify.py:test_issue_17137 ____________",
            "Traceback (most recent call last):",
            '  File "/testbed/sympy/simplify/fu.py", line 1525, in f',
            "TypeError: Invalid comparison of complex -I",
            "",
            " tests finished: 2 passed, 1 exceptions, in 60.1 seconds ",
        ]
    )
    parsed = parse_test_log("sympy", text)
    assert parsed["test_simplify_expr"] == TS.PASSED
    assert parsed["test_issue_17137"] == TS.ERROR
    summary = runner_summary(text)
    assert summary is not None and summary.reported == {"PASSED": 2, "ERROR": 1}
