"""The reference pages of the documentation, generated from the code (the mkdocs hook
``scripts/mkdocs_hooks.py`` puts them where a page says ``<!-- generated: NAME -->``):

- ``cli``: every command's ``--help``, as the terminal shows it;
- ``settings``: every setting with its default and meaning (``swe-green config --markdown``);
- ``statuses`` / ``reasons``: each status and reason of an instance, and what it means;
- ``exit-codes``: what each exit status of ``swe-green run`` says;
- ``command-exits``: each command's exit statuses, signals included;
- ``assessment-config``: the keys of an assessment request's ``config``, with their bounds;
- ``result-schema`` / ``results-schema``: the JSON schemas of ``result.json`` and
  ``results.json``, from their pydantic models.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from orchestrator.models import InstanceResult, Reason, Status
from orchestrator.run.outcome import (
    EXIT_GRADED,
    EXIT_INTERRUPTED,
    EXIT_NOTHING_GRADED,
    EXIT_REGRESSION,
    EXIT_USAGE,
)
from orchestrator.run.results_file import ResultsFile
from orchestrator.settings.describe import settings_table

HELP_WIDTH = 100

# F = the FAIL_TO_PASS tests passing after the patch, P = the PASS_TO_PASS tests still passing
STATUS_MEANING: dict[Status, str] = {
    Status.RESOLVED: "all F pass, all P pass: the issue is fixed and nothing broke",
    Status.BREAKING_RESOLVED: "all F pass, some P fail: fixed, but something else broke",
    Status.PARTIALLY_RESOLVED: "some F pass, all P pass",
    Status.WORK_IN_PROGRESS: "some F pass, some P fail",
    Status.REGRESSION: "no F passes, some P fail: the patch only broke things",
    Status.NO_OP: "no F passes, all P pass: the code behaves as the base commit's (an empty "
    "patch, one that did not apply, or one that changed nothing the tests see)",
    Status.ERROR: "the instance could not be evaluated (its reason says why); counts 0 in "
    "both test fractions",
}

REASON_MEANING: dict[Reason, str] = {
    Reason.NONE: "no reason: a graded instance",
    Reason.EMPTY_PATCH: "no_op: the participant changed nothing (or only files left out of "
    "grading: test infrastructure, compiled files)",
    Reason.PATCH_APPLY_FAILED: "no_op: no apply strategy applies the patch to the base commit",
    Reason.PATCH_PATH_REFUSED: "no_op: the patch names a path outside the repository "
    "(`.git`, `..`, an absolute path, through a symbolic link)",
    Reason.REINSTALL_REFUSED: "no_op: the patch changes the build and the reinstall tried "
    "what it may not (write outside its place, reach another host)",
    Reason.ENVIRONMENT: "error: the environment could not be built or validated",
    Reason.PARTICIPANT_UNREACHABLE: "error: the participant did not answer",
    Reason.PARTICIPANT_TIMEOUT: "error: the participant ran past `participant_timeout` or "
    "`instance_timeout`",
    Reason.PARTICIPANT_PROTOCOL: "error: the participant broke the protocol (a malformed "
    "message, a reply over `max_reply_bytes`)",
    Reason.PARTICIPANT_LIMIT: "error: the participant went past `max_tool_calls`",
    Reason.TEST_TIMEOUT: "error: the tests ran past `test_timeout`",
    Reason.TEST_CRASH: "error: the test runner crashed, or its output cannot be trusted "
    "(missing markers, a summary contradicting the result lines)",
    Reason.DISK_LIMIT: "error: a container went past `disk_limit`",
    Reason.TEST_OUTPUT_FORGED: "regression (or no_op): the test output was forged; every "
    "expected test counts as failing",
    Reason.TAMPER_DETECTED: "regression (or no_op): the patch's code was seen tampering with "
    "the grading at test time; every expected test counts as failing",
    Reason.TWIN_PASSED: "partially_resolved, no_op or another status with fewer FAIL_TO_PASS "
    "passes: an impossible twin of a FAIL_TO_PASS test (an expected value changed, which the "
    "gold patch fails) passed in the secret pair, so its test counts as failing",
    Reason.TWIN_UNPROVEN: "partially_resolved, no_op or another status with fewer FAIL_TO_PASS "
    "passes: a FAIL_TO_PASS test passed, but the secret pair gave no proof for it (the run "
    "holding its original did not pass it, or its twin crashed, timed out or went unreported "
    "in two pairs), so it counts as failing",
    Reason.INFRASTRUCTURE: "error: the host failed (the Docker engine, the disk, a lost "
    "node); nothing is said about the participant's work",
    Reason.CANCELLED: "error: the run was interrupted before the instance finished",
}

EXIT_MEANING: dict[int, str] = {
    EXIT_GRADED: "the run graded its instances (whatever the scores); `report --compare`: no "
    "regression; `scripts/nightly`: graded and no regression, the shard's first run, or an "
    "empty shard",
    EXIT_REGRESSION: "`report --compare` and `scripts/nightly`: a regression (an instance no "
    "longer resolved, or a new error)",
    EXIT_USAGE: "a usage or set-up error: one line naming the problem and the fix, and no run "
    "directory left behind (a bad option or setting, no participant, no Docker engine, no base "
    "image); `assess`: the request was rejected",
    EXIT_NOTHING_GRADED: "the run finished but graded nothing: every instance ended in an "
    "infrastructure, environment or participant-connection error; `validate`: no environment "
    "is valid; `assess`: the task failed or was canceled, or the green agent went away before "
    "the task ended",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C, SIGTERM): `swe-green run --resume RUN` continues",
}


# each command's exit statuses; Ctrl-C (SIGINT) and SIGTERM end every command the same way
COMMAND_EXITS: dict[str, str] = {
    "run, demo": "0 graded (whatever the scores); 2 usage or set-up error; 3 graded nothing; "
    "130 stopped by Ctrl-C or SIGTERM (finished results kept; `run --resume RUN` continues)",
    "validate": "0 at least one environment valid; 2 usage or set-up error; 3 no environment "
    "valid; 130 stopped by Ctrl-C or SIGTERM (`validate --resume RUN` continues)",
    "report": "0 reported; 1 `--compare`: a regression; 2 not a run directory, or `--compare` "
    "with nothing in common; 3 nothing finished in the run (`run --resume RUN` grades it); "
    "130 stopped by Ctrl-C or SIGTERM",
    "assess": "0 the assessment completed; 2 the request was rejected (or a usage error); 3 the "
    "task failed or was canceled, or the green agent went away; 1 the task ended in another "
    "state; 130 stopped by Ctrl-C or SIGTERM",
    "serve, participant …": "0 stopped by Ctrl-C or SIGTERM (after a clean stop: `serve` first "
    "cancels its assessments and removes their containers); 2 usage or set-up error (the port "
    "in use, an exposed address without a token)",
    "inspect": "the shell's own exit status; 1 another user's live container, not confirmed; 2 "
    "usage error (no such container, not a run directory, a live run's container without "
    "`--force`); 130 stopped by Ctrl-C or SIGTERM",
    "images build": "0 built (or already there); 2 usage or set-up error; 130 stopped by "
    "Ctrl-C or SIGTERM (its temporary root removed)",
    "sandbox check": "0 no check failed; 1 a check failed; 2 usage error; 130 stopped by "
    "Ctrl-C or SIGTERM",
    "config, gc, validation-report, images ls, sandbox ls, instances ls, envs …": "0 done; 2 "
    "usage or set-up error; 130 stopped by Ctrl-C or SIGTERM",
    "tasks …": "0 done (what was kept and rejected, and why, is in the tasks report); 2 usage "
    "or set-up error; 130 stopped by Ctrl-C or SIGTERM (`tasks validate` again goes on)",
    "--help, --version": "0",
}


def command_exits_table() -> str:
    return _table(("command", "exit statuses"), [(f"`{c}`", t) for c, t in COMMAND_EXITS.items()])


def cli_reference() -> str:
    """Every command's ``--help`` as a section with a code block."""
    from click.testing import CliRunner

    from orchestrator.frontends.cli.app import app, walk

    runner = CliRunner()
    env = {"COLUMNS": str(HELP_WIDTH), "TERM": "dumb", "NO_COLOR": "1"}
    out = []
    for path, _ in walk():
        done = runner.invoke(
            app,  # typer's own click command, duck-typed
            [*path, "--help"], env=env, terminal_width=HELP_WIDTH, prog_name="swe-green",
        )  # fmt: skip
        if done.exit_code != 0:
            raise RuntimeError(f"swe-green {' '.join(path)} --help failed: {done.output}")
        title = " ".join(["swe-green", *path])
        text = "\n".join(line.rstrip() for line in done.output.strip("\n").splitlines())
        out.append(f"### `{title}`\n\n```text\n{text}\n```\n")
    return "\n".join(out)


