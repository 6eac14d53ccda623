"""Data that crosses module boundaries: instances, statuses, results."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Instance(BaseModel):
    """One SWE-bench instance. FAIL_TO_PASS / PASS_TO_PASS accept lists or JSON strings."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    instance_id: str
    repo: str
    base_commit: str
    environment_setup_commit: str
    version: str = ""
    problem_statement: str = ""
    hints_text: str = ""
    patch: str = ""
    test_patch: str = ""
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    created_at: str | None = None
    difficulty: str | None = None
    # the test command's arguments where the task says them (a task made here whose test
    # patch changes only test data: the modules that read it, ``-k`` and the data's names);
    # empty: the test patch's files, SWE-bench's rule
    test_directives: list[str] = Field(default_factory=list)

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _parse_test_list(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            value = value.strip()
            return json.loads(value) if value else []
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _version_as_text(cls, value: Any) -> Any:
        return "" if value is None else str(value)

    @property
    def owner_name(self) -> str:
        """``owner__name`` form of the repository, used in paths and mirror names."""
        return self.repo.replace("/", "__")

    @property
    def repo_version(self) -> str:
        """``owner/name@version``: the instances that share an environment, as a rule."""
        return f"{self.repo}@{self.version}"


class Status(StrEnum):
    RESOLVED = "resolved"
    BREAKING_RESOLVED = "breaking_resolved"
    PARTIALLY_RESOLVED = "partially_resolved"
    WORK_IN_PROGRESS = "work_in_progress"
    REGRESSION = "regression"
    NO_OP = "no_op"
    ERROR = "error"


class Reason(StrEnum):
    NONE = ""
    EMPTY_PATCH = "empty_patch"
    PATCH_APPLY_FAILED = "patch_apply_failed"
    PATCH_PATH_REFUSED = "patch_path_refused"
    REINSTALL_REFUSED = "reinstall_refused"
    ENVIRONMENT = "environment"
    PARTICIPANT_UNREACHABLE = "participant_unreachable"
    PARTICIPANT_TIMEOUT = "participant_timeout"
    PARTICIPANT_PROTOCOL = "participant_protocol"
    PARTICIPANT_LIMIT = "participant_limit"
    TEST_TIMEOUT = "test_timeout"
    TEST_CRASH = "test_crash"
    DISK_LIMIT = "disk_limit"
    TEST_OUTPUT_FORGED = "test_output_forged"
    TAMPER_DETECTED = "tamper_detected"
    TWIN_PASSED = "twin_passed"
    TWIN_UNPROVEN = "twin_unproven"
    INFRASTRUCTURE = "infrastructure"
    CANCELLED = "cancelled"


class FailureLabel(StrEnum):
    """SWE-bench 5.0's labels for a failure's likely cause (``infra_failure_reason``).

    The first five say the environment broke (tier ``environment``); the last three can come
    from the environment or from the patch (tier ``ambiguous``)."""

    BROWSER_LAUNCH_FAILED = "browser_launch_failed"
    DISPLAY_UNAVAILABLE = "display_unavailable"
    OUT_OF_MEMORY = "out_of_memory"
    CONTAINER_UNAVAILABLE = "container_unavailable"
    NETWORK_UNREACHABLE = "network_unreachable"
    MISSING_MODULE = "missing_module"
    NO_TESTS_COLLECTED = "no_tests_collected"
    TESTS_TIMED_OUT = "tests_timed_out"


class CaseStatus(StrEnum):
    PASSED = "PASSED"
    FAILED = "FAILED"
    ERROR = "ERROR"
    SKIPPED = "SKIPPED"
    XFAIL = "XFAIL"


class CaseGroups(BaseModel):
    """Which of the expected tests passed or failed after the patch."""

    fail_to_pass_passed: list[str] = Field(default_factory=list)
    fail_to_pass_failed: list[str] = Field(default_factory=list)
    pass_to_pass_passed: list[str] = Field(default_factory=list)
    pass_to_pass_failed: list[str] = Field(default_factory=list)
    # PASS_TO_PASS tests that fail even with the gold patch in this environment
    pass_to_pass_excluded: list[str] = Field(default_factory=list)
    # FAIL_TO_PASS tests that need the internet: they fail with the gold patch offline
    fail_to_pass_excluded: list[str] = Field(default_factory=list)


class TwinRecord(BaseModel):
    """An impossible twin as a result shows it: the FAIL_TO_PASS test, where its expected
    value was changed (``path:line``), and the line before and after."""

    test: str
    path: str
    line: int
    original: str
    mutated: str
    kind: str = ""


class TwinCheck(BaseModel):
    """Whether a verdict was checked with impossible twins, and what they showed.

    ``checked``: the FAIL_TO_PASS tests that passed ran before the official run in the
    secret pair, each with its original in one run and one effective twin (``twins``) in the
    other; ``passed``: the twins that passed there (proof: their tests count as failing,
    reason ``twin_passed``); ``outcomes``: each twin test's outcome there; ``unproven``:
    tests the pair gave no proof for, and why (they count as failing, reason
    ``twin_unproven``); ``pairs``: how many pairs ran (a second one for a twin that gave no
    outcome); ``untwinned``: passing FAIL_TO_PASS tests validation found no effective twin
    for, or whose only twin turns the assertion around. Not checked: ``why_unchecked``."""

    checked: bool = False
    why_unchecked: str = ""
    twins: list[TwinRecord] = Field(default_factory=list)
    passed: list[TwinRecord] = Field(default_factory=list)
    outcomes: dict[str, str] = Field(default_factory=dict)
    untwinned: list[str] = Field(default_factory=list)
    unproven: dict[str, str] = Field(default_factory=dict)
    pairs: int = 0


class InstanceResult(BaseModel):
    """The outcome of one instance; ``result.json`` in the instance directory."""

    instance_id: str
    repo: str = ""
    status: Status
    reason: Reason = Reason.NONE
    message: str = ""
    tests: CaseGroups = Field(default_factory=CaseGroups)
    apply_strategy: str | None = None
    excluded_patch_files: list[str] = Field(default_factory=list)
    # why a person should look at this result (the patch touches the runner's machinery)
    suspicious: list[str] = Field(default_factory=list)
    # what the patch's code did at test time that forges or reads the grading (every test
    # then counts as failing, reason tamper_detected): "path:line what" each
    tamper_evidence: list[str] = Field(default_factory=list)
    # compiled extension modules the patch's reinstall built (their code runs where no audit
    # event fires; the verdict rests on the tests alone)
    compiled_modules: list[str] = Field(default_factory=list)
    timings: dict[str, float] = Field(default_factory=dict)
    setup_tokens: dict[str, int] = Field(default_factory=dict)
    python_spec: str = ""  # the Python the SWE-bench spec asks for
    python_used: str = ""  # the Python the environment ran (nearest base image, or exact)
    # what made the environment: recipe, infer (from the repository's files) or llm
    setup_strategy: str = ""
    tool_calls: int = 0
    logs: dict[str, str] = Field(default_factory=dict)
    container: str | None = None
    # tests whose outcome grading reads more strictly than the official harness (a name the
    # output reports with conflicting outcomes counts as failing; officially the last wins)
    stricter_than_official: list[str] = Field(default_factory=list)
    # where the instance ran on a Ray cluster (its kept container is there): the Docker host
    # and the Ray node; None on a single host
    host: str | None = None
    node: str | None = None
    # SWE-bench 5.0's label for what a failure or error rests on, where one applies
    failure_label: FailureLabel | None = None
    # tests whose outcome decided the verdict against the patch and changed when re-run alone
    # (other hash seeds): name -> the outcomes seen, the graded one first
    flaky_tests: dict[str, list[str]] = Field(default_factory=dict)
    # whether the verdict was checked with impossible twins (None: grading did not get there)
    twin_check: TwinCheck | None = None
    # the repository's wider tests beside a resolved verdict (None: not asked for, or the
    # verdict is not resolved); the status stays the official one
    wider: WiderCheck | None = None

    @property
    def reduced_tests(self) -> int:
        """How many of its FAIL_TO_PASS and PASS_TO_PASS tests grading left out (needing the
        internet, flaky, failing with the gold patch here): its verdict rests on the rest."""
        return len(self.tests.fail_to_pass_excluded) + len(self.tests.pass_to_pass_excluded)

    @property
    def verdict(self) -> str:
        """The status with its marks: ``*`` graded on a reduced test set, ``~`` a test that
        decided it against the patch changed its outcome when re-run (``flaky_tests``),
        ``!`` the repository's wider tests that pass with the gold patch fail with this one
        (``wider``)."""
        if self.status == Status.ERROR:
            return self.status.value
        wider = self.wider is not None and bool(self.wider.regressions)
        marks = "*" * bool(self.reduced_tests) + "~" * bool(self.flaky_tests) + "!" * wider
        return self.status.value + marks

    @property
    def fail_to_pass_fraction(self) -> float:
        """Fraction of FAIL_TO_PASS tests passing (an error counts 0; an empty list counts 1)."""
        if self.status == Status.ERROR:
            return 0.0
        t = self.tests
        total = len(t.fail_to_pass_passed) + len(t.fail_to_pass_failed)
        return 1.0 if total == 0 else len(t.fail_to_pass_passed) / total

    @property
    def pass_to_pass_fraction(self) -> float:
        """Fraction of graded PASS_TO_PASS tests passing (an error counts 0; empty counts 1)."""
        if self.status == Status.ERROR:
            return 0.0
        t = self.tests
        total = len(t.pass_to_pass_passed) + len(t.pass_to_pass_failed)
        return 1.0 if total == 0 else len(t.pass_to_pass_passed) / total


class WiderTest(BaseModel):
    """One test of the wider run whose outcome with the patch differs from the gold patch's
    (both gold runs agreed): its name, the outcomes (``gold``, ``patch``; ``MISSING``: not
    reported) and the start of its failure in the patch's run."""

    name: str
    gold: str
    patch: str
    excerpt: str = ""


class WiderCheck(BaseModel):
    """The second opinion beside a ``resolved`` verdict (never in place of it): the
    repository's own tests that exercise what the patch changed, run after the official run
    in a fresh container and compared with the gold patch's two runs at validation
    (:mod:`orchestrator.grading.wider`).

    ``ran``: the wider set ran and could be compared; else ``why_not`` says why. ``files``:
    the test modules run (``scope``: why each, e.g. ``package``, ``imports``); ``cut``: test
    modules the scope chose and the cap left out. ``compared``: tests that passed or failed
    the same way in both gold runs and are not the task's own; ``left_out``: tests of the
    wider set that did not pass both times with gold (failing, flaky, needing the network).
    ``regressions``: passed with gold, fail with the patch (beyond the task's tests);
    ``differs``: the tests whose outcome differs from gold's, either direction (regressions
    too), that exercise a function or method the gold patch changes (``gold_functions``: its
    names, read from the code, :mod:`orchestrator.grading.wider.reach`; ``exercising``: how
    many tests both gold runs agree on exercise one, the ground of ``differs``); ``no_baseline``:
    tests run that gold never ran (test modules of the patch's scope beyond the gold
    patch's). ``seconds``: the wider run's time;
    ``tamper_evidence``: what the audit hook saw in the wider run (then nothing is compared)."""

    ran: bool = False
    why_not: str = ""
    files: list[str] = Field(default_factory=list)
    scope: dict[str, str] = Field(default_factory=dict)
    cut: int = 0
    compared: int = 0
    exercising: int = 0
    left_out: int = 0
    no_baseline: int = 0
    regressions: list[WiderTest] = Field(default_factory=list)
    differs: list[WiderTest] = Field(default_factory=list)
    gold_functions: list[str] = Field(default_factory=list)
    tamper_evidence: list[str] = Field(default_factory=list)
    seconds: float = 0.0

    @property
    def clean(self) -> bool:
        """Ran, and no test that passed with gold fails with the patch."""
        return self.ran and not self.regressions
