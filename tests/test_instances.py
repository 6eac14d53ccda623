import json
import socket
from pathlib import Path

import pytest
from pydantic import ValidationError

from orchestrator.dataset.instances import Selection, load_instances, parse_shard, resolve, select
from orchestrator.errors import UserError
from orchestrator.settings import Settings

from .reference_data import SHARED_VERIFIED, VERIFIED, shared_data, verified_rows


@pytest.fixture(scope="module")
def verified():
    """The excerpt of Verified in the fixtures (24 rows of ten repositories)."""
    return load_instances(str(VERIFIED))


@pytest.fixture
def rows():
    return verified_rows()[:6]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_loads_the_instances_in_order(verified):
    assert verified[0].instance_id == "astropy__astropy-12907"
    assert [i.instance_id for i in verified] == [r["instance_id"] for r in verified_rows()]
    first = verified[0]
    assert first.FAIL_TO_PASS and all(isinstance(t, str) for t in first.FAIL_TO_PASS)
    assert first.version == "4.3"
    assert first.created_at.startswith("2022-03-03T15:14:54")


@shared_data
def test_loads_all_verified_instances_in_order():
    verified = load_instances(str(SHARED_VERIFIED))
    assert len(verified) == 500
    assert verified[0].instance_id == "astropy__astropy-12907"
    ids = [r["instance_id"] for r in verified_rows(SHARED_VERIFIED)]
    assert [i.instance_id for i in verified] == ids
    assert sum(i.repo == "django/django" for i in verified) == 231


def test_loading_is_cached_within_the_process(verified):
    again = load_instances(str(VERIFIED))
    assert again is not verified
    assert again[0] is verified[0]


def test_jsonl_with_lists_and_json_strings_mixed(tmp_path, rows):
    for n, row in enumerate(rows):
        if n % 2:
            row = row | {"FAIL_TO_PASS": json.dumps(row["FAIL_TO_PASS"])}
            rows[n] = row | {"PASS_TO_PASS": json.dumps(row["PASS_TO_PASS"])}
    loaded = load_instances(str(write_jsonl(tmp_path / "mixed.jsonl", rows)))
    original = verified_rows()[:6]
    assert [i.FAIL_TO_PASS for i in loaded] == [r["FAIL_TO_PASS"] for r in original]
    assert [i.PASS_TO_PASS for i in loaded] == [r["PASS_TO_PASS"] for r in original]


def test_json_array_file(tmp_path, rows):
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(rows))
    assert [i.instance_id for i in load_instances(str(path))] == [r["instance_id"] for r in rows]


def test_parquet_directory_in_hub_layout_picks_the_split(tmp_path, rows):
    import datasets

    hub_rows = [
        r
        | {
            "FAIL_TO_PASS": json.dumps(r["FAIL_TO_PASS"]),
            "PASS_TO_PASS": json.dumps(r["PASS_TO_PASS"]),
        }
        for r in rows
    ]
    (tmp_path / "data").mkdir()
    datasets.Dataset.from_list(hub_rows[:4]).to_parquet(
        tmp_path / "data/test-00000-of-00001.parquet"
    )
    datasets.Dataset.from_list(hub_rows[4:]).to_parquet(
        tmp_path / "data/train-00000-of-00001.parquet"
    )
    (tmp_path / "README.md").write_text("# not data\n")

    test = load_instances(str(tmp_path), split="test")
    assert [i.instance_id for i in test] == [r["instance_id"] for r in rows[:4]]
    assert test[0].FAIL_TO_PASS == rows[0]["FAIL_TO_PASS"]
    train = load_instances(str(tmp_path), split="train")
    assert [i.instance_id for i in train] == [r["instance_id"] for r in rows[4:]]


def test_malformed_row_names_row_instance_and_field(tmp_path, rows):
    del rows[2]["base_commit"]
    with pytest.raises(UserError) as err:
        load_instances(str(write_jsonl(tmp_path / "bad.jsonl", rows)))
    message = str(err.value)
    assert "row 3" in message and rows[2]["instance_id"] in message and "base_commit" in message
    assert "\n" not in message


def test_test_list_that_is_not_json_is_malformed(tmp_path, rows):
    rows[1]["FAIL_TO_PASS"] = "[not json"
    rows = [
        r | {"FAIL_TO_PASS": json.dumps(r["FAIL_TO_PASS"])} if n != 1 else r
        for n, r in enumerate(rows)
    ]
    with pytest.raises(UserError, match=r"row 2 .*FAIL_TO_PASS"):
        load_instances(str(write_jsonl(tmp_path / "bad.jsonl", rows)))


