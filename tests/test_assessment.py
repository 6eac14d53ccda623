"""The assessment request: what is accepted, and the message for what is not."""

from __future__ import annotations

import json

import pytest

from orchestrator.errors import UserError
from orchestrator.frontends.server.assessment import (
    CONFIG_KEYS,
    LIMITS,
    SETTINGS_KEYS,
    AssessmentRequest,
    InvalidAssessment,
    parse_request,
    validate_request,
)
from orchestrator.frontends.server.request_json import max_depth
from orchestrator.frontends.server.request_policy import (
    refusal_text,
    refused_overrides,
    request_key,
)
from orchestrator.settings import Settings, load_settings
from orchestrator.settings.serve import REQUESTER_OVERRIDES

URL = "http://127.0.0.1:9019/"


def _request(config: object = None, **top: object) -> str:
    payload: dict[str, object] = {"participants": {"agent": URL}, **top}
    if config is not None:
        payload["config"] = config
    return json.dumps(payload)


def _problem(text: str, data: list | None = None) -> str:
    with pytest.raises(InvalidAssessment) as caught:
        parse_request(text, data)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_minimal_request_selects_everything_with_default_settings() -> None:
    request = parse_request(_request())
    assert (request.role, request.participant_url) == ("agent", URL)
    assert request.selection().model_dump() == {
        "ids": None,
        "pattern": None,
        "repo": None,
        "count": None,
        "shard": None,
        "created_after": None,
    }
    assert request.to_settings_overrides() == {}


def test_full_config_maps_to_selection_and_settings() -> None:
    config = {
        "instance_ids": ["a__b-1", "a__b-2"],
        "pattern": "a__*",
        "repo": "a/b",
        "count": 2,
        "shard": "1/2",
        "created_after": "2025-06-01",
        "concurrency": 3,
        "setup_strategy": "recipe",
        "instance_timeout": 600,
        "tool_timeout": 30.5,
        "test_timeout": 900,
        "participant_timeout": 120,
        "max_tool_calls": 50,
        "validate": False,
    }
    request = parse_request(_request(config))
    assert request.selection().model_dump() == {
        "ids": ["a__b-1", "a__b-2"],
        "pattern": "a__*",
        "repo": "a/b",
        "count": 2,
        "shard": "1/2",
        "created_after": "2025-06-01",
    }
    overrides = request.to_settings_overrides()
    assert overrides == {
        "concurrency": 3,
        "setup_strategy": "recipe",
        "instance_timeout": 600.0,
        "tool_timeout": 30.5,
        "test_timeout": 900.0,
        "participant_timeout": 120.0,
        "max_tool_calls": 50,
        "validate_env": False,
    }
    # every override is a real Settings field with a value Settings accepts
    settings = Settings(**overrides)
    assert settings.validation.validate_env is False and settings.participant.max_tool_calls == 50


def test_every_known_key_is_accepted() -> None:
    values = {
        "instance_ids": "x",
        "pattern": "*",
        "repo": "r",
        "count": 1,
        "num_instances": 1,
        "max_rows": 1,
        "shard": "1/1",
        "shard_index": 0,
        "num_shards": 1,
        "concurrency": 1,
        "max_concurrent_rows": 1,
        "setup_strategy": "auto",
        "instance_timeout": 1,
        "tool_timeout": 1,
        "test_timeout": 1,
        "participant_timeout": 1,
        "max_tool_calls": 1,
        "validate": True,
        "wider_tests": True,
        "created_after": "2025-06-01",
    }
    assert set(values) == set(CONFIG_KEYS)
    for key, value in values.items():
        config = {key: value}
        if key == "shard_index":
            config["num_shards"] = 1
        assert parse_request(_request(config)).ignored == []


def test_a_request_turns_the_wider_run_on() -> None:
    request = parse_request(_request({"wider_tests": True}))
    assert request.to_settings_overrides() == {"wider_tests": True}
    assert Settings(**request.to_settings_overrides()).grading.wider_tests is True


def test_ids_as_comma_string() -> None:
    request = parse_request(_request({"instance_ids": "a__b-1, a__b-2,a__b-3"}))
    assert request.selection().ids == ["a__b-1", "a__b-2", "a__b-3"]


def test_integral_floats_from_data_parts_are_whole_numbers() -> None:
    request = parse_request(_request({"count": 3.0, "concurrency": 2.0, "max_tool_calls": 10.0}))
    assert request.config.count == 3 and isinstance(request.config.count, int)
    assert request.to_settings_overrides() == {"concurrency": 2, "max_tool_calls": 10}


