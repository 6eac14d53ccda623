"""The run viewer's page of one instance: its status and why in one sentence, each
FAIL_TO_PASS and PASS_TO_PASS test with its outcome and the output that concerns it, what
validation left out and why, the patch as a diff with left-out files marked, timings per
phase, the participant's transcript, and links to the raw files."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.diffs.diff import Patch
from orchestrator.frontends.report.data import duration, format_seconds, repo_of
from orchestrator.frontends.report.explain import tests_measured
from orchestrator.frontends.viewer.excerpts import excerpt
from orchestrator.frontends.viewer.fixes import fix_for
from orchestrator.frontends.viewer.parts import esc, page, raw_href, sentence, status_badge
from orchestrator.frontends.viewer.wider_section import wider_section
from orchestrator.grading.twins.check import describe
from orchestrator.models import InstanceResult, Status

DEPTH = 1  # instance pages are viewer/i/<id>.html
TRANSCRIPT_EVENTS = 400  # events shown; the rest are in the raw transcript
OUTPUT_TAIL = 40  # lines of the test output shown when no test was graded
PASSING_SHOWN = 300  # passing tests listed with their excerpt; the rest by name
_OUTPUT_FILES = ("test_output.txt",)
_GOLD_OUTPUT = "validation_gold_output.txt"


def render_instance(result: InstanceResult, instance_dir: Path) -> str:
    """The instance's page (its links are relative to ``viewer/i/``)."""
    iid = result.instance_id
    body = [
        '<nav class="crumbs"><a href="../index.html">← run overview</a></nav>',
        f"<h1>{esc(iid)}</h1>",
        f'<p>{status_badge(result.status)} <span class="muted">{esc(repo_of(result))}'
        f"{' · reason ' + esc(result.reason.value) if result.reason.value else ''}</span></p>",
        f'<p class="sentence" id="why">{esc(sentence(result))}</p>',
        *_fix(result),
        *_flags(result),
        _raw_links(iid, instance_dir),
        *_tests(result, instance_dir),
        *wider_section(result),
        *_left_out(result, instance_dir),
        *_patch(result, instance_dir),
        *_timings(result),
        *_facts(result),
        *_transcript(iid, instance_dir),
    ]
    return page(f"{iid} · {result.status.value}", body, DEPTH)


def _fix(result: InstanceResult) -> list[str]:
    fix = fix_for(result.reason.value) if result.status == Status.ERROR else ""
    message = result.message.strip()
    parts = []
    if message and (result.status == Status.ERROR or result.reason.value):
        parts.append(f'<pre id="message">{esc(message[:4000])}</pre>')
    if fix:
        parts.append(f'<div class="card"><div class="fix" id="fix">{esc(fix)}</div></div>')
    return parts


def _flags(result: InstanceResult) -> list[str]:
    items = [f"suspicious: {note}" for note in result.suspicious]
    items += [f"tamper evidence: {note}" for note in result.tamper_evidence]
    items += [f"compiled module (not audited): {path}" for path in result.compiled_modules]
    items += [
        f"stricter than the official harness: {name}" for name in result.stricter_than_official
    ]
    if result.reduced_tests:
        items.append("graded on a reduced test set (see “Left out by validation”)")
    items += twin_flags(result)
    if not items:
        return []
    return ['<ul id="flags">', *(f"<li>{esc(item)}</li>" for item in items), "</ul>"]


def twin_flags(result: InstanceResult) -> list[str]:
    """What the impossible twins showed of the verdict, or why it was not checked."""
    check = result.twin_check
    if check is None:
        return []
    if not check.checked:
        return [f"not twin-checked: {check.why_unchecked}"]
    items = [f"twin passed (proof): {describe(twin)}" for twin in check.passed]
    items += [
        f"no proof from the secret pair: {name} ({why})" for name, why in check.unproven.items()
    ]
    if not check.passed and not check.unproven:
        items.append(f"twin-checked: none of {len(check.twins)} impossible twin(s) passed")
    items += [f"no effective twin: {name}" for name in check.untwinned]
    return items


def _raw_links(iid: str, instance_dir: Path) -> str:
    names = (
        sorted(p.name for p in instance_dir.iterdir() if p.is_file())
        if instance_dir.is_dir()
        else []
    )
    links = "".join(f'<a href="{esc(raw_href(iid, n, DEPTH))}">{esc(n)}</a>' for n in names)
    return f'<h2>Raw files</h2><p class="links" id="raw">{links or "none"}</p>'


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


# --------------------------------------------------------------------------- tests


