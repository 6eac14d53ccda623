"""A run's results in the official SWE-bench harness's layout, beside our own.

Every run also writes, under ``<run>/swebench/``::

    logs/run_evaluation/<run_id>/<model>/<instance_id>/
        report.json        the official per-instance report (schema of ``get_eval_report``)
        patch.diff         the graded patch
        test_output.txt    the test command's output, between the official markers
        eval.sh            the script that ran the tests
        run_instance.log   what happened to the instance, in a few lines
    logs/run_evaluation/<run_id>/run.json
                       what the run graded against (``write_run_metadata``): the dataset
                       as the harness names it, its split and task repository
    <model>.<run_id>.json  the official run summary (``make_run_report``, schema 2)

``<model>`` is the participant's id with ``/`` as ``__``, as the harness names it. The
official tools resolve ``logs/run_evaluation`` from the working directory, so they read
these files unchanged when run from ``<run>/swebench`` (``swebench report``, analysis
scripts, the harness's own ``make_run_report``); ``swebench report <run_id>`` re-grades the
saved test output against the dataset ``run.json`` names, without being told it. The layout
is always written: it is a few small files per instance, and a copy in another place is a
``cp -r`` away.

How our verdicts map onto the official categories (the summary's numbers equal
``results.json``'s):

* ``resolved`` is our ``resolved``; every other graded verdict is ``unresolved``;
* an ``error`` of ours has no ``report.json`` (as an instance the official harness could not
  evaluate), so it is in ``error_ids``;
* a prediction with an empty patch has no instance directory (the official harness does not
  run it), so it is in ``empty_patch_ids``;
* a patch that did not apply has a report with ``patch_successfully_applied`` false and no
  ``tests_status``, like the official report of an unreadable test log: ``unresolved``.

Tests left out of grading (needing the internet, failing with the gold patch here) are in
neither list of ``tests_status``; they, our status, reason, failure label and flaky tests are
in the report's extra key ``swe_green``. ``infra_failure`` / ``infra_failure_reason`` carry our
SWE-bench 5.0 label (:mod:`orchestrator.grading.failure_labels`).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from orchestrator.context.run_dir import RunDir
from orchestrator.grading.failure_labels import TIER_ENVIRONMENT, tier, timeout_signature
from orchestrator.grading.markers import END_MARKER, START_MARKER
from orchestrator.models import InstanceResult, Reason, Status

OFFICIAL_DIR = "swebench"
LOG_DIR = "logs/run_evaluation"
RUN_METADATA = "run.json"  # the harness's LOG_RUN_METADATA
SCHEMA_VERSION = 2
# the official harness's lines for the patch step, as its run_instance.log has them
APPLY_PATCH_PASS = ">>>>> Applied Patch"
APPLY_PATCH_FAIL = ">>>>> Patch Apply Failed"
# the official eval script's lines around the test command's output, and after it its status
START_TEST_OUTPUT = ">>>>> Start Test Output"
END_TEST_OUTPUT = ">>>>> End Test Output"
TEST_EXIT_CODE = ">>>>> Test Exit Code"
_START = re.compile(rf"^{re.escape(START_MARKER)}\b.*$", re.MULTILINE)
_END = re.compile(rf"^{re.escape(END_MARKER)}\b.*?exit=(-?\d+)\s*$", re.MULTILINE)

_UNSAFE = re.compile(r"[^A-Za-z0-9_.+-]")
_NOT_APPLIED = frozenset({Reason.PATCH_APPLY_FAILED, Reason.PATCH_PATH_REFUSED})


def model_dir_name(model: str) -> str:
    """The participant's id as the harness names its directory (``/`` as ``__``); an id that
    is no file name then (empty, ``.``, ``..``, a NUL) with its unsafe characters as ``_``."""
    name = model.replace("/", "__")
    if name in ("", ".", "..") or "\0" in name or len(name.encode()) > 255:
        return _UNSAFE.sub("_", name).strip(".")[:200] or "model"
    return name


def is_empty_patch(result: InstanceResult, patch: str | None) -> bool:
    """Whether the official harness would count the instance's prediction as empty."""
    return result.reason == Reason.EMPTY_PATCH and not (patch or "").strip()


def has_report(result: InstanceResult, patch: str | None) -> bool:
    """Whether the instance gets a ``report.json`` (graded, and a patch to grade)."""
    return result.status != Status.ERROR and not is_empty_patch(result, patch)