def _table(head: tuple[str, str], rows: list[tuple[str, str]]) -> str:
    lines = [f"| {head[0]} | {head[1]} |", "|---|---|"]
    lines += [f"| {key} | {text} |" for key, text in rows]
    return "\n".join(lines) + "\n"


def statuses_table() -> str:
    return _table(("status", "meaning"), [(f"`{s.value}`", STATUS_MEANING[s]) for s in Status])


def reasons_table() -> str:
    rows = [(f"`{r.value}`" if r.value else "(empty)", REASON_MEANING[r]) for r in Reason]
    return _table(("reason", "meaning"), rows)


def exit_codes_table() -> str:
    return _table(("status", "meaning"), [(str(c), text) for c, text in EXIT_MEANING.items()])


def assessment_config_table() -> str:
    """The request's config keys: the key as a requester writes it, its meaning (synonyms
    included), its upper bound."""
    from orchestrator.frontends.server.assessment import LIMITS, AssessmentConfig

    lines = ["| key | meaning | at most |", "|---|---|---|"]
    for name, field in AssessmentConfig.model_fields.items():
        bound = LIMITS.get(name)
        shown = "" if bound is None else f"{bound:,.0f}"
        lines.append(f"| `{field.alias or name}` | {field.description} | {shown} |")
    return "\n".join(lines) + "\n"


def _schema(model: type[Any]) -> str:
    return "```json\n" + json.dumps(model.model_json_schema(), indent=2) + "\n```\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_reference,
    # brackets escaped: "host[:port][/path]" must not read as a reference link
    "settings": lambda: settings_table().replace("[", "\\["),
    "statuses": statuses_table,
    "reasons": reasons_table,
    "exit-codes": exit_codes_table,
    "command-exits": command_exits_table,
    "assessment-config": assessment_config_table,
    "result-schema": lambda: _schema(InstanceResult),
    "results-schema": lambda: _schema(ResultsFile),
}


def fill(markdown: str) -> str:
    """``markdown`` with each ``<!-- generated: NAME -->`` replaced by its generator's text;
    a name without a generator is an error (a page must not silently lose its reference)."""
    import re

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise KeyError(f"no generator {name!r}; known: {', '.join(GENERATORS)}")
        return GENERATORS[name]()

    return re.sub(r"<!-- generated: ([\w-]+) -->", replace, markdown)
