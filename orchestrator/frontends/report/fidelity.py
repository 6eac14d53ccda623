"""How far a run agrees with the official SWE-bench harness (``swe-green report RUN --official``).

The official results are the harness's per-instance ``report.json`` files
(``logs/run_evaluation/<run>/<model>/<id>/report.json``, each ``{id: {resolved,
patch_successfully_applied, tests_status}}``), read from a directory tree or from a JSONL
file of them (one ``{id: {...}}`` a line, or rows with ``instance_id`` and the report's fields,
or with the report under ``official``, as the replay files hold it).

Agreement is measured on the instances both sides graded (here: not an ``error``): the
verdict (resolved or not) and, test by test, FAIL_TO_PASS/PASS_TO_PASS success against
failure. Tests grading left out here are not compared; they are counted. Each disagreement
gets its cause, from what the run recorded (pure: :func:`compare_official`):

- ``left out here``: the official failure is a test this host cannot grade (needs the
  internet, flaky, fails with the gold patch here), which validation left out;
- ``patch applied differently``: one side applied the patch and the other did not, or files
  of it were left out here (test infrastructure, binary files without content);
- ``stricter here``: a name the output reports with conflicting outcomes counts as failing
  here, the official parser keeps the last (``stricter_than_official``);
- ``official environment``: the same patch, applied the same way, passes a test here that
  passes here with the gold patch too (validation's gold run), and fails officially: the
  official image's problem (github.com/SWE-bench/SWE-bench/issues/294 and /354), not an
  agreement target;
- ``our environment``: a test passes officially and fails here with the same patch while it
  passes here with the gold patch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from orchestrator.errors import UserError
from orchestrator.models import InstanceResult, Status

LEFT_OUT = "left out here"
APPLIED_DIFFERENTLY = "patch applied differently"
STRICTER = "stricter here"
OFFICIAL_ENV = "official environment"
OUR_ENV = "our environment"
GROUPS = (("FAIL_TO_PASS", "fail_to_pass"), ("PASS_TO_PASS", "pass_to_pass"))


class OfficialReport(BaseModel):
    """One instance's official outcome (the fields of the harness's report.json we read)."""

    resolved: bool
    patch_successfully_applied: bool | None = None
    # {"FAIL_TO_PASS": {"success": [...], "failure": [...]}, "PASS_TO_PASS": {...}}; a
    # report without the tests' outcomes (null: the harness recorded none) compares the
    # verdict only
    tests_status: dict[str, dict[str, list[str]]] = Field(default_factory=dict)

    @field_validator("tests_status", mode="before")
    @classmethod
    def _none_recorded(cls, value: object) -> object:
        return {} if value is None else value

    def tests(self, group: str, outcome: str) -> list[str]:
        return list(self.tests_status.get(group, {}).get(outcome, []))


class Disagreement(BaseModel):
    test: str
    group: str  # FAIL_TO_PASS / PASS_TO_PASS
    ours: str  # passed / failed
    official: str  # success / failure
    cause: str


class InstanceFidelity(BaseModel):
    instance_id: str
    ours: str  # our status ("missing" when the run has no result)
    official_resolved: bool | None  # None: no official result
    graded_both: bool
    verdict_agrees: bool | None = None
    tests_compared: int = 0
    tests_agreeing: int = 0
    tests_left_out: int = 0  # official tests grading left out here
    disagreements: list[Disagreement] = Field(default_factory=list)
    cause: str = ""  # why the verdicts differ (or why the instance is not compared)


class Fidelity(BaseModel):
    instances: list[InstanceFidelity]

    @property
    def graded_both(self) -> list[InstanceFidelity]:
        return [i for i in self.instances if i.graded_both]

    @property
    def verdicts_agreeing(self) -> int:
        return sum(1 for i in self.graded_both if i.verdict_agrees)

    @property
    def verdict_targets(self) -> list[InstanceFidelity]:
        """Instances graded by both whose difference is not the official environment's."""
        return [i for i in self.graded_both if i.verdict_agrees or i.cause != OFFICIAL_ENV]

    @property
    def tests_compared(self) -> int:
        return sum(i.tests_compared for i in self.graded_both)

    @property
    def tests_agreeing(self) -> int:
        return sum(i.tests_agreeing for i in self.graded_both)

    @property
    def agreement_targets(self) -> tuple[int, int]:
        """(agreeing, compared) without the official environment's differences."""
        official_env = sum(
            1 for i in self.graded_both for d in i.disagreements if d.cause == OFFICIAL_ENV
        )
        return self.tests_agreeing, self.tests_compared - official_env