def _groups(success: list[str], failure: list[str]) -> dict[str, list[str]]:
    return {"success": list(success), "failure": list(failure)}


def official_report(result: InstanceResult) -> dict[str, Any]:
    """The official ``report.json`` of a graded result (see the module doc)."""
    applied = result.reason not in _NOT_APPLIED
    entry: dict[str, Any] = {
        "patch_is_None": False,
        "patch_exists": True,
        "patch_successfully_applied": applied,
        "resolved": result.status == Status.RESOLVED,
        "infra_failure": result.failure_label is not None
        and tier(result.failure_label) == TIER_ENVIRONMENT,
    }
    if result.failure_label is not None:
        entry["infra_failure_reason"] = result.failure_label.value
    if applied:
        t = result.tests
        entry["tests_status"] = {
            "FAIL_TO_PASS": _groups(t.fail_to_pass_passed, t.fail_to_pass_failed),
            "PASS_TO_PASS": _groups(t.pass_to_pass_passed, t.pass_to_pass_failed),
            "FAIL_TO_FAIL": _groups([], []),
            "PASS_TO_FAIL": _groups([], []),
        }
    entry["swe_green"] = swe_green_entry(result)
    return {result.instance_id: entry}


def swe_green_entry(result: InstanceResult) -> dict[str, Any]:
    """What our result says beyond the official schema."""
    return {
        "status": result.status.value,
        "reason": result.reason.value,
        "failure_label": result.failure_label.value if result.failure_label else None,
        "message": result.message,
        "fail_to_pass_excluded": result.tests.fail_to_pass_excluded,
        "pass_to_pass_excluded": result.tests.pass_to_pass_excluded,
        "flaky_tests": result.flaky_tests,
        "stricter_than_official": result.stricter_than_official,
        "tamper_evidence": result.tamper_evidence,
        "compiled_modules": result.compiled_modules,
        "suspicious": result.suspicious,
    }


def official_summary(
    results: Iterable[InstanceResult],
    patches: dict[str, str | None],
    instance_ids: Iterable[str] = (),
) -> dict[str, Any]:
    """The official run summary (``make_run_report``'s keys, without the Docker ones) of
    ``results``; ``patches``: each instance's graded patch; ``instance_ids``: the run's
    selection (those without a result are ``incomplete``)."""
    results = list(results)
    done = {result.instance_id for result in results}
    incomplete = sorted(set(instance_ids) - done)
    completed: list[str] = []
    resolved: list[str] = []
    unresolved: list[str] = []
    empty: list[str] = []
    errors: list[str] = []
    infra: list[str] = []
    ambiguous: list[str] = []
    reasons: dict[str, str] = {}
    for result in results:
        iid, patch = result.instance_id, patches.get(result.instance_id)
        if is_empty_patch(result, patch):
            empty.append(iid)
            continue
        if has_report(result, patch):
            completed.append(iid)
            (resolved if result.status == Status.RESOLVED else unresolved).append(iid)
        else:
            errors.append(iid)
        if result.failure_label is not None and result.status != Status.RESOLVED:
            reasons[iid] = result.failure_label.value
            is_env = tier(result.failure_label) == TIER_ENVIRONMENT
            (infra if is_env else ambiguous).append(iid)
    return {
        "total_instances": len(done) + len(incomplete),
        "submitted_instances": len(results),
        "completed_instances": len(completed),
        "resolved_instances": len(resolved),
        "unresolved_instances": len(unresolved),
        "infra_failure_instances": len(infra),
        "ambiguous_failure_instances": len(ambiguous),
        "empty_patch_instances": len(empty),
        "error_instances": len(errors),
        "completed_ids": sorted(completed),
        "incomplete_ids": incomplete,
        "empty_patch_ids": sorted(empty),
        "submitted_ids": sorted(done),
        "resolved_ids": sorted(resolved),
        "unresolved_ids": sorted(unresolved),
        "infra_failure_ids": sorted(infra),
        "ambiguous_failure_ids": sorted(ambiguous),
        "failure_reasons": dict(sorted(reasons.items())),
        "error_ids": sorted(errors),
        "schema_version": SCHEMA_VERSION,
    }


