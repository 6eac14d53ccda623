"""The sandbox conformance suite: what the rest of the product relies on, checked against any
backend (as Inspect's sandbox self-check does for its environments).

Every member of :class:`.protocol.Sandbox` and :class:`.protocol.SandboxBackend` is exercised,
error paths and timeouts included. A check passes, fails (with a message), or finds the
backend says :class:`.errors.Unsupported` for an optional capability (network switch,
snapshots, image import/build/tag, registries) and says so *consistently*. Run it:

- from the tests, on the local backend, Docker and Docker under the restricted policy
  (``tests/test_sandbox_conformance.py``);
- on a host, against the configured backend: ``swe-green sandbox check``.

Each check starts and removes its own sandboxes, labelled with ``Target.run_id``.

Modules: :mod:`.harness` (targets, the registry of checks, helpers), :mod:`.one_sandbox`
(one sandbox), :mod:`.optional` (optional capabilities).
"""

from orchestrator.sandbox.conformance import one_sandbox, optional
from orchestrator.sandbox.conformance.harness import (
    CHECKS,
    CheckResult,
    ConformanceFailure,
    Target,
    run_checks,
)

# the checks register themselves on import, one sandbox's first
__all__ = [
    "CHECKS",
    "CheckResult",
    "ConformanceFailure",
    "Target",
    "optional",
    "run_checks",
    "one_sandbox",
]