def test_num_instances_is_a_synonym_of_count() -> None:
    assert parse_request(_request({"num_instances": 5})).selection().count == 5
    message = _problem(_request({"num_instances": 5, "count": 4}))
    assert "'count' and 'num_instances', which mean the same" in message


@pytest.mark.parametrize("key", ["count", "num_instances", "max_rows"])
@pytest.mark.parametrize("all_value", [-1, -1.0, None])
def test_minus_one_or_null_count_means_all(key: str, all_value: object) -> None:
    assert parse_request(_request({key: all_value})).selection().count is None


def test_max_rows_and_max_concurrent_rows_are_synonyms() -> None:
    request = parse_request(_request({"max_rows": 7, "max_concurrent_rows": 2.0}))
    assert request.selection().count == 7
    assert request.to_settings_overrides() == {"concurrency": 2}
    message = _problem(_request({"max_concurrent_rows": 2, "concurrency": 3}))
    assert "'concurrency' and 'max_concurrent_rows'" in message


def test_the_workflows_config_maps_to_a_1_based_shard() -> None:
    """The leaderboard workflows add shard_index (0-based), num_shards, num_instances."""
    for index, expected in [(0, "1/4"), (3, "4/4")]:
        config = {"shard_index": index, "num_shards": 4, "num_instances": 20}
        request = parse_request(_request(config))
        assert request.selection().shard == expected and request.selection().count == 20
        assert request.ignored == []
    # as floats too, the way a data part carries them
    request = parse_request(_request({"shard_index": 1.0, "num_shards": 2.0}))
    assert request.selection().shard == "2/2"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"shard_index": 2, "num_shards": 2}, "shard_index 2 is out of range for num_shards 2"),
        ({"shard_index": 0}, '"shard_index" without "num_shards"'),
        ({"shard_index": -1, "num_shards": 2}, "shard_index: Input should be greater than or"),
        ({"shard_index": "0", "num_shards": "two"}, "num_shards: Input should be a valid int"),
        ({"shard": "1/2", "shard_index": 0, "num_shards": 2}, "which mean the same"),
        ({"num_shards": 0}, "num_shards: Input should be greater than or equal to 1"),
        ({"num_instances": 0}, "count: Input should be greater than or equal to 1"),
        ({"num_instances": -2}, "count: Input should be greater than or equal to 1"),
        ({"num_instances": "all"}, "count: Input should be a valid integer"),
    ],
)
def test_wrong_workflow_values_are_rejected(config: dict, expected: str) -> None:
    assert expected in _problem(_request(config))


def test_unknown_keys_are_ignored_and_named() -> None:
    config = {"instance_list": ["x"], "bogus": 1, "count": 2}
    request = parse_request(_request(config, extra={"a": 1}))
    assert request.selection().count == 2
    assert request.ignored == [
        "'extra'",
        "'config.instance_list' (did you mean 'instance_ids'?)",
        "'config.bogus'",
    ]
    assert request.ignored_text().startswith("Ignored unknown keys: 'extra', ")
    assert parse_request(_request({"count": 1})).ignored_text() == ""


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        ("instance_id", "instance_ids"),
        ("Instance_ids", "instance_ids"),
        ("cuont", "count"),
        ("patern", "pattern"),
        ("repos", "repo"),
        ("shards", "shard"),
        ("num_shard", "num_shards"),
        ("shard_idx", None),  # two edits away: ignored with a hint, like any unknown key
    ],
)
def test_a_misspelt_selection_key_is_rejected_never_widened(key: str, meant: str | None) -> None:
    # every selection key misspelt: ignoring them would run the whole dataset
    text = _request({key: ["demo__calc-1"] if "instance" in key else "1"})
    if meant is None:
        assert parse_request(text).ignored
        return
    message = _problem(text)
    assert f"Unknown config key {key!r}: did you mean {meant!r}?" in message
    assert "whole dataset" in message


def test_request_in_a_data_part() -> None:
    payload = {"participants": {"agent": URL}, "config": {"count": 1.0}}
    request = parse_request("", [payload])
    assert request.selection().count == 1
    # a data part that is not a request is ignored in favour of the text
    request = parse_request(_request({"count": 2}), [{"type": "other"}])
    assert request.selection().count == 2


def test_fenced_json_text() -> None:
    text = "```json\n" + _request({"count": 1}) + "\n```"
    assert parse_request(text).selection().count == 1


