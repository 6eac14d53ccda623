"""Phase 7's options are one typed request: a misspelt or unknown option is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from orchestrator.grading import GradingRequest


def test_a_misspelt_option_is_refused() -> None:
    with pytest.raises(ValidationError, match="timout"):
        GradingRequest(timout=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="test_users"):
        GradingRequest(timeout=1, test_users="swe")  # type: ignore[call-arg]


def test_the_request_has_grading_s_defaults_and_cannot_change() -> None:
    request = GradingRequest(timeout=60, log_dir=Path("logs"))
    assert (request.fuzz, request.flaky_reruns, request.test_user) == (3, 0, None)
    assert request.excluded_p2p == request.excluded_f2p == request.writable == ()
    assert request.twins is None and request.fresh is None and request.successor is None
    with pytest.raises(ValidationError):
        request.timeout = 1  # type: ignore[misc]
    with pytest.raises(ValidationError):
        GradingRequest(timeout=0)
    with pytest.raises(ValidationError):
        GradingRequest(timeout=60, successor="not callable")
