"""The unified-diff model: a patch read once gives back its exact text, knows its files, and is
what the steps after phase 6 take (none of them splits the text again)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from orchestrator.diffs.diff import GIT_STARTS, Patch, drop_binary_stubs
from orchestrator.diffs.safety import patch_path_problems, symlink_sections
from orchestrator.grading.audit import patch_lines
from orchestrator.grading.reinstall.contained import patch_paths
from orchestrator.grading.tamper_check import tamper_reasons
from orchestrator.models import Instance
from orchestrator.patches import take_patch
from orchestrator.recipes.harness_files import drop_harness_files
from orchestrator.recipes.recipe import Recipe

_GIT_ID = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.autocrlf=false"]
PNG = bytes(range(256)) * 8
INSTANCE = Instance(
    instance_id="demo__x-1", repo="demo/x", base_commit="0" * 40,
    environment_setup_commit="0" * 40, patch="", test_patch="", FAIL_TO_PASS=[],
    PASS_TO_PASS=[],
)  # fmt: skip


def git_diff(tmp: Path, before: dict[str, bytes], after: dict[str, bytes], *flags: str) -> str:
    """The staged ``git diff`` (renames found) from ``before`` to ``after``, as git writes it."""
    repo = tmp / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)

    def write(files: dict[str, bytes]) -> None:
        for rel, data in files.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_bytes(data)

    write(before)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), *_GIT_ID, "commit", "-qm", "base"], check=True)
    for rel in set(before) - set(after):
        (repo / rel).unlink()
    write(after)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    done = subprocess.run(
        ["git", "-C", str(repo), *_GIT_ID, "diff", "--cached", "-M", *flags],
        check=True, capture_output=True,
    )  # fmt: skip
    return done.stdout.decode("utf-8", "surrogateescape")


BEFORE = {
    "pkg/mod.py": b"def f():\n    return 1\n",
    "pkg/old_name.py": b"".join(b"line %d\n" % n for n in range(30)),
    "pkg/gone.py": b"x = 1\n",
    "pkg/dos.txt": b"one\r\ntwo\r\nthree\r\n",
    "pkg/tail.py": b"a = 1\n",
    "img/logo.png": PNG,
}
AFTER = {
    "pkg/mod.py": b"def f():\n    return 2\n",
    "pkg/new_name.py": b"".join(b"line %d\n" % n for n in range(30)) + b"line 30\n",
    "pkg/dos.txt": b"one\r\nTWO\r\nthree\r\n",
    "pkg/tail.py": b"a = 2",  # no newline at the end of the file
    "pkg/added.py": b"NEW = True\n",
    "img/logo.png": PNG[::-1],
}


@pytest.fixture(params=[(), ("--binary",)], ids=["binary-stub", "binary-data"])
def real_patch(tmp_path: Path, request: pytest.FixtureRequest) -> str:
    return git_diff(tmp_path, BEFORE, AFTER, *request.param)


def test_the_text_read_is_given_back_exactly(real_patch: str):
    preamble = "From: someone\r\nSubject: [PATCH] a fix\r\n\r\n---\n"
    for text in (
        real_patch,
        "Subject: a commit message\n\n" + real_patch,
        preamble + real_patch,
        real_patch.rstrip("\n"),  # the final newline lost in transport
        real_patch.replace("\n", "\r\n"),  # the whole text CRLF-converted in transport
        "",
        "I fixed it!\n+++ trust me\n",
    ):
        for starts in ((), GIT_STARTS):
            parsed = Patch.parse(text, *starts)
            assert parsed.text == text
            assert parsed.preamble + "".join(part.text for part in parsed.files) == text


def test_each_file_has_its_paths_and_kind(real_patch: str):
    parsed = Patch.parse(real_patch)
    kinds = {part.paths: part.kind for part in parsed.files}
    assert kinds == {
        ("img/logo.png",): "binary",
        ("pkg/added.py",): "added",
        ("pkg/dos.txt",): "modified",
        ("pkg/gone.py",): "deleted",
        ("pkg/mod.py",): "modified",
        ("pkg/old_name.py", "pkg/new_name.py"): "renamed",
        ("pkg/tail.py",): "modified",
    }
    by_path = {part.paths[-1]: part for part in parsed.files}
    assert by_path["pkg/added.py"].old is None and by_path["pkg/gone.py"].new is None
    assert "\r\n" in by_path["pkg/dos.txt"].text  # a CRLF file's lines keep their CR
    assert "\\ No newline at end of file" in by_path["pkg/tail.py"].text
    assert set(parsed.paths) == {p for part in parsed.files for p in part.paths}


def test_a_subset_of_the_files_is_their_text_after_the_preamble(real_patch: str):
    parsed = Patch.parse("Subject: fix\n\n" + real_patch)
    kept, dropped = parsed.without({"pkg/mod.py", "pkg/new_name.py"})
    assert sorted(dropped) == ["pkg/mod.py", "pkg/new_name.py", "pkg/old_name.py"]
    assert kept.text == "Subject: fix\n\n" + "".join(
        part.text for part in parsed.files if "pkg/mod.py" not in part.paths
        and "pkg/new_name.py" not in part.paths
    )  # fmt: skip
    assert parsed.keeping([]).text == ""
    assert parsed.without(set()) == (parsed, [])


def test_binary_stubs_leave_the_patch_as_read_when_there_are_none(tmp_path: Path):
    with_data = Patch.parse(git_diff(tmp_path, BEFORE, AFTER, "--binary"))
    assert drop_binary_stubs(with_data) == (with_data, [])
    stubbed = Patch.parse(git_diff(tmp_path / "2", BEFORE, AFTER))
    kept, dropped = drop_binary_stubs(stubbed)
    assert dropped == ["img/logo.png"]
    assert [part.kind for part in kept.files].count("binary") == 0


def test_phase_6_hands_on_the_model_without_the_hidden_tests(tmp_path: Path):
    text = git_diff(tmp_path, BEFORE, AFTER)
    taken = take_patch(INSTANCE, text, None, ["pkg/added.py"])
    assert isinstance(taken.patch, Patch)
    assert taken.dropped == ["pkg/added.py"]
    assert "pkg/added.py" not in taken.patch.paths
    assert taken.patch.text == "".join(
        part.text for part in Patch.parse(text).files if part.paths != ("pkg/added.py",)
    )


def test_the_steps_after_phase_6_read_the_model_without_splitting_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    text = git_diff(tmp_path, BEFORE, {**AFTER, "img/logo.png": PNG})  # no binary file
    parsed = Patch.parse(text)
    recipe = Recipe(
        repo="demo/x", version="1", python="3.11", log_format="pytest", test_cmd="pytest -rA",
        install="pip install -e .",
    )  # fmt: skip
    parse = Patch.parse

    def parse_others(cls: type[Patch], read: str, *starts: tuple[str, ...]) -> Patch:
        assert read != text, "the patch was split again"
        return parse(read, *starts)  # the gold patch, say

    monkeypatch.setattr(Patch, "parse", classmethod(parse_others))
    kept, dropped = drop_harness_files(parsed, INSTANCE, recipe)
    assert kept is parsed and dropped == []
    assert patch_path_problems(parsed) == []
    assert symlink_sections(parsed) == set()
    assert patch_paths(parsed) == sorted(parsed.paths)
    assert tamper_reasons(parsed) == []
    assert patch_lines("", parsed) == {"pkg/added.py": None}
