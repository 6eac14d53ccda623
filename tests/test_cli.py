"""The command line as a user meets it: settings sources, one-line errors, operator commands."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from orchestrator.settings import load_settings, setting_names

from .cli_in_process import swe_green
from .conftest import TEST_RUN_ID


def test_settings_come_from_toml_then_environment_then_arguments(tmp_path, monkeypatch):
    config = tmp_path / "swe-green.toml"
    config.write_text('concurrency = 3\nmemory = "3g"\ntest_timeout = 60\n')
    monkeypatch.setenv("SWE_GREEN_CONFIG", str(config))
    monkeypatch.setenv("SWE_GREEN_MEMORY", "5g")
    settings = load_settings(test_timeout=90)
    assert (settings.run.concurrency, settings.sandbox.memory, settings.grading.test_timeout) == (
        3,
        "5g",
        90,
    )


def test_invalid_or_unknown_settings_are_one_line_errors(tmp_path):
    bad = swe_green("config", env={"SWE_GREEN_CONCURRENCY": "many"})
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "SWE_GREEN_CONCURRENCY" in bad.stderr
    assert "Traceback" not in bad.stderr
    config = tmp_path / "swe-green.toml"
    config.write_text("concurency = 2\n")
    typo = swe_green("config", env={"SWE_GREEN_CONFIG": str(config)})
    assert typo.returncode == 2 and "Unknown setting 'concurency'" in typo.stderr


def test_a_missing_docker_daemon_is_one_line_with_the_fix(tmp_path):
    env = {"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    for command in (["sandbox", "ls"], ["gc", "--dry-run"], ["images", "build"]):
        done = swe_green(*command, env=env)
        assert done.returncode == 2, done.stderr
        assert "No Docker daemon answers" in done.stderr and "Fix:" in done.stderr
        assert "Traceback" not in done.stderr


def test_unknown_instance_id_is_a_clear_error(synthetic_dir):
    done = swe_green(
        "instances", "ls", "--id", "demo__calc-2",
        env={"SWE_GREEN_DATASET": str(synthetic_dir / "instances.jsonl")},
    )  # fmt: skip
    assert done.returncode == 2 and "demo__calc-2" in done.stderr and "Traceback" not in done.stderr


def test_instances_ls_prints_the_selection(synthetic_dir):
    done = swe_green(
        "instances", "ls", "--repo", "demo/calc",
        env={"SWE_GREEN_DATASET": str(synthetic_dir / "instances.jsonl")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "demo__calc-1" in done.stdout and "1 instance(s)" in done.stdout


@pytest.mark.container
def test_sandbox_ls_inspect_and_gc_find_the_tools_containers(make_sandbox):
    sb = make_sandbox(instance_id="demo__inspect-1")
    sb.exec("mkdir -p /testbed && echo marker > /testbed/where.txt")
    listed = swe_green("sandbox", "ls")
    assert sb.name in listed.stdout
    # by instance id alone only the caller's own runs' containers (another user's counted,
    # never named); its run named, it opens
    refused = swe_green("inspect", "demo__inspect-1")
    assert refused.returncode == 2 and sb.name not in refused.stderr, refused.stderr
    assert "1 container(s) of other users' runs are" in refused.stderr
    shell = subprocess.run(
        [sys.executable, "-c", "from orchestrator.frontends.cli.app import main; main()", "inspect",
         "demo__inspect-1", "--run", TEST_RUN_ID],
        input="cat where.txt; exit\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "marker" in shell.stdout, shell.stderr
    assert "labelled with instance demo__inspect-1" in shell.stderr
    dry = swe_green("gc", "--dry-run")
    assert sb.name in dry.stdout and "would remove" in dry.stdout
    assert sb.is_running()  # a dry run removes nothing


@pytest.mark.container
def test_validate_summarises_the_gold_patch_check(env_settings, tmp_path):
    from .conftest import cli_env, run_cli

    proc = run_cli(
        ["validate", "--id", "demo__units-1", "--id", "demo__textkit-1"],
        {**cli_env(env_settings, tmp_path / "runs"), "COLUMNS": "250"},
    )
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    assert "2/2 environment(s) valid" in out
    # resumed without a selection, the sweep keeps its own (not the whole dataset's three)
    run_dir = out.split("validating 2 instance(s) in ", 1)[1].split()[0]
    resumed = run_cli(
        ["validate", "--resume", run_dir],
        {**cli_env(env_settings, tmp_path / "runs"), "COLUMNS": "250"},
    )
    out, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, out
    assert "validating 2 instance(s)" in out and "2/2 environment(s) valid" in out


@pytest.mark.container
def test_run_then_report_html(env_settings, tmp_path):
    from .conftest import cli_env, run_cli

    env = {**cli_env(env_settings, tmp_path / "runs"), "COLUMNS": "250"}
    run_dir = tmp_path / "runs" / "one"
    proc = run_cli(["run", "--participant", "gold", "--id", "demo__units-1", "--output",
                    str(run_dir)], env)  # fmt: skip
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    assert f"results: {run_dir / 'results.json'}" in out.replace("\n", "")
    # the terminal: one line per finished instance, no log lines; those are in run.log
    assert "1/1 demo__units-1: resolved" in out
    assert "[info" not in out and '"event"' not in out and "phase" not in out, out
    log = [json.loads(line) for line in (run_dir / "run.log").read_text().splitlines()]
    phases = [line for line in log if line["event"] == "phase"]
    assert phases and all(line["instance_id"] == "demo__units-1" for line in phases)
    assert all(line["run_id"].startswith("run-") for line in phases)
    report = run_cli(["report", str(run_dir), "--html"], env)
    out, _ = report.communicate(timeout=120)
    assert report.returncode == 0, out
    html = (run_dir / "report.html").read_text()
    assert "demo__units-1" in html and "resolved" in html


@pytest.mark.container
def test_ctrl_c_stops_the_run_cleanly_and_keeps_what_finished(
    env_settings, tmp_path, docker_backend
):
    import signal

    from orchestrator.frontends.reference_participants import running
    from orchestrator.frontends.reference_participants.scripted import (
        FinalAnswer,
        Script,
        ScriptedParticipant,
    )
    from orchestrator.housekeeping.inventory import list_containers

    from .conftest import cli_env, run_cli

    slow = ScriptedParticipant(Script(final=FinalAnswer(text="done", delay=600)))
    run_dir = tmp_path / "runs" / "interrupted"
    with running(slow) as url:
        proc = run_cli(
            ["run", "--participant", url, "--id", "demo__units-1", "--output", str(run_dir)],
            cli_env(env_settings, tmp_path / "runs"),
        )
        transcript = run_dir / "instances" / "demo__units-1" / "transcript.jsonl"
        for _ in range(600):
            if slow.states or proc.poll() is not None:
                break
            time.sleep(0.5)
        assert transcript.exists() and proc.poll() is None
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=180)  # a loaded 2-core host is slow to clean up
    assert proc.returncode == 130, out
    assert f"swe-green run --resume {run_dir}" in out.replace("\n", "")
    run_id = json.loads((run_dir / "config.json").read_text())["run_id"]
    assert list_containers(docker_backend, run_id=run_id) == []
    assert not (run_dir / "instances" / "demo__units-1" / "result.json").exists()


@pytest.mark.container
def test_sigterm_stops_a_validation_sweep_and_removes_its_containers(
    env_settings, tmp_path, docker_backend
):
    """A job's time limit (SIGTERM) mid-sweep: the sweep ends as on Ctrl-C, its containers
    removed (before: the process ended at once and left them running)."""
    import signal

    from orchestrator.housekeeping.inventory import list_containers

    from .conftest import cli_env, run_cli

    env = {**cli_env(env_settings, tmp_path / "runs"), "COLUMNS": "250",
           "SWE_GREEN_DATA_DIR": str(tmp_path / "data")}  # fmt: skip
    proc = run_cli(["validate", "--id", "demo__calc-1", "--runs", "3"], env)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    run_id = first.rstrip().rsplit("/", 1)[-1]
    assert run_id.startswith("validate-"), first
    for _ in range(1200):
        if list_containers(docker_backend, run_id=run_id) or proc.poll() is not None:
            break
        time.sleep(0.1)
    assert proc.poll() is None, "the sweep ended before a container of it started"
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 130, first + out
    assert list_containers(docker_backend, run_id=run_id) == []


def test_config_prints_one_setting_per_line_in_80_columns(tmp_path):
    config = tmp_path / "swe-green.toml"
    config.write_text("concurrency = 3\n")
    long_dir = "/srv/" + "very-long-directory-name/" * 6 + "end"
    env = {"COLUMNS": "80", "SWE_GREEN_CONFIG": str(config), "SWE_GREEN_MEMORY": "3g",
           "SWE_GREEN_DATA_DIR": long_dir, "SWE_GREEN_ANTHROPIC_API_KEY": "sk-secret"}  # fmt: skip
    done = swe_green("config", env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    names = set(setting_names())
    by_name = {line.split()[0]: line.split() for line in lines if line.split()[0] in names}
    assert len(by_name) == len(names) == len(lines) - 2  # and two lines on the sources
    assert by_name["memory"][1:] == ["3g", "env"]
    assert by_name["concurrency"][1:] == ["3", "file"]
    assert by_name["cpus"][1:] == ["2.0", "default"]
    assert by_name["data_dir"][-1] == "env" and by_name["data_dir"][1].endswith("end")
    assert "sk-secret" not in done.stdout and by_name["anthropic_api_key"][1] == "***"
    verbose = swe_green("config", "--verbose", env=env)
    assert all(len(line) <= 80 for line in verbose.stdout.splitlines())
    assert "Memory limit per instance container. [SWE_GREEN_MEMORY, default 6g]" in verbose.stdout


def test_a_runs_log_lines_go_to_run_log_not_the_terminal(tmp_path, capsys):
    from orchestrator.log import configure_logging, get_logger, run_log

    configure_logging(level="INFO")
    bound_early = get_logger(run_id="r1")  # bound before the run log exists, like RunContext
    with run_log(tmp_path) as path:
        bound_early.info("phase", instance_id="demo__calc-1", phase="setup")
        get_logger().debug("too fine")
    bound_early.info("after the run")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["event"] for line in lines] == ["phase"]
    assert lines[0]["run_id"] == "r1" and lines[0]["instance_id"] == "demo__calc-1"
    assert lines[0]["level"] == "info" and "timestamp" in lines[0]
    err = capsys.readouterr().err
    assert "phase" not in err and "after the run" in err  # outside the run: stderr again

    configure_logging(level="INFO", verbose=True)
    with run_log(tmp_path):
        bound_early.info("echoed")
    assert "echoed" in capsys.readouterr().err and "echoed" in path.read_text()


def test_validation_report_merges_run_directories_and_records_files(tmp_path):
    """A sweep split over machines adds up: run directory + committed records, later wins."""
    from orchestrator.validation.sweep import SweepRecord, load_records, save_records

    def record(iid: str, ok: bool, cause: str = "") -> SweepRecord:
        return SweepRecord(instance_id=iid, repo="o/r", version="1.0", ok=ok, stage="done",
                           cause=cause, message=cause, timings={"setup": 1.0})  # fmt: skip

    earlier = tmp_path / "earlier.jsonl"
    save_records([record("o__r-1", False, "gold patch fails"), record("o__r-2", True)], earlier)
    run = tmp_path / "validate-run"
    (run / "instances" / "o__r-1").mkdir(parents=True)
    (run / "instances" / "o__r-1" / "validation.json").write_text(
        record("o__r-1", True).model_dump_json()
    )
    (run / "instances" / "o__r-3").mkdir(parents=True)
    (run / "instances" / "o__r-3" / "validation.json").write_text(
        record("o__r-3", True).model_dump_json()
    )
    merged, out = tmp_path / "all.jsonl", tmp_path / "validation.md"
    notes = tmp_path / "notes.md"
    notes.write_text("## Analysis\n\nby hand\n")
    done = swe_green("validation-report", str(earlier), str(run), "--out", str(out),
                     "--save-records", str(merged), "--notes", str(notes))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [(r.instance_id, r.ok) for r in load_records(merged)] == [
        ("o__r-1", True), ("o__r-2", True), ("o__r-3", True)
    ]  # fmt: skip
    text = out.read_text()
    assert "**3 of 3 instances validate**" in text and text.endswith("by hand\n")
    missing = swe_green("validation-report", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "No sweep at" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_validation_report_names_no_path_of_this_host(tmp_path):
    """Given absolute paths, the page's command names them relative to the root of the
    repository that holds the page, or, outside it, by their names alone."""
    from orchestrator.validation.sweep import SweepRecord, save_records

    repo = tmp_path / "checkout"
    (repo / ".git").mkdir(parents=True)
    (repo / "docs").mkdir()
    record = SweepRecord(instance_id="o__r-1", repo="o/r", version="1.0", ok=True, stage="done",
                         cause="", message="", timings={})  # fmt: skip
    inside, outside = repo / "runs" / "sweep.jsonl", tmp_path / "elsewhere" / "old.jsonl"
    for records in (inside, outside):
        records.parent.mkdir(parents=True)
        save_records([record], records)
    notes = repo / "docs" / "notes.md"
    notes.write_text("by hand\n")
    for out, command in (
        (repo / "docs" / "validation.md",
         "validation-report runs/sweep.jsonl old.jsonl --out docs/validation.md"
         " --notes docs/notes.md"),
        (tmp_path / "page.md",
         "validation-report sweep.jsonl old.jsonl --out page.md --notes notes.md"),
    ):  # fmt: skip
        done = swe_green("validation-report", str(inside), str(outside), "--out", str(out),
                         "--notes", str(notes))  # fmt: skip
        assert done.returncode == 0, done.stderr
        text = out.read_text()
        assert command in text
        assert str(tmp_path) not in text and f"/{tmp_path.parts[1]}/" not in text