# --------------------------------------------------------------------------- reading
def load_official(path: Path) -> dict[str, OfficialReport]:
    """Official reports by instance id, from a harness log tree or a JSONL/JSON file."""
    if not path.exists():
        raise UserError(f"Official results {path} do not exist.", "check the path.")
    raw: dict[str, Any] = {}
    if path.is_dir():
        files = sorted(path.rglob("report.json"))
        if not files:
            raise UserError(
                f"{path} holds no report.json.",
                "pass the harness's logs/run_evaluation/<run>/<model> directory.",
            )
        for file in files:
            raw.update(_rows(_read_json(file), str(file)))
    elif path.suffix == ".jsonl":
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    item = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise UserError(f"{path} line {number} is not JSON ({exc.msg}).") from None
                raw.update(_rows(item, f"{path} line {number}"))
    else:
        raw.update(_rows(_read_json(path), str(path)))
    reports = {}
    for instance_id, value in raw.items():
        try:
            reports[instance_id] = OfficialReport.model_validate(value)
        except ValueError as exc:
            raise UserError(
                f"The official report of {instance_id} is not a report.json ({exc}).",
                "pass the harness's report.json files.",
            ) from None
    return reports


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path} is not readable JSON ({exc}).", "check the file.") from None


def _rows(item: Any, where: str) -> dict[str, Any]:
    if isinstance(item, list):
        out: dict[str, Any] = {}
        for entry in item:
            out.update(_rows(entry, where))
        return out
    if not isinstance(item, dict):
        raise UserError(f"{where} is not a JSON object.", "pass report.json files.")
    if "instance_id" in item:
        report = item.get("official", item)
        return {item["instance_id"]: report}
    return item  # {instance_id: report}


# --------------------------------------------------------------------------- comparing
def compare_official(
    results: list[InstanceResult], official: dict[str, OfficialReport]
) -> Fidelity:
    """Agreement of ``results`` with ``official``, instance by instance (see the module)."""
    ours = {r.instance_id: r for r in results}
    rows = [_instance(i, ours.get(i), official.get(i)) for i in sorted(set(ours) | set(official))]
    return Fidelity(instances=rows)


def _instance(
    instance_id: str, result: InstanceResult | None, report: OfficialReport | None
) -> InstanceFidelity:
    status = result.status.value if result is not None else "missing"
    row = InstanceFidelity(
        instance_id=instance_id,
        ours=status,
        official_resolved=report.resolved if report is not None else None,
        graded_both=result is not None and report is not None and result.status != Status.ERROR,
    )
    if result is None or report is None:
        row.cause = "no official result" if report is None else "not in the run"
        return row
    if result.status == Status.ERROR:
        why = result.message.strip().splitlines()[0][:160] if result.message.strip() else ""
        row.cause = f"not graded here: {result.reason.value or 'error'}" + (
            f" ({why})" if why else ""
        )
        return row
    for group, prefix in GROUPS:
        _compare_group(row, result, report, group, prefix)
    ours_resolved = result.status == Status.RESOLVED
    row.verdict_agrees = ours_resolved == report.resolved
    if not row.verdict_agrees:
        row.cause = _verdict_cause(row, result, report)
    return row


def _compare_group(
    row: InstanceFidelity, result: InstanceResult, report: OfficialReport, group: str, prefix: str
) -> None:
    tests = result.tests
    passed = set(getattr(tests, f"{prefix}_passed"))
    failed = set(getattr(tests, f"{prefix}_failed"))
    left_out = set(getattr(tests, f"{prefix}_excluded"))
    applied_here = result.reason.value not in ("patch_apply_failed", "patch_path_refused")
    for outcome in ("success", "failure"):
        for test in report.tests(group, outcome):
            if test in left_out:
                row.tests_left_out += 1
                continue
            if test not in passed and test not in failed:
                continue  # not among this run's expected tests
            row.tests_compared += 1
            ours = "passed" if test in passed else "failed"
            if (ours == "passed") == (outcome == "success"):
                row.tests_agreeing += 1
                continue
            cause = _test_cause(result, report, test, ours, applied_here)
            row.disagreements.append(
                Disagreement(test=test, group=group, ours=ours, official=outcome, cause=cause)
            )


def _test_cause(
    result: InstanceResult, report: OfficialReport, test: str, ours: str, applied_here: bool
) -> str:
    applied_there = report.patch_successfully_applied
    if applied_here != (applied_there is not False) or (
        ours == "failed" and result.excluded_patch_files
    ):
        return APPLIED_DIFFERENTLY
    if ours == "failed":
        return STRICTER if test in result.stricter_than_official else OUR_ENV
    # passes here with this patch and (not left out) with the gold patch: fails officially
    return OFFICIAL_ENV


def _verdict_cause(row: InstanceFidelity, result: InstanceResult, report: OfficialReport) -> str:
    causes = list(dict.fromkeys(d.cause for d in row.disagreements))
    if len(causes) == 1:
        return causes[0]
    if causes:
        return ", ".join(causes)
    if result.status != Status.RESOLVED and not report.resolved:
        return ""
    if row.tests_left_out:
        return LEFT_OUT  # the official failures are all tests left out here
    if (result.reason.value in ("patch_apply_failed", "patch_path_refused")) != (
        report.patch_successfully_applied is False
    ):
        return APPLIED_DIFFERENTLY
    return "status rule"  # e.g. no expected test compared; shown for a person to read
