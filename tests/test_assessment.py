"""The assessment request: what is accepted, and the message for what is not."""

from __future__ import annotations

import json

import pytest

from orchestrator.assessment import (
    CONFIG_KEYS,
    AssessmentRequest,
    InvalidAssessment,
    parse_request,
    validate_request,
)
from orchestrator.settings import Settings

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
    }
    assert request.to_settings_overrides() == {}


def test_full_config_maps_to_selection_and_settings() -> None:
    config = {
        "instance_ids": ["a__b-1", "a__b-2"],
        "pattern": "a__*",
        "repo": "a/b",
        "count": 2,
        "shard": "1/2",
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
    assert settings.validate_env is False and settings.max_tool_calls == 50


def test_every_known_key_is_accepted() -> None:
    values = {
        "instance_ids": "x",
        "pattern": "*",
        "repo": "r",
        "count": 1,
        "num_instances": 1,
        "shard": "1/1",
        "concurrency": 1,
        "setup_strategy": "auto",
        "instance_timeout": 1,
        "tool_timeout": 1,
        "test_timeout": 1,
        "participant_timeout": 1,
        "max_tool_calls": 1,
        "validate": True,
    }
    assert set(values) == set(CONFIG_KEYS)
    for key, value in values.items():
        parse_request(_request({key: value}))


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
    assert '"count"' in message and '"num_instances"' in message


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


def test_unknown_config_keys_are_named_with_the_known_ones() -> None:
    message = _problem(_request({"instance_id": ["x"], "bogus": 1}))
    assert "Unknown config keys" in message
    assert "'instance_id' (did you mean 'instance_ids'?)" in message
    assert "'bogus'" in message
    for key in CONFIG_KEYS:
        assert key in message


def test_unknown_top_level_key_is_rejected() -> None:
    message = _problem(json.dumps({"participants": {"agent": URL}, "configs": {"count": 1}}))
    assert "Unknown request key: 'configs' (did you mean 'config'?)" in message


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
        ({"count": 0}, "count: Input should be greater than 0"),
        ({"count": 2.5}, "count: Input should be a valid integer, got a number with a fractional"),
        ({"count": True}, "count: expected a number, not true/false"),
        ({"concurrency": -1}, "concurrency: Input should be greater than 0"),
        ({"instance_timeout": 0}, "instance_timeout: Input should be greater than 0"),
        ({"setup_strategy": "magic"}, "setup_strategy: Input should be 'auto', 'recipe' or 'llm'"),
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
