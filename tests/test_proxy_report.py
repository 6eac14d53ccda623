"""bench/proxy_report.py: the per-(repository, version) rows of docs/validation-proxy.md."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from orchestrator.validation.sweep import SweepRecord

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("proxy_report", ROOT / "bench" / "proxy_report.py")
assert _spec is not None and _spec.loader is not None
proxy_report = importlib.util.module_from_spec(_spec)
sys.modules["proxy_report"] = proxy_report
_spec.loader.exec_module(proxy_report)


def _inst(iid: str, version: str = "3.0") -> dict:
    return {"instance_id": iid, "repo": "django/django", "version": version,
            "FAIL_TO_PASS": ["f"], "PASS_TO_PASS": ["p"]}  # fmt: skip


def _prep(iid: str, base: str = "b", test: str = "exact", gold: str = "exact") -> dict:
    return {"instance_id": iid, "proxy_base": base, "test_patch_method": test,
            "gold_patch_method": gold}  # fmt: skip


def _record(iid: str, ok: bool, **kw) -> SweepRecord:
    fields = {
        "instance_id": iid,
        "repo": "django/django",
        "version": "3.0",
        "ok": ok,
        "stage": "done" if ok else "setup",
        "python_spec": "3.6",
        "python_used": "3.9",
    }
    return SweepRecord(**(fields | kw))  # fmt: skip


def test_rows_count_each_stage_and_name_each_failure(tmp_path: Path) -> None:
    gold = tmp_path / "instances" / "django__django-1" / "validation_gold_output.txt"
    gold.parent.mkdir(parents=True)
    gold.write_text("f (m.T) ... ok\n")  # "p" is not in the output: not every test read
    dataset = [_inst(f"django__django-{n}") for n in range(1, 6)] + [
        _inst("django__django-9", "4.1")
    ]
    prepared = {
        "django__django-1": _prep("django__django-1", gold="fuzz"),
        "django__django-2": _prep("django__django-2"),
        "django__django-3": _prep("django__django-3", base=""),
        "django__django-4": _prep("django__django-4"),
        "django__django-9": _prep("django__django-9", base=""),
    }
    records = {
        "django__django-1": (_record("django__django-1", True, timings={"setup": 90.0}), tmp_path),
        "django__django-2": (
            _record("django__django-2", False, cause="install failed",
                    message="setup failed (pre-install): wget: unable to resolve host address"),
            tmp_path,
        ),
    }  # fmt: skip
    causes = {}
    rows = proxy_report.build_rows(dataset, prepared, records, causes, {"django__django-1": 90.0})
    row, other = rows
    assert (row.version, other.version) == ("3.0", "4.1")
    assert (row.total, row.tried, row.base_built, row.fuzz, row.swept) == (5, 4, 3, 1, 2)
    assert (row.env_built, row.runner_started, row.all_read, row.validated) == (1, 1, 0, 1)
    assert row.cold == [90.0] and row.python == "3.6 → 3.9"
    assert proxy_report._grouped(row.failures) == [
        "host × 1: set-up host out of reach (2)",
        "proxy × 1: patches do not reverse-apply (3)",
    ]
    text = proxy_report.markdown(rows, "1 h")
    assert "a proxy was attempted for 5 and its base built for 3" in text
    assert "**2 were swept**" in text and "**1 validate** (50 % of those swept)" in text
    assert "by owner: host 1;" in text and "**1 of 1 validate (100 %)**" in text


def test_code_that_does_not_compile_on_the_stand_in_python_is_the_pythons() -> None:
    """django-7530 (1.11, spec 3.5, run on 3.9): Django 1.11.0's admin widgets have an
    unparenthesized generator argument, an error since Python 3.7; runtests.py dies
    importing it (real gold output of the proxy sweep)."""
    out = ROOT / "tests" / "fixtures" / "proxy-logs" / "django--django__django-7530--gold.txt"
    record = _record("django__django-7530", False, stage="validation", cause="tests do not run",
                     version="1.11", python_spec="3.5", python_used="3.9.2")  # fmt: skip
    owner, cause = proxy_report._owner_and_cause(record, {}, out.read_text())
    assert owner == "python"
    assert "SyntaxError: Generator expression must be parenthesized" in cause
    assert "django/contrib/admin/widgets.py" in cause
    exact = record.model_copy(update={"python_spec": "3.9"})  # the spec's own Python: ours
    assert proxy_report._owner_and_cause(exact, {}, out.read_text())[0] == "ours"


def test_image_comparisons_with_debians_freetype_are_the_hosts() -> None:
    """matplotlib-24026 (3.6): built offline with Debian's freetype 2.12 (2.6.1's hosts are
    out of reach), its FAIL_TO_PASS test_stackplot[png] fails with gold on the image
    comparison (real gold output and set-up line of the proxy sweep)."""
    logs = ROOT / "tests" / "fixtures" / "proxy-logs"
    gold = (logs / "matplotlib--matplotlib__matplotlib-24026--gold.txt").read_text()
    setup = (logs / "matplotlib--matplotlib__matplotlib-24026--setup.txt").read_text()
    record = _record("matplotlib__matplotlib-24026", False, stage="validation",
                     cause="gold patch fails", repo="matplotlib/matplotlib", version="3.6",
                     python_spec="3.11", python_used="3.11.2")  # fmt: skip
    owner, cause = proxy_report._owner_and_cause(record, {}, gold, setup)
    assert (owner, cause.split(":")[0]) == (
        "host",
        "Debian's freetype instead of 2.6.1 (its hosts are out of reach)",
    )
    # built with freetype 2.6.1 (the download worked): the automatic owner, as before
    assert proxy_report._owner_and_cause(record, {}, gold, "")[0] == "proxy"


def test_the_default_dataset_is_the_shared_data_beside_the_repository():
    assert proxy_report.DATASET == ROOT.parent / "shared" / "data" / "swe-bench-verified.jsonl"