def _test_item(name: str, outcome: str, output: str, is_open: bool) -> str:
    text = excerpt(output, name, failed=outcome == "failed") if output else ""
    shown = (
        f"<pre>{esc(text)}</pre>"
        if text
        else '<p class="muted">The output does not name this test.</p>'
    )
    return (
        f'<details class="test" data-outcome="{outcome}"{" open" if is_open else ""}>'
        f'<summary><span class="outcome {outcome}">{outcome}</span>{esc(name)}</summary>'
        f"{shown}</details>"
    )


def _group(
    title: str, group_id: str, failed: list[str], passed: list[str], output: str
) -> list[str]:
    total = len(failed) + len(passed)
    parts = [f'<h3 id="{group_id}">{esc(title)}: {len(passed)} of {total} pass</h3>']
    parts += [_test_item(name, "failed", output, True) for name in failed]
    if passed:
        shown, rest = passed[:PASSING_SHOWN], passed[PASSING_SHOWN:]
        inner = "".join(_test_item(name, "passed", output, False) for name in shown)
        if rest:
            inner += "<p>" + esc(", ".join(rest)) + "</p>"
        parts.append(
            f'<details class="passing"{" open" if len(passed) <= 10 else ""}>'
            f"<summary>{len(passed)} passing</summary>{inner}</details>"
        )
    return parts


def _tests(result: InstanceResult, instance_dir: Path) -> list[str]:
    parts = ['<h2 id="tests">Tests</h2>']
    output = "".join(_read(instance_dir / name) for name in _OUTPUT_FILES)
    if not tests_measured(result):
        parts.append(
            '<p class="muted">No test was graded for this instance: '
            f"{esc(result.reason.value or result.status.value)}.</p>"
        )
        if output.strip():
            tail = output.rstrip().splitlines()[-OUTPUT_TAIL:]
            parts.append(
                f'<h3>The end of the test output</h3><pre id="output-tail">'
                f"{esc(chr(10).join(tail))}</pre>"
            )
        return parts
    tests = result.tests
    parts += _group(
        "FAIL_TO_PASS", "fail-to-pass", tests.fail_to_pass_failed, tests.fail_to_pass_passed, output
    )
    parts += _group(
        "PASS_TO_PASS", "pass-to-pass", tests.pass_to_pass_failed, tests.pass_to_pass_passed, output
    )
    return parts


def _left_out(result: InstanceResult, instance_dir: Path) -> list[str]:
    tests = result.tests
    if not tests.fail_to_pass_excluded and not tests.pass_to_pass_excluded:
        return [
            '<h2 id="left-out">Left out by validation</h2>'
            "<p>Nothing: every listed test was graded.</p>"
        ]
    gold = _read(instance_dir / _GOLD_OUTPUT)
    parts = [
        '<h2 id="left-out">Left out by validation</h2>',
        '<p class="muted">Validation runs the tests with the gold patch on this host before '
        "grading; a test that cannot pass there is left out of the verdict.</p>",
    ]
    for names, why_text in (
        (tests.fail_to_pass_excluded, "FAIL_TO_PASS, needs the internet: it fails with the "
         "gold patch offline"),
        (tests.pass_to_pass_excluded, "PASS_TO_PASS, fails with the gold patch on this host "
         "(network, flaky or the environment)"),
    ):  # fmt: skip
        for name in names:
            text = excerpt(gold, name, failed=True) if gold else ""
            shown = f"<pre>{esc(text)}</pre>" if text else ""
            parts.append(
                f'<details class="test" data-outcome="excluded"><summary>'
                f'<span class="outcome excluded">left out</span>{esc(name)} — '
                f"{esc(why_text)}</summary>{shown}</details>"
            )
    return parts


# --------------------------------------------------------------------------- patch


def _line_class(line: str) -> str:
    if line.startswith("@@"):
        return "hunk"
    if line.startswith(("+++", "---", "diff ", "index ", "new file", "deleted file",
                        "similarity", "rename ", "old mode", "new mode")):  # fmt: skip
        return "meta"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "ctx"


def diff_html(patch: str, left_out: set[str]) -> str:
    """The patch, one block per file with its lines coloured; files in ``left_out`` marked."""
    parsed = Patch.parse(patch)
    blocks = []
    if parsed.preamble.strip():
        blocks.append(f"<pre>{esc(parsed.preamble)}</pre>")
    for part in parsed.files:
        paths = list(part.paths)
        excluded = any(p in left_out for p in paths)
        mark = '<span class="left-out">left out of grading</span>' if excluded else ""
        lines = "".join(
            f'<div class="l {_line_class(line)}">{esc(line) or " "}</div>'
            for line in part.text.splitlines()
        )
        kind = "diff excluded" if excluded else "diff"
        blocks.append(
            f'<div class="{kind}" data-file="{esc(" ".join(paths))}">'
            f'<div class="file">{esc(" → ".join(paths) or "?")}{mark}</div>{lines}</div>'
        )
    return "".join(blocks)