def test_duplicate_instance_ids_are_rejected(tmp_path, rows):
    with pytest.raises(UserError, match="repeats instance id"):
        load_instances(str(write_jsonl(tmp_path / "dup.jsonl", rows + rows[:1])))


def test_unreadable_file_is_a_user_error(tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text('{"instance_id": "a", \n')
    with pytest.raises(UserError, match="Cannot read dataset"):
        load_instances(str(path))


def test_missing_paths_and_empty_directories(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_instances(str(tmp_path / "nope.jsonl"))
    with pytest.raises(UserError, match="no .jsonl"):
        load_instances(str(tmp_path))
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(UserError, match="not .jsonl"):
        load_instances(str(tmp_path / "x.csv"))


def test_unreachable_hub_fails_fast_with_a_one_line_fix(monkeypatch):
    from huggingface_hub import constants

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(UserError) as err:
        load_instances("someone/no-such-dataset-for-swe-green")
    message = str(err.value)
    assert "not reachable" in message and "SWE_GREEN_DATASET" in message and "--dataset" in message
    assert "\n" not in message


def test_select_by_ids_keeps_dataset_order(verified):
    picked = select(verified, ids=["sympy__sympy-24661", "astropy__astropy-12907"])
    assert [i.instance_id for i in picked] == ["astropy__astropy-12907", "sympy__sympy-24661"]


def test_unknown_ids_are_named_with_a_close_match(verified):
    with pytest.raises(UserError) as err:
        select(verified, ids=["django__django-11099", "django__django-1109x"])
    assert "django__django-1109x" in str(err.value)
    assert "django__django-11099" not in str(err.value).split("Did you mean")[0]
    assert "Did you mean" in str(err.value)


def test_pattern_repo_and_count(verified):
    django = select(verified, pattern="django__django-11*")
    assert django and all(i.instance_id.startswith("django__django-11") for i in django)
    assert select(verified, repo="flask") == select(verified, repo="pallets/flask")
    assert [i.instance_id for i in select(verified, repo="pallets/flask")] == [
        "pallets__flask-5014"
    ]
    sympy = select(verified, repo="sympy/sympy", count=3)
    assert len(sympy) == 3 and sympy == select(verified, repo="sympy")[:3]
    assert select(verified, repo="flask", pattern="django*") == []
    with pytest.raises(UserError, match="pattern"):
        select(verified, pattern="nothing-*")
    with pytest.raises(UserError, match="pallets/flask"):
        select(verified, repo="flaskk")
    with pytest.raises(UserError, match="Count"):
        select(verified, count=0)


@pytest.mark.parametrize("total", [1, 3, 4, 7, 600])
def test_shards_partition_the_selection(verified, total):
    chosen = select(verified, repo="django")
    shards = [select(verified, repo="django", shard=f"{i}/{total}") for i in range(1, total + 1)]
    assert [i for shard in shards for i in shard] == chosen
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1


def test_count_then_shard(verified):
    first = select(verified, count=10, shard="1/2")
    second = select(verified, count=10, shard="2/2")
    assert first + second == verified[:10]


@pytest.mark.parametrize("shard", ["0/4", "5/4", "1/0", "a/b", "2", "-1/3"])
def test_bad_shards(verified, shard):
    with pytest.raises(UserError):
        select(verified, shard=shard)
    with pytest.raises(ValidationError):
        Selection(shard=shard)


def test_parse_shard():
    assert parse_shard("2/4") == (2, 4)
    assert parse_shard(" 1 / 1 ") == (1, 1)


def test_selection_model():
    sel = Selection.model_validate({"ids": "a__b-1, c__d-2", "count": 5})
    assert sel.ids == ["a__b-1", "c__d-2"] and sel.count == 5
    with pytest.raises(ValidationError):
        Selection.model_validate({"count": 0})
    with pytest.raises(ValidationError):
        Selection.model_validate({"idz": ["x"]})


def test_resolve_uses_the_configured_dataset(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    settings = Settings(dataset=str(VERIFIED))
    picked = resolve(settings, Selection(repo="requests", shard="1/2"))
    assert [i.instance_id for i in picked] == ["psf__requests-2317"]  # of two


def test_a_misspelt_alias_names_the_aliases_and_the_closest(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # the hub is never asked
    with pytest.raises(UserError) as err:
        load_instances("verifed")
    message = str(err.value)
    assert "'verifed' is not a file here nor a known alias (verified, full, lite)" in message
    assert "did you mean 'verified'?" in message and "reachable" not in message
    assert "\n" not in message
