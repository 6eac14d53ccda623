"""Phase 7's options are one typed request: a misspelt or unknown option is refused."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pydantic import ValidationError

from orchestrator.grading import GradingRequest
from orchestrator.validation import validation


def test_a_misspelt_option_is_refused() -> None:
    with pytest.raises(ValidationError, match="timout"):
        GradingRequest(timout=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="test_users"):
        GradingRequest(timeout=1, test_users="swe")  # type: ignore[call-arg]


def test_the_request_has_grading_s_defaults_and_cannot_change() -> None:
    request = GradingRequest(timeout=60, log_dir=Path("logs"))
    assert (request.fuzz, request.flaky_reruns, request.test_user) == (3, 0, None)
    assert request.excluded_p2p == request.excluded_f2p == request.writable == ()
    assert request.twins is None and request.replicas is None and request.successor is None
    with pytest.raises(ValidationError):
        request.timeout = 1  # type: ignore[misc]
    with pytest.raises(ValidationError):
        GradingRequest(timeout=0)
    with pytest.raises(ValidationError):
        GradingRequest(timeout=60, successor="not callable")


def test_validation_runs_tests_and_applies_patches_only_through_the_entry() -> None:
    """Validation imports from phase 7 its entry and what judges outcomes, never the pieces
    that apply a patch, install it again or run the tests."""
    source = Path(validation.__file__).read_text()
    imported = {
        (node.module, alias.name)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    assert ("orchestrator.grading", "grade") in imported
    assert ("orchestrator.grading", "GradingRequest") in imported
    running = {"run_tests", "evaluate", "apply_patch", "reinstall_after_patch"}
    assert {name for _, name in imported} & running == set()
    assert not any(module.startswith("orchestrator.patches") for module, _ in imported)