def _patch(result: InstanceResult, instance_dir: Path) -> list[str]:
    patch = _read(instance_dir / "patch.diff")
    parts = ['<h2 id="patch">Patch</h2>']
    if not patch.strip():
        parts.append('<p class="muted">No patch was recorded (an empty patch).</p>')
        return parts
    left_out = set(result.excluded_patch_files)
    if left_out:
        parts.append(
            f"<p>{len(left_out)} file(s) left out of the graded patch (the tests and files "
            "grading restores): " + esc(", ".join(sorted(left_out))) + "</p>"
        )
    if result.apply_strategy:
        parts.append(f'<p class="muted">applied with {esc(result.apply_strategy)}</p>')
    parts.append(diff_html(patch, left_out))
    return parts


# --------------------------------------------------------------------------- timings, facts


def _timings(result: InstanceResult) -> list[str]:
    phases = [(k, v) for k, v in result.timings.items() if k != "total"]
    if not phases:
        return []
    total = duration(result) or 1.0
    rows = "".join(
        f'<tr><td>{esc(name)}</td><td class="num">{esc(format_seconds(seconds))}</td>'
        f'<td><div class="bar"><span style="width:{min(100.0, 100 * seconds / total):.1f}%;'
        f'background:#1f5fbf"></span></div></td></tr>'
        for name, seconds in phases
    )
    return [
        f'<h2 id="timings">Timings ({esc(format_seconds(duration(result)))} in all)</h2>',
        '<table id="timing-table"><colgroup><col style="width:30%"><col style="width:20%">'
        f"<col></colgroup><thead><tr><th>phase</th><th class=num>time</th><th>share</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>",
    ]


def _facts(result: InstanceResult) -> list[str]:
    facts = [
        ("python (spec / used)", f"{result.python_spec or '?'} / {result.python_used or '?'}"),
        ("tool calls", str(result.tool_calls)),
        ("kept container", result.container or "none"),
        ("host", result.host or "this host"),
    ]
    facts += [(f"setup tokens: {k}", str(v)) for k, v in result.setup_tokens.items()]
    return [
        '<h2 id="facts">Facts</h2><dl class="kv">',
        *(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts),
        "</dl>",
    ]


# --------------------------------------------------------------------------- transcript


def _summary(event: dict) -> str:
    """A line on what the event holds: a tool call's name and arguments, a result's size."""
    kind = str(event.get("event", "?"))
    call = event.get("call")
    if isinstance(call, dict):
        args = json.dumps(call.get("arguments", call.get("args", "")), ensure_ascii=False)
        return f"{call.get('name', call.get('tool', ''))} {args[:160]}"
    if "result" in event:
        return json.dumps(event["result"], ensure_ascii=False)[:160]
    for key in ("message", "payload", "error", "card"):
        if key in event:
            return json.dumps(event[key], ensure_ascii=False)[:160]
    return kind


def transcript_events(path: Path) -> list[dict]:
    """The transcript's events (lines that are not JSON objects are skipped)."""
    events = []
    for line in _read(path).splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _transcript(iid: str, instance_dir: Path) -> list[str]:
    path = instance_dir / "transcript.jsonl"
    if not path.is_file():
        return [
            '<h2 id="transcript">Transcript</h2><p class="muted">No transcript: the patch '
            "came from a predictions file, or the participant was never reached.</p>"
        ]
    events = transcript_events(path)
    shown = events[:TRANSCRIPT_EVENTS]
    items = "".join(
        f'<details class="event" data-kind="{esc(e.get("event", "?"))}"><summary>'
        f'<span class="t">{esc(e.get("t", ""))}s</span><span class="kind">'
        f"{esc(e.get('event', '?'))}</span>{esc(_summary(e))}</summary>"
        f"<pre>{esc(json.dumps(e, indent=2, ensure_ascii=False))}</pre></details>"
        for e in shown
    )
    more = (
        f'<p class="muted">{len(events) - len(shown)} more event(s) in '
        f'<a href="{esc(raw_href(iid, "transcript.jsonl", DEPTH))}">transcript.jsonl</a>.</p>'
        if len(events) > len(shown)
        else ""
    )
    return [
        f'<h2 id="transcript">Transcript ({len(events)} events)</h2>',
        '<p class="muted">Each event opens on a click.</p>',
        items,
        more,
    ]
