"""Every cache is crash-safe: written whole or not at all, and an entry that cannot be read (an
empty or truncated file, as a ``kill -9`` during a non-atomic write left them) is a miss with a
warning, rebuilt by the next write."""

from __future__ import annotations

import json
import os

import pytest
import structlog

from orchestrator.atomic import atomic_write_text, read_cached
from orchestrator.context.run_context import RunContext
from orchestrator.context.run_dir import RunDir
from orchestrator.environments.failed_builds import (
    _failure_path,
    failed_build,
    remember_failed_build,
)
from orchestrator.housekeeping.active import active_run
from orchestrator.leases import LEASES_DIR as ACTIVE_RUNS_DIR
from orchestrator.models import Instance, InstanceResult, Status
from orchestrator.sandbox.local import LocalBackend
from orchestrator.settings import Settings
from orchestrator.validation.sweep import RECORD, SweepRecord, load_record, load_records
from orchestrator.validation.validation import Validation, cached_validation

INSTANCE = Instance(
    instance_id="demo__calc-1", repo="demo/calc", base_commit="a" * 40,
    environment_setup_commit="b" * 40,
)  # fmt: skip
BROKEN = {"empty": "", "truncated": None}  # None: the first half of a good entry


def _broken(good: str, kind: str) -> str:
    return good[: len(good) // 2] if BROKEN[kind] is None else str(BROKEN[kind])


@pytest.fixture
def warnings():
    with structlog.testing.capture_logs() as logs:
        yield logs


def _warned(logs: list[dict], cache: str) -> bool:
    return any(
        e["log_level"] == "warning" and e.get("cache") == cache and "rebuilt" in e["event"]
        for e in logs
    )


def test_an_atomic_write_that_fails_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "entry.json"
    atomic_write_text(path, '{"old": 1}')

    def boom(*args, **kwargs):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_text(path, '{"new": 2}')
    assert path.read_text() == '{"old": 1}'
    assert [p.name for p in tmp_path.iterdir()] == ["entry.json"]  # no temporary file left


@pytest.mark.parametrize("kind", BROKEN)
def test_a_broken_validation_cache_entry_is_a_miss_then_rebuilt(tmp_path, kind, warnings):
    good = Validation(ok=True, message="ok").model_dump_json()
    path = tmp_path / "validation" / "tag-u.json"
    path.parent.mkdir()
    path.write_text(_broken(good, kind))
    assert cached_validation(path) is None
    assert _warned(warnings, "validation")
    atomic_write_text(path, good)  # what validate writes after validating again
    cached = cached_validation(path)
    assert cached is not None and cached.ok


@pytest.mark.parametrize("kind", BROKEN)
def test_a_broken_failed_build_entry_is_a_miss_then_rebuilt(tmp_path, kind, warnings):
    ctx = RunContext(
        Settings(data_dir=tmp_path / "data"), LocalBackend(), "run-1", RunDir(tmp_path / "run")
    )
    remember_failed_build(ctx, "key1", INSTANCE, "setup failed: no wheel for x")
    path = _failure_path(ctx, "key1")
    path.write_text(_broken(path.read_text(), kind))
    assert failed_build(ctx, "key1") is None
    assert _warned(warnings, "failed builds")
    remember_failed_build(ctx, "key1", INSTANCE, "setup failed: no wheel for x")
    assert "no wheel for x" in (failed_build(ctx, "key1") or "")


@pytest.mark.parametrize("kind", BROKEN)
def test_a_broken_sweep_record_is_a_miss(tmp_path, kind, warnings):
    record = SweepRecord(
        instance_id="demo__calc-1", repo="demo/calc", version="0.1", ok=True, stage="done"
    )
    path = tmp_path / "instances" / "demo__calc-1" / RECORD
    path.parent.mkdir(parents=True)
    path.write_text(_broken(record.model_dump_json(indent=1), kind))
    assert load_record(path) is None
    assert load_records(tmp_path) == []  # the sweep validates the instance again
    assert _warned(warnings, "sweep record")


@pytest.mark.parametrize("kind", BROKEN)
def test_a_broken_run_config_and_result_are_misses(tmp_path, kind):
    run = RunDir(tmp_path / "run")
    run.write_config({"participant": "gold"})
    run.config_path.write_text(_broken(run.config_path.read_text(), kind))
    assert run.read_config() == {}
    result = InstanceResult(instance_id="demo__calc-1", status=Status.RESOLVED)
    path = run.write_result(result)
    path.write_text(_broken(path.read_text(), kind))
    assert run.finished_ids() == set()  # a resumed run grades the instance again
    run.write_result(result)
    assert run.finished_ids() == {"demo__calc-1"}


@pytest.mark.parametrize("kind", BROKEN)
def test_a_broken_active_run_marker_is_skipped(tmp_path, kind):
    from orchestrator.housekeeping.active import active_runs

    with active_run(_NoContainers(), tmp_path, "run-1", ["demo__calc-1"]) as marker:
        marker.write_text(_broken(marker.read_text(), kind))
        assert "run-1" not in active_runs(_NoContainers(), tmp_path)
    assert not (tmp_path / ACTIVE_RUNS_DIR / "run-1.json").exists()


def test_read_cached_reads_a_good_entry(tmp_path):
    path = tmp_path / "x.json"
    atomic_write_text(path, json.dumps({"a": 1}))
    assert read_cached(path, json.loads, "x") == {"a": 1}
    assert read_cached(tmp_path / "missing.json", json.loads, "x") is None


class _NoContainers:
    """A backend with no containers (what active_runs asks besides the markers)."""

    def containers(self, labels: dict[str, str]) -> list:
        return []
