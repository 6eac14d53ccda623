"""Environment validation, before any participant sees an instance: :func:`validate` grades
the gold patch in the instance's image (the FAIL_TO_PASS tests fail without it and pass with
it; the PASS_TO_PASS tests pass), and says which tests this environment cannot run
(:mod:`.run_selection`); :mod:`.sweep` validates many instances."""

from orchestrator.validation.validation import validate

__all__ = ["validate"]