@pytest.mark.parametrize(
    ("key", "meant"),
    [("configs", "config"), ("confg", "config"), ("Config", "config"), ("CONFIG", "config"),
     ("configuration", "config"), ("Participants", "participants")],
)  # fmt: skip
def test_a_misspelt_top_level_key_is_rejected_never_widened(key: str, meant: str) -> None:
    payload: dict = {"participants": {"agent": URL}, key: {"instance_ids": ["demo__calc-1"]}}
    if key == "Participants":
        payload = {"participants": {"agent": URL}, key: {"agent": URL}}
    message = _problem(json.dumps(payload))
    assert f"Unknown key {key!r} in the assessment request: did you mean {meant!r}?" in message
    assert "'participants', 'config'" in message and "whole dataset" in message


def test_an_unrelated_top_level_key_is_ignored_with_its_name() -> None:
    request = parse_request(json.dumps({"participants": {"agent": URL}, "metadata": {}}))
    assert request.ignored == ["'metadata'"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "is empty"),
        ("run everything please", "is not JSON"),
        ("[1, 2]", "JSON array, not an object"),
        ("{}", 'has no "participants"'),
        ('{"participants": []}', '"participants" is a JSON array'),
        ('{"participants": {}}', '"participants" is empty'),
        (
            '{"participants": {"a": "http://x:1/", "b": "http://y:2/"}}',
            "names 2 participants (a, b); this benchmark evaluates exactly one",
        ),
        ('{"participants": {"agent": "not a url"}}', "no valid http(s) URL: 'not a url'"),
        ('{"participants": {"agent": "ftp://host/"}}', "URL scheme should be 'http' or 'https'"),
        ('{"participants": {"agent": 42}}', "has a JSON number instead of a URL"),
        ('{"participants": {"agent": "http://x:1/"}, "config": [1]}', '"config" is a JSON array'),
    ],
)
def test_malformed_requests(text: str, expected: str) -> None:
    assert expected in _problem(text)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"shard": "3/2"}, "shard: Shard '3/2' is out of range"),
        ({"shard": "half"}, "shard: Shard 'half' is not of the form i/n"),
        ({"count": 0}, "count: Input should be greater than or equal to 1"),
        ({"count": 2.5}, "count: Input should be a valid integer, got a number with a fractional"),
        ({"count": True}, "count: expected a number, not true/false"),
        ({"concurrency": -1}, "concurrency: Input should be greater than or equal to 1"),
        ({"instance_timeout": 0}, "instance_timeout: Input should be greater than 0"),
        (
            {"setup_strategy": "magic"},
            "setup_strategy: Input should be 'auto', 'recipe', 'infer' or 'llm'",
        ),
        ({"instance_ids": []}, "instance_ids: no instance id given"),
        ({"instance_ids": ""}, "instance_ids: no instance id given"),
        ({"validate": "perhaps"}, "validate: Input should be a valid boolean"),
    ],
)
def test_invalid_config_values(config: dict, expected: str) -> None:
    message = _problem(_request(config))
    assert message.startswith("Invalid config: ")
    assert expected in message


def test_all_invalid_values_are_reported_at_once() -> None:
    message = _problem(_request({"count": 0, "shard": "x"}))
    assert "count:" in message and "shard:" in message


def test_validate_request_takes_a_decoded_object() -> None:
    request = validate_request({"participants": {"purple": f" {URL} "}})
    assert isinstance(request, AssessmentRequest)
    assert request.participants == {"purple": URL}


# ---------------------------------------------------------------------- hostile requests
@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"tool_timeout": 1e300}, "tool_timeout: Input should be less than or equal to 3600"),
        ({"test_timeout": 1e300}, "test_timeout: Input should be less than or equal to 14400"),
        ({"instance_timeout": 86401}, "instance_timeout: Input should be less than or equal"),
        ({"participant_timeout": 1e9}, "participant_timeout: Input should be less than or eq"),
        ({"max_tool_calls": 10**15}, "max_tool_calls: Input should be less than or equal to 1"),
        ({"count": 10**6}, "count: Input should be less than or equal to 100000"),
        ({"concurrency": 65}, "concurrency: Input should be less than or equal to 64"),
        ({"num_shards": 10**5}, "num_shards: Input should be less than or equal to 10000"),
        ({"test_timeout": "inf"}, "test_timeout: expected a finite number, not infinity or NaN"),
        ({"tool_timeout": "NaN"}, "tool_timeout: expected a finite number, not infinity or NaN"),
    ],
)
def test_every_limit_has_an_upper_bound(config: dict, expected: str) -> None:
    message = _problem(_request(config))
    assert expected in message


