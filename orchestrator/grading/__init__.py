"""Phase 7: tests and scoring. :func:`grade` applies the patch in a container of the instance
image, reinstalls what the patch's build inputs change in a container of its own
(:mod:`.reinstall`), runs the instance's tests with the network off as an unprivileged user
(:mod:`.script`, between the markers of :mod:`.markers`), watches what the code under test
does (:mod:`.audit`), parses the log (:mod:`.log_parsers`) and classifies the result
(:mod:`.classify`)."""

from orchestrator.grading.evaluation import grade

__all__ = ["grade"]