def official_test_output(output: str) -> str:
    """Our test output with the official markers: the first start line and the last end line
    of ours (the run's own; a line the tests printed can only come between them) become
    ``>>>>> Start Test Output`` and ``>>>>> End Test Output`` with the exit code after it, so
    the official log reader slices the same section."""
    start = _START.search(output)
    ends = list(_END.finditer(output))
    if start is None or not ends or ends[-1].start() < start.end():
        return output
    end = ends[-1]
    return (
        output[: start.start()] + START_TEST_OUTPUT + output[start.end() : end.start()]
        + f"{END_TEST_OUTPUT}\n{TEST_EXIT_CODE}: {end.group(1)}" + output[end.end() :]
    )  # fmt: skip


def run_instance_log(result: InstanceResult) -> str:
    """A short ``run_instance.log``: the verdict, why, and the patch step's official line."""
    lines = [f"swe-green result for {result.instance_id}"]
    if result.apply_strategy:
        lines.append(f"{APPLY_PATCH_PASS} ({result.apply_strategy})")
    elif result.reason in _NOT_APPLIED:
        lines.append(APPLY_PATCH_FAIL)
    lines += [
        f"status: {result.status.value}",
        f"reason: {result.reason.value or '-'}",
        f"failure label: {result.failure_label.value if result.failure_label else '-'}",
        f"resolved: {result.status == Status.RESOLVED}",
    ]
    if result.flaky_tests:
        lines.append(f"flaky tests: {', '.join(sorted(result.flaky_tests))}")
    if result.message:
        lines += ["message:", result.message]
    return "\n".join(lines) + "\n"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _timeout_seconds(result: InstanceResult, default: float) -> float:
    found = re.search(r"longer than ([0-9.]+) s", result.message)
    return float(found.group(1)) if found else default


def write_official_layout(run_dir: RunDir, model: str, results: Iterable[InstanceResult]) -> Path:
    """Write ``<run>/swebench/`` for ``results`` (see the module doc); the summary's path.

    Written whole each time (a resumed run's instances included); an instance that has no
    report any more (now an error) loses its old ``report.json``."""
    config = run_dir.read_config()
    run_id = str(config.get("run_id") or run_dir.path.name)
    model_dir = model_dir_name(model)
    base = f"{OFFICIAL_DIR}/{LOG_DIR}/{run_id}/{model_dir}"
    results = list(results)
    patches: dict[str, str | None] = {}
    for result in results:
        source = run_dir.path / "instances" / result.instance_id
        patch = _read(source / "patch.diff")
        patches[result.instance_id] = patch
        if is_empty_patch(result, patch):
            continue
        where = f"{base}/{result.instance_id}"
        run_dir.write_under(f"{where}/run_instance.log", run_instance_log(result))
        if patch is not None:
            run_dir.write_under(f"{where}/patch.diff", patch)
        output = _read(source / "test_output.txt")
        output = official_test_output(output) if output is not None else None
        if result.reason == Reason.TEST_TIMEOUT:
            timeout = float(config.get("settings", {}).get("test_timeout", 0) or 0)
            seconds = _timeout_seconds(result, timeout)
            output = (output or "") + "\n\n" + timeout_signature(seconds)
        if output is not None:
            run_dir.write_under(f"{where}/test_output.txt", output)
        script = _read(source / "eval.sh")
        if script is not None:
            run_dir.write_under(f"{where}/eval.sh", script)
        report_path = run_dir.path / where / "report.json"
        if has_report(result, patch):
            run_dir.write_under(f"{where}/report.json", _json(official_report(result)))
        else:
            report_path.unlink(missing_ok=True)
    metadata = run_metadata(config)
    if metadata is not None:
        run_dir.write_under(f"{OFFICIAL_DIR}/{LOG_DIR}/{run_id}/{RUN_METADATA}", _json(metadata))
    ids = [str(i) for i in config.get("instances", [])]
    summary = official_summary(results, patches, ids)
    return run_dir.write_under(f"{OFFICIAL_DIR}/{model_dir}.{run_id}.json", _json(summary))


def run_metadata(config: dict[str, Any]) -> dict[str, Any] | None:
    """The official ``run.json`` of a run (``write_run_metadata``'s keys) from its recorded
    settings; None when it recorded no dataset, or one that no longer resolves."""
    from orchestrator.dataset.instances import official_source
    from orchestrator.errors import UserError

    settings = config.get("settings") or {}
    source, split = settings.get("dataset"), settings.get("dataset_split") or "test"
    if not source:
        return None
    try:
        dataset, task_repo = official_source(str(source), str(split))
    except (UserError, OSError):
        return None
    created = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return {"dataset": dataset, "split": split, "task_repo": task_repo, "created_at": created}


def _json(data: Any) -> str:
    return json.dumps(data, indent=4) + "\n"
