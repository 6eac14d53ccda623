"""Local services for a test run: what a recipe's ``services`` become in the eval script.

Some test suites call a network service (old requests tests call httpbin.org, through
``HTTPBIN_URL``). Grading runs with the network off, so the service runs inside the
container, on loopback, started before the test command and stopped after it; the recipe's
``env`` points the tests at it. The service's own files are installed at build time by the
recipe's ``service_setup`` (in their own virtual environment, never the project's).
"""

from __future__ import annotations

import shlex

from orchestrator.recipes.recipe import Recipe

READY_TIMEOUT = 30  # seconds a service has to start listening


def service_start_lines(recipe: Recipe, log_dir: str) -> list[str]:
    """Bash lines that start the recipe's services and wait until each listens.

    A service that does not listen within ``READY_TIMEOUT`` seconds is reported on a
    ``>>>>> SERVICE_NOT_READY`` line; the tests run anyway (those that need it fail, and
    validation says why).
    """
    lines: list[str] = []
    for index, service in enumerate(recipe.services):
        log = f"{log_dir}/service-{index}.log"
        lines += [
            f"setsid bash -c {shlex.quote(service.command)} > {log} 2>&1 < /dev/null &",
            f"for _ in $(seq {READY_TIMEOUT * 5}); do",
            f"    (exec 3<>/dev/tcp/127.0.0.1/{service.port}) 2>/dev/null && break",
            "    sleep 0.2",
            "done",
            f"(exec 3<>/dev/tcp/127.0.0.1/{service.port}) 2>/dev/null \\",
            f"    || echo '>>>>> SERVICE_NOT_READY port {service.port}: '\"$(tail -3 {log})\"",
        ]
    return lines


def service_stop_lines(recipe: Recipe) -> list[str]:
    """Bash lines that stop the services started by :func:`service_start_lines`."""
    if not recipe.services:
        return []
    return [f"pkill -f -- {shlex.quote(s.command)} 2>/dev/null || true" for s in recipe.services]
