"""The settings as the components' own config models: every field documented and
range-checked, the old environment variables mapping as before, one clear error for a bad
value, and each default written once (the CLI's help and the site's settings table come from the
models)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import annotated_types
import pytest

from orchestrator.errors import UserError
from orchestrator.frontends.cli.setting_help import fill, option_help, setting_choices
from orchestrator.settings import (
    GROUP_OF,
    GROUPS,
    Settings,
    load_settings,
    setting_names,
    settings_table,
)
from orchestrator.settings.base import ComponentConfig
from orchestrator.settings.describe import default_text, setting_default

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _only_the_test_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No SWE_GREEN_* of the caller and no swe-green.toml: the test sets what it needs."""
    for key in list(os.environ):
        if key.upper().startswith("SWE_GREEN_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)


# --------------------------------------------------------------------------- the models


def _fields() -> list[tuple[str, str, Any]]:
    return [(group, name, GROUPS[group].model_fields[name]) for name, group in GROUP_OF.items()]


def test_settings_compose_one_config_per_component():
    assert list(Settings.model_fields) == list(GROUPS)
    for group, config in GROUPS.items():
        assert issubclass(config, ComponentConfig), group
        assert Settings.model_fields[group].annotation is config
        assert config.__doc__ and config.__module__ == f"orchestrator.settings.{group}"
    # one flat name per setting: no two components own the same name
    assert len(GROUP_OF) == sum(len(c.model_fields) for c in GROUPS.values())


@pytest.mark.parametrize(("group", "name", "field"), _fields(), ids=lambda v: str(v)[:40])
def test_every_field_is_documented(group, name, field):
    assert field.description and len(field.description) > 10, f"{group}.{name}"
    assert field.description.strip() == field.description


def _bounded(field: Any) -> bool:
    kinds = (annotated_types.Gt, annotated_types.Ge, annotated_types.Lt, annotated_types.Le)
    return any(isinstance(m, kinds) for m in field.metadata)


@pytest.mark.parametrize(("group", "name", "field"), _fields(), ids=lambda v: str(v)[:40])
def test_every_number_is_range_checked(group, name, field):
    annotation = str(field.annotation)
    if ("int" in annotation or "float" in annotation) and "bool" not in annotation:
        assert _bounded(field), f"{group}.{name} has no range"


def test_assignment_is_range_checked_too():
    settings = Settings()
    with pytest.raises(ValueError, match="greater than 0"):
        settings.grading.test_timeout = 0
    with pytest.raises(ValueError, match="unknown setting"):
        settings.replace(nonsense=1)


# --------------------------------------------------------------------------- env vars

# the environment variables users set before the settings were split per component, a value
# for each, and where it lands: (variable, value, (component, field), loaded value)
OLD_ENVIRONMENT = [
    ("SWE_GREEN_DATA_DIR", "/srv/cache", ("storage", "data_dir"), Path("/srv/cache")),
    ("SWE_GREEN_RUNS_DIR", "/srv/runs", ("storage", "runs_dir"), Path("/srv/runs")),
    ("SWE_GREEN_DATASET", "x.jsonl", ("dataset", "dataset"), "x.jsonl"),
    ("SWE_GREEN_DATASET_SPLIT", "dev", ("dataset", "dataset_split"), "dev"),
    ("SWE_GREEN_REPO_URL_TEMPLATE", "file:///m/{owner_name}.git", ("repos", "repo_url_template"),
     "file:///m/{owner_name}.git"),
    ("SWE_GREEN_MIRROR_DIR", "/work/mirrors", ("repos", "mirror_dir"), Path("/work/mirrors")),
    ("SWE_GREEN_RECIPES_FILE", "r.json", ("environment", "recipes_file"), Path("r.json")),
    ("SWE_GREEN_SETUP_STRATEGY", "llm", ("environment", "setup_strategy"), "llm"),
    ("SWE_GREEN_FETCH_PYTHON", "1", ("environment", "fetch_python"), True),
    ("SWE_GREEN_PYTHON_MIRROR", "http://m/", ("environment", "python_mirror"), "http://m/"),
    ("SWE_GREEN_INSTALL_TIMEOUT", "99", ("environment", "install_timeout"), 99.0),
    ("SWE_GREEN_ENV_FAILURE_TTL", "0", ("environment", "env_failure_ttl"), 0.0),
    ("SWE_GREEN_IMAGE_PREFIX", "h23s", ("environment", "image_prefix"), "h23s"),
    ("SWE_GREEN_SHARE_HISTORY", "false", ("environment", "share_history"), False),
    ("SWE_GREEN_BASE_PYTHON", "3.13", ("environment", "base_python"), "3.13"),
    ("SWE_GREEN_BASE_IMAGE_REGISTRY", "ghcr.io/o/b", ("environment", "base_image_registry"),
     "ghcr.io/o/b"),
    ("SWE_GREEN_REGISTRY_PYTHONS", "3.11", ("environment", "registry_pythons"), "3.11"),
    ("SWE_GREEN_ENV_IMAGE_REGISTRY", "10.0.0.5:5000/", ("environment", "env_image_registry"),
     "10.0.0.5:5000"),
    ("SWE_GREEN_REGISTRY_INSTANCE_IMAGES", "no", ("environment", "registry_instance_images"),
     False),
    ("SWE_GREEN_ANTHROPIC_API_KEY", "sk-x", ("setup_agent", "anthropic_api_key"), "sk-x"),
    ("SWE_GREEN_ANTHROPIC_BASE_URL", "http://a/", ("setup_agent", "anthropic_base_url"),
     "http://a/"),
    ("SWE_GREEN_SETUP_MODEL", "m", ("setup_agent", "setup_model"), "m"),
    ("SWE_GREEN_SETUP_MAX_TURNS", "7", ("setup_agent", "setup_max_turns"), 7),
    ("SWE_GREEN_SETUP_MAX_TOKENS", "1000", ("setup_agent", "setup_max_tokens"), 1000),
    ("SWE_GREEN_SETUP_TIMEOUT", "60", ("setup_agent", "setup_timeout"), 60.0),
    ("SWE_GREEN_VALIDATE_ENV", "false", ("validation", "validate_env"), False),
    ("SWE_GREEN_VALIDATION_RUNS", "3", ("validation", "validation_runs"), 3),
    ("SWE_GREEN_CPUS", "1.5", ("sandbox", "cpus"), 1.5),
    ("SWE_GREEN_MEMORY", "512m", ("sandbox", "memory"), "512m"),
    ("SWE_GREEN_PIDS_LIMIT", "64", ("sandbox", "pids_limit"), 64),
    ("SWE_GREEN_EXEC_OUTPUT_LIMIT", "100", ("sandbox", "exec_output_limit"), 100),
    ("SWE_GREEN_DISK_LIMIT", "0", ("sandbox", "disk_limit"), "0"),
    ("SWE_GREEN_DISK_POLL", "0.5", ("sandbox", "disk_poll"), 0.5),
    ("SWE_GREEN_BACKEND", "local", ("sandbox", "backend"), "local"),
    ("SWE_GREEN_DOCKER_POLICY", "restricted", ("sandbox", "docker_policy"), "restricted"),
    ("SWE_GREEN_KEEP_CONTAINERS", "always", ("housekeeping", "keep_containers"), "always"),
    ("SWE_GREEN_MAX_KEPT_PER_RUN", "3", ("housekeeping", "max_kept_per_run"), 3),
    ("SWE_GREEN_MAX_KEPT_PER_HOST", "4", ("housekeeping", "max_kept_per_host"), 4),
    ("SWE_GREEN_MAX_TOOL_CALLS", "9", ("participant", "max_tool_calls"), 9),
    ("SWE_GREEN_TOOL_TIMEOUT", "30", ("participant", "tool_timeout"), 30.0),
    ("SWE_GREEN_INSTANCE_TIMEOUT", "600", ("participant", "instance_timeout"), 600.0),
    ("SWE_GREEN_PARTICIPANT_TIMEOUT", "20", ("participant", "participant_timeout"), 20.0),
    ("SWE_GREEN_MAX_REPLY_BYTES", "1000", ("participant", "max_reply_bytes"), 1000),
    ("SWE_GREEN_PATCH_FUZZ", "3", ("grading", "patch_fuzz"), 3),
    ("SWE_GREEN_TEST_TIMEOUT", "42", ("grading", "test_timeout"), 42.0),
    ("SWE_GREEN_GRADE_IN_PARTICIPANT_CONTAINER", "true",
     ("grading", "grade_in_participant_container"), True),
    ("SWE_GREEN_UNPRIVILEGED_TESTS", "false", ("grading", "unprivileged_tests"), False),
    ("SWE_GREEN_CONCURRENCY", "2", ("run", "concurrency"), 2),
    ("SWE_GREEN_LOG_JSON", "true", ("run", "log_json"), True),
    ("SWE_GREEN_LOG_LEVEL", "debug", ("run", "log_level"), "DEBUG"),
    ("SWE_GREEN_RAY_ADDRESS", "auto", ("run", "ray_address"), "auto"),
    ("SWE_GREEN_RAY_MAX_RETRIES", "0", ("run", "ray_max_retries"), 0),
    ("SWE_GREEN_RAY_SLOTS_RESOURCE", "slots", ("run", "ray_slots_resource"), "slots"),
    ("SWE_GREEN_SERVE_TOKEN", "t0k", ("serve", "serve_token"), "t0k"),
    ("SWE_GREEN_SERVE_ALLOWED_HOSTS", "127.0.0.1", ("serve", "serve_allowed_hosts"),
     "127.0.0.1"),
    ("SWE_GREEN_SERVE_INSECURE", "1", ("serve", "serve_insecure"), True),
    ("SWE_GREEN_SERVE_KEEP_CONTAINERS", "on_failure", ("serve", "serve_keep_containers"),
     "on_failure"),
    ("SWE_GREEN_SERVE_MAX_KEPT_CONTAINERS", "2", ("serve", "serve_max_kept_containers"), 2),
]  # fmt: skip


@pytest.mark.parametrize(("variable", "value", "where", "loaded"), OLD_ENVIRONMENT,
                         ids=[row[0] for row in OLD_ENVIRONMENT])  # fmt: skip
def test_the_old_environment_variables_map_as_before(monkeypatch, variable, value, where, loaded):
    monkeypatch.setenv(variable, value)
    settings = load_settings()
    group, name = where
    assert getattr(getattr(settings, group), name) == loaded
    # the flat name is still the TOML key, the keyword and the name `swe-green config` shows
    assert settings.flat()[name] == getattr(getattr(settings, group), name) or isinstance(
        loaded, Path
    )
    assert load_settings(**{name: value}).model_dump() == settings.model_dump()


def test_every_old_setting_still_exists_and_all_at_once_load():
    assert {row[2][1] for row in OLD_ENVIRONMENT} <= set(setting_names())
    env = {variable: value for variable, value, _, _ in OLD_ENVIRONMENT}
    with pytest.MonkeyPatch.context() as patch:
        for variable, value in env.items():
            patch.setenv(variable, value)
        settings = load_settings()
    for _, _, (group, name), loaded in OLD_ENVIRONMENT:
        assert getattr(getattr(settings, group), name) == loaded, name


def test_a_toml_file_takes_flat_keys_and_component_tables(tmp_path):
    (tmp_path / "swe-green.toml").write_text(
        'test_timeout = 5\nkeep_containers = "never"\n[validation]\nvalidation_runs = 2\n'
    )
    settings = load_settings()
    assert settings.grading.test_timeout == 5
    assert settings.housekeeping.keep_containers == "never"
    assert settings.validation.validation_runs == 2


def test_a_toml_table_of_the_old_groups_still_works(tmp_path):
    """validate_env was in [environment], keep_containers in [sandbox]: a table only groups."""
    (tmp_path / "swe-green.toml").write_text(
        '[environment]\nvalidate_env = false\n[sandbox]\nkeep_containers = "always"\ncpus = 1\n'
    )
    settings = load_settings()
    assert settings.validation.validate_env is False
    assert settings.housekeeping.keep_containers == "always" and settings.sandbox.cpus == 1
    (tmp_path / "swe-green.toml").write_text("[sandbox]\ncpuz = 1\n")
    with pytest.raises(UserError, match="Unknown setting 'cpuz'"):
        load_settings()


# --------------------------------------------------------------------------- bad values

BAD = [
    ("SWE_GREEN_TEST_TIMEOUT", "-1", "greater than 0"),
    ("SWE_GREEN_CPUS", "0", "greater than 0"),
    ("SWE_GREEN_VALIDATION_RUNS", "11", "less than or equal to 10"),
    ("SWE_GREEN_PATCH_FUZZ", "-1", "greater than or equal to 0"),
    ("SWE_GREEN_MAX_KEPT_PER_RUN", "-2", "greater than or equal to 0"),
    ("SWE_GREEN_MEMORY", "lots", "not a size"),
    ("SWE_GREEN_MEMORY", "1m", "not a memory size of 6m or more"),
    ("SWE_GREEN_DISK_LIMIT", "-5g", "cannot be negative"),
    ("SWE_GREEN_BASE_PYTHON", "three", "should match pattern"),
    ("SWE_GREEN_REGISTRY_PYTHONS", "3.9;3.11", "should match pattern"),
    ("SWE_GREEN_SETUP_STRATEGY", "magic", "'auto', 'recipe', 'infer' or 'llm'"),
    ("SWE_GREEN_KEEP_CONTAINERS", "sometimes", "'on_failure', 'always' or 'never'"),
    ("SWE_GREEN_ENV_IMAGE_REGISTRY", "http://r:5000", "no scheme"),
    ("SWE_GREEN_CONCURRENCY", "0", "greater than or equal to 1"),
    ("SWE_GREEN_DATASET", "", "at least 1 character"),
]


@pytest.mark.parametrize(("variable", "value", "problem"), BAD, ids=[f"{b[0]}={b[1]}" for b in BAD])
def test_a_bad_environment_value_is_one_error_naming_the_variable_and_the_fix(
    monkeypatch, variable, value, problem
):
    monkeypatch.setenv(variable, value)
    name = variable.removeprefix("SWE_GREEN_").lower()
    with pytest.raises(UserError) as caught:
        load_settings()
    text = str(caught.value)
    assert f"Invalid setting {name}:" in text and problem in text, text
    default = default_text(setting_default(name))
    assert f"correct {variable} in the environment, or unset it for the default ({default})" in (
        caught.value.fix or ""
    )


def test_a_bad_value_from_the_file_or_an_option_names_its_source(tmp_path):
    (tmp_path / "swe-green.toml").write_text("[sandbox]\npids_limit = 0\n")
    with pytest.raises(UserError) as caught:
        load_settings()
    assert "pids_limit" in str(caught.value)
    assert "the key pids_limit in swe-green.toml, or remove it" in (caught.value.fix or "")
    (tmp_path / "swe-green.toml").unlink()
    with pytest.raises(UserError) as caught:
        load_settings(test_timeout=-3)
    assert "the value given for test_timeout" in (caught.value.fix or "")


def test_the_cli_prints_one_line_and_no_traceback_for_a_bad_variable(tmp_path):
    """The installed ``swe-green`` script in a fresh process: the process boundary is the point
    (the console entry point of the package, and nothing printed before ``main`` runs)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWE_GREEN_")}
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "swe-green"), "config"],
        env={**env, "SWE_GREEN_TEST_TIMEOUT": "-1", "COLUMNS": "250"},
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "test_timeout" in lines[0] and "SWE_GREEN_TEST_TIMEOUT" in lines[0]


# --------------------------------------------------------------------------- defaults once


def _options() -> list[tuple[str, str]]:
    """(command, help) of every option of every CLI command."""
    from orchestrator.frontends.cli.app import walk
    from orchestrator.frontends.cli.setting_help import fill

    return [
        (" ".join(["swe-green", *path, param.opts[0]]), fill(param.help))
        for path, command in walk()
        for param in command.params
        if getattr(param, "help", None)
    ]


def test_cli_help_defaults_come_from_the_models():
    mentions = [
        (where, m) for where, text in _options() for m in re.finditer(
            r"\(setting (\w+)(?:, default ([^)]*?))?\)", text
        )
    ]  # fmt: skip
    assert len(mentions) >= 8, mentions  # run, validate, serve... name their settings
    for where, match in mentions:
        name, shown = match.group(1), match.group(2)
        assert name in GROUP_OF, f"{where} names no setting {name!r}"
        if shown is not None:
            default = setting_default(name)
            expected = "unset" if default is None else default_text(default)
            assert shown.rstrip(".") == expected, f"{where}: default {shown} != model {expected}"


def test_option_help_follows_the_model(monkeypatch):
    field = GROUPS["grading"].model_fields["test_timeout"]
    monkeypatch.setattr(field, "default", 77)
    written = option_help("test_timeout", "Seconds")
    assert "77" not in written  # the default is read when the help is shown, not before
    assert fill(written) == "Seconds (setting test_timeout, default 77)."
    assert fill(option_help("test_timeout")).startswith(field.description.rstrip("."))
    assert fill(setting_choices("setup_strategy")).endswith(" or llm")


def _default_literals() -> dict[str, str]:
    """Each setting's default as text, where the text is specific enough to be searched."""
    out = {}
    for name in GROUP_OF:
        default = setting_default(name)
        if default is None or isinstance(default, bool) or default == "":
            continue
        out[name] = default_text(default)
    return out


def test_no_default_is_written_again_in_the_front_ends_or_the_documentation():
    """A default appears once: in its model (the site's settings table is generated). Front
    ends and prose may name a setting, not repeat its default."""
    sources = sorted((ROOT / "orchestrator" / "frontends").rglob("*.py"))
    docs = ROOT / "docs"
    pages = [ROOT / "README.md", *sorted(docs.glob("*/*.md"))]  # guide, reference, deployment
    pages += [docs / f"{name}.md" for name in ("index", "grading", "performance", "contributing")]
    texts = {path.relative_to(ROOT): path.read_text() for path in [*sources, *pages]}
    found = []
    for name, literal in _default_literals().items():
        patterns = [
            rf"default:?\s+`?{re.escape(literal)}\b",  # "default 1800", "default `auto`"
            rf"`?{name}`?\s+\(`?{re.escape(literal)}`?\)",  # "`max_kept_per_run` (20)"
        ]
        for where, text in texts.items():
            for pattern in patterns:
                found += [f"{where}: {m.group(0)!r}" for m in re.finditer(pattern, text)]
    assert not found, found


def test_the_settings_page_is_the_models_table():
    from orchestrator.frontends.docs.reference_pages import fill

    page = (ROOT / "docs" / "reference" / "settings.md").read_text()
    assert settings_table().replace("[", "\\[") in fill(page)


def test_config_markdown_prints_the_table(tmp_path):
    from click.testing import CliRunner

    from orchestrator.frontends.cli.app import app

    result = CliRunner().invoke(app, ["config", "--markdown"])
    assert result.exit_code == 0, result.output
    assert result.output == settings_table()
    assert result.output.count("\n") == len(GROUP_OF) + 2


def test_the_protocols_example_task_announces_the_models_limits_and_tools():
    """docs/protocol.md shows the first message's data with the default settings: it is
    checked against the models (a changed default or tool changes the example, or fails)."""
    import json

    from orchestrator.participant.client import ParticipantLimits
    from orchestrator.tools.tools_host import default_tools

    doc = (ROOT / "docs" / "protocol.md").read_text()
    block = doc[doc.index("```json") + len("```json") :]
    example = json.loads(block[: block.index("```")])
    assert example["limits"] == ParticipantLimits().wire().model_dump()
    assert example["limits"]["tool_timeout"] == setting_default("tool_timeout")
    assert example["tools"] == default_tools()