def test_limits_at_their_bound_are_accepted() -> None:
    config = {key: value for key, value in LIMITS.items() if key != "num_shards"}
    request = parse_request(_request(config))
    assert request.to_settings_overrides()["test_timeout"] == LIMITS["test_timeout"]


@pytest.mark.parametrize("constant", ["Infinity", "-Infinity", "NaN"])
@pytest.mark.parametrize("key", ["test_timeout", "tool_timeout", "count"])
def test_infinity_and_nan_in_the_text_are_rejected(constant: str, key: str) -> None:
    text = _request({key: 1}).replace("1}}", constant + "}}")
    message = _problem(text)
    assert f"not plain JSON: it contains {constant}" in message


def test_inf_and_nan_in_a_data_part_are_rejected() -> None:
    for value in (float("inf"), float("nan")):
        payload = {"participants": {"agent": URL}, "config": {"test_timeout": value}}
        assert "test_timeout: expected a finite number, not infinity or NaN" in _problem(
            "", [payload]
        )


def test_deep_nesting_is_rejected_before_parsing() -> None:
    text = "[" * 100_000 + "]" * 100_000
    assert "nests 100000 levels deep; the limit is 32" in _problem(text)
    nested = _request({"instance_ids": ["x"]})[:-1] + ', "deep": ' + "[" * 40 + "]" * 40 + "}"
    assert "nests 41 levels deep" in _problem(nested)
    # brackets inside strings do not count
    request = parse_request(_request({"pattern": "[[[[" * 20 + "*"}))
    assert request.selection().pattern.startswith("[[[[")


def test_a_number_with_thousands_of_digits_is_rejected() -> None:
    text = _request({"count": 1}).replace("1}}", "9" * 5000 + "}}")
    message = _problem(text)
    assert message.startswith("The assessment request cannot be read as JSON: Exceeds the limit")


def test_an_overlong_request_is_rejected() -> None:
    text = _request({"instance_ids": ["a__b-1"] * 200_000})
    assert "characters long; the limit is 1,000,000" in _problem(text)


def test_max_depth_counts_brackets_outside_strings() -> None:
    assert max_depth('{"a": [1, {"b": "]]]{{{\\"}]}') == 3
    assert max_depth('"[[["') == 0


# ------------------------------------------------- what a requester may spend
def test_the_keys_a_requester_may_spend_with_are_config_keys_that_become_settings() -> None:
    assert set(REQUESTER_OVERRIDES) <= set(CONFIG_KEYS)
    spelt = {request_key(name) for name in SETTINGS_KEYS.values()}
    assert set(REQUESTER_OVERRIDES) == spelt - {"concurrency"}  # capped at the host's slots


@pytest.mark.parametrize(
    ("asked", "operator", "refused"),
    [
        ("llm", "auto", True),
        ("auto", "recipe", True),
        ("llm", "recipe", True),
        ("recipe", "auto", False),
        ("auto", "auto", False),
        ("auto", "llm", False),
        ("infer", "recipe", False),  # no LLM either way
        ("auto", "infer", True),
    ],
)
def test_a_set_up_strategy_that_may_call_the_llm_more_is_refused(asked, operator, refused) -> None:
    found = refused_overrides({"setup_strategy": asked}, {"setup_strategy": operator}, set())
    assert bool(found) is refused
    assert not refused_overrides(
        {"setup_strategy": asked}, {"setup_strategy": operator}, {"setup_strategy"}
    )


def test_more_time_tool_calls_or_validation_is_refused_and_the_message_names_the_fix() -> None:
    operator = Settings().flat()
    asked = {
        "instance_timeout": operator["instance_timeout"] + 1,
        "tool_timeout": operator["tool_timeout"],  # the same: allowed
        "max_tool_calls": 1,  # less: allowed
        "validate_env": True,
    }
    operator["validate_env"] = False
    refused = refused_overrides(asked, operator, set())
    assert [r.key for r in refused] == ["instance_timeout", "validate"]
    text = refusal_text(refused)
    assert "serve_allowed_overrides=instance_timeout,validate" in text
    assert "--allow-requester instance_timeout" in text
    assert refused_overrides(asked, operator, {"instance_timeout", "validate"}) == []


def test_the_operators_allow_list_is_range_checked() -> None:
    assert load_settings(serve_allowed_overrides="setup_strategy, validate").serve
    with pytest.raises(UserError, match="unknown key.*concurrency"):
        load_settings(serve_allowed_overrides="concurrency")
