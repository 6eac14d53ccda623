"""Patch extraction from participant answers, patch file filtering, and the container diff."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from orchestrator.diffs.diff import GIT_STARTS, Patch
from orchestrator.patches.container_diff import ContainerDiffError, container_diff
from orchestrator.patches.extract import extract_patch

from .reference_data import SHARED_VERIFIED, VERIFIED, shared_data

# the excerpt of Verified in the fixtures, and every Verified instance where the reference
# data directory is there
DATASETS = pytest.mark.parametrize(
    "dataset",
    [
        pytest.param(VERIFIED, id="excerpt"),
        pytest.param(SHARED_VERIFIED, id="all", marks=shared_data),
    ],
)


def touched_files(patch: str) -> list[str]:
    """The repository paths a patch's sections name, in order: created and deleted files once
    (``/dev/null`` is not a path), renamed and copied files by both names."""
    seen: dict[str, None] = {}
    for section in Patch.parse(patch, GIT_STARTS).files:
        seen.update(dict.fromkeys(section.names))
    return list(seen)


def lines(*rows: str) -> str:
    return "\n".join(rows) + "\n"


FIX_A = lines(
    "diff --git a/src/pkg/core.py b/src/pkg/core.py",
    "index 3b18e51..a9c3f2d 100644",
    "--- a/src/pkg/core.py",
    "+++ b/src/pkg/core.py",
    "@@ -10,7 +10,7 @@ def parse(value):",
    "     if value is None:",
    "         return None",
    " ",
    "-    return int(value)",
    "+    return int(value, 0)",
    " ",
    " ",
    " def render(value):",
)

FIX_B = lines(
    "diff --git a/src/pkg/util.py b/src/pkg/util.py",
    "--- a/src/pkg/util.py",
    "+++ b/src/pkg/util.py",
    "@@ -1,3 +1,4 @@",
    " import os",
    "+import re",
    " ",
    " SEP = os.sep",
)


@cache
def verified(dataset: Path) -> list[dict]:
    with dataset.open() as handle:
        return [json.loads(line) for line in handle]


# ----------------------------------------------------------------------------- extract_patch
def test_fenced_diff_with_prose_around():
    answer = f"I found the bug in `parse`.\n\n```diff\n{FIX_A}```\n\nThis handles hex input."
    assert extract_patch(answer) == FIX_A


def test_several_fenced_blocks_are_concatenated_and_other_languages_ignored():
    answer = (
        "First the core:\n```diff\n" + FIX_A + "```\nA quick check:\n```python\n"
        "print(parse('0x10'))\n```\nThen the helper:\n```patch\n" + FIX_B + "```\n"
    )
    assert extract_patch(answer) == FIX_A + FIX_B


def test_identical_repeated_block_counts_once():
    answer = f"```diff\n{FIX_A}```\nFinal answer:\n```diff\n{FIX_A}```"
    assert extract_patch(answer) == FIX_A


def test_patch_tags_win_over_fences_and_may_wrap_a_fence():
    answer = (
        "Draft:\n```diff\n" + FIX_B + "```\nFinal:\n<patch>\n```diff\n" + FIX_A + "```\n</patch>"
    )
    assert extract_patch(answer) == FIX_A
    assert extract_patch(f"<patch>\n{FIX_A}</patch>") == FIX_A


def test_unclosed_patch_tag_takes_the_rest():
    assert extract_patch(f"<patch>\n{FIX_A}") == FIX_A


def test_bare_diff_in_prose_stops_where_the_diff_ends():
    answer = f"Here is the change:\n\n{FIX_A}\nThat is all; tests pass now.\n\n{FIX_B}\nDone."
    assert extract_patch(answer) == FIX_A + FIX_B


def test_plain_unified_diff_without_git_header():
    plain = "--- a/setup.py\n+++ b/setup.py\n@@ -1 +1 @@\n-version = '1.0'\n+version = '1.1'\n"
    assert extract_patch(f"Patch:\n{plain}") == plain


def test_unlabelled_fence_holding_a_diff():
    assert extract_patch(f"```\n{FIX_B}```") == FIX_B


def test_missing_trailing_newline_is_added():
    assert extract_patch(FIX_A.rstrip("\n")) == FIX_A
    assert extract_patch(f"```diff\n{FIX_A.rstrip()}\n```") == FIX_A


def test_crlf_answer_keeps_crlf():
    crlf = FIX_A.replace("\n", "\r\n")
    answer = "Fix:\r\n```diff\r\n" + crlf + "```\r\nThanks!\r\n"
    assert extract_patch(answer) == crlf
    assert extract_patch(crlf.rstrip("\r\n")) == crlf


def test_structured_field_wins_and_empty_field_falls_back_to_text():
    assert extract_patch("```diff\n" + FIX_B + "```", {"patch": FIX_A}) == FIX_A
    assert extract_patch(None, {"model_patch": FIX_A}) == FIX_A
    assert extract_patch(None, {"diff": f"```diff\n{FIX_B}```"}) == FIX_B
    assert extract_patch(f"```diff\n{FIX_B}```", {"patch": ""}) == FIX_B
    assert extract_patch(None, {"type": "final", "status": "done"}) is None


@pytest.mark.parametrize(
    "answer",
    [
        None,
        "",
        "Done. I edited the files through the tools.",
        "I could not reproduce the issue.\n\n```python\nassert parse('1') == 1\n```",
        "Run `git diff` to see my changes; --- they are in core.py +++",
        "```diff\n- old line\n+ new line\n```",
    ],
)
def test_answers_without_a_patch(answer):
    assert extract_patch(answer) is None


def test_removed_line_that_looks_like_a_header_stays_in_its_hunk():
    sql = (
        "diff --git a/schema.sql b/schema.sql\n--- a/schema.sql\n+++ b/schema.sql\n"
        "@@ -1,2 +1 @@\n--- drop this comment\n+++ keep this one\n-SELECT 1;\n"
    )
    assert extract_patch(f"Patch:\n{sql}\nThat's it.") == sql
    assert touched_files(sql) == ["schema.sql"]


def test_fence_inside_a_markdown_diff_does_not_end_the_block():
    md = (
        "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n"
        "@@ -1,3 +1,3 @@\n ```\n-pip install pkg\n+pip install 'pkg[test]'\n ```\n"
    )
    assert extract_patch(f"```diff\n{md}```") == md


def test_empty_context_line_the_hunk_needs_is_kept():
    # the model dropped the space of the last context line; the hunk still counts it
    patch = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-a = 1\n+a = 2\n\n"
    assert extract_patch(f"```diff\n{patch}```") == patch
    assert extract_patch(f"```diff\n{patch}\n\n```") == patch


@DATASETS
def test_real_gold_patches_survive_every_wrapping(dataset):
    for row in verified(dataset):
        gold = row["patch"]
        for answer, data in (
            (f"I fixed it.\n\n```diff\n{gold}```\n\nLet me know.", None),
            (f"<patch>\n{gold}</patch>", None),
            (f"The change:\n{gold}\nThe tests pass.", None),
            (None, {"patch": gold}),
        ):
            assert extract_patch(answer, data) == gold, row["instance_id"]


# ----------------------------------------------------------------------------- files
def test_touched_files_of_created_deleted_renamed_and_binary_files():
    patch = (
        "diff --git a/new.py b/new.py\nnew file mode 100644\nindex 0000000..e69de29\n"
        "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+x = 1\n"
        "diff --git a/old.py b/old.py\ndeleted file mode 100644\n"
        "--- a/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-y = 2\n"
        "diff --git a/a.txt b/b.txt\nsimilarity index 100%\nrename from a.txt\nrename to b.txt\n"
        "diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\n"
        "diff --git a/empty b/empty\nnew file mode 100644\nindex 0000000..e69de29\n"
    )
    assert touched_files(patch) == ["new.py", "old.py", "a.txt", "b.txt", "img.png", "empty"]


def test_touched_files_with_spaces_and_quoted_names():
    patch = (
        "diff --git a/docs/my file.txt b/docs/my file.txt\n--- a/docs/my file.txt\t\n"
        "+++ b/docs/my file.txt\t\n@@ -1 +1 @@\n-a\n+b\n"
        'diff --git "a/caf\\303\\251.txt" "b/caf\\303\\251.txt"\n'
        '--- "a/caf\\303\\251.txt"\n+++ "b/caf\\303\\251.txt"\n@@ -1 +1 @@\n-a\n+b\n'
        "diff --git a/with space b/with space\nold mode 100644\nnew mode 100755\n"
    )
    assert touched_files(patch) == ["docs/my file.txt", "caf\u00e9.txt", "with space"]


@DATASETS
def test_touched_files_matches_the_test_directives_of_every_verified_instance(dataset):
    for row in verified(dataset):
        expected = list(
            dict.fromkeys(re.findall(r"^diff --git a/.* b/(.*)$", row["test_patch"], re.MULTILINE))
        )
        renamed_from = re.findall(r"^rename from (.*)$", row["test_patch"], re.MULTILINE)
        assert sorted(touched_files(row["test_patch"])) == sorted(expected + renamed_from), row[
            "instance_id"
        ]


@DATASETS
def test_without_removes_the_test_patch_from_every_combined_patch(dataset):
    for row in verified(dataset):
        tests = set(touched_files(row["test_patch"]))
        kept, dropped = Patch.parse(row["patch"] + row["test_patch"]).without(tests)
        assert kept.text == row["patch"], row["instance_id"]
        assert set(dropped) == tests
        unchanged, none = Patch.parse(row["patch"]).without(tests)
        assert (unchanged.text, none) == (row["patch"], [])


def test_without_keeps_text_before_the_first_file_and_other_files():
    patch = "From: someone\nSubject: fix\n\n" + FIX_A + FIX_B
    kept, dropped = Patch.parse(patch).without({"src/pkg/core.py", "not/in/patch.py"})
    assert kept.text == "From: someone\nSubject: fix\n\n" + FIX_B
    assert dropped == ["src/pkg/core.py"]


# ----------------------------------------------------------------------------- the container
SETUP_REPO = r"""set -e
mkdir -p /testbed && cd /testbed
git init -q -b main .
git config user.email t@example.com && git config user.name t
printf 'def f():\n    return 1\n' > mod.py
printf 'keep\n' > keep.txt
printf 'remove me\n' > gone.txt
printf '*.log\nbuild/\n' > .gitignore
git add -A && git commit -q -m base
git rev-parse HEAD
"""


@pytest.mark.container
def test_container_diff_has_edits_new_and_deleted_files_and_leaves_the_index_alone(make_sandbox):
    sb = make_sandbox()
    base = sb.exec(SETUP_REPO).stdout.strip()
    sb.exec(
        "cd /testbed && printf 'def f():\\n    return 2\\n' > mod.py && rm gone.txt && "
        "mkdir -p pkg build && printf 'new\\n' > pkg/added.py && printf 'x' > debug.log && "
        "printf 'junk' > build/out.o && printf 'PNG\\0\\1\\377' > pkg/data.bin && "
        "git add mod.py"  # the participant staged something: that must stay as it is
    )
    state = "cd /testbed && git status --porcelain && git ls-files -s && git diff --cached --stat"
    before = sb.exec(state).stdout

    patch = container_diff(sb, base)

    assert sb.exec(state).stdout == before
    assert "M  mod.py" in before
    assert touched_files(patch) == ["gone.txt", "mod.py", "pkg/added.py", "pkg/data.bin"]
    assert "+    return 2\n" in patch and "GIT binary patch" in patch
    # the diff rebuilds the working tree from the base commit
    sb.exec(f"git clone -q /testbed /tmp/check && cd /tmp/check && git checkout -q {base}")
    sb.write_file("/tmp/fix.patch", patch.encode("utf-8", "surrogateescape"))
    applied = sb.exec("cd /tmp/check && git apply /tmp/fix.patch")
    assert applied.exit_code == 0, applied.output
    same = sb.exec(
        "cd /tmp/check && for f in mod.py pkg/added.py pkg/data.bin; do "
        "cmp $f /testbed/$f || exit 1; done; test ! -e gone.txt"
    )
    assert same.exit_code == 0, same.output
    assert sb.exec("ls /tmp | grep -c swe-container-diff").stdout.strip() == "0"


@pytest.mark.container
def test_container_diff_of_an_untouched_repo_is_empty_and_bad_base_is_an_error(make_sandbox):
    sb = make_sandbox()
    base = sb.exec(SETUP_REPO).stdout.strip()
    assert container_diff(sb, base) == ""
    with pytest.raises(ContainerDiffError, match="cannot diff /testbed against"):
        container_diff(sb, "0" * 40)


@pytest.mark.container
def test_container_diff_writes_no_object_and_leaves_the_pack_untouched(make_sandbox):
    # an object the pack holds, written again, "freshens" the pack (its time is set): in a
    # container that copies the whole pack into the writable layer
    sb = make_sandbox()
    base = sb.exec(SETUP_REPO).stdout.strip()
    sb.exec("cd /testbed && git repack -adq && git prune-packed")
    objects = "cd /testbed && stat -c '%n %y' .git/objects/pack/* && git count-objects"
    before = sb.exec(objects).stdout
    sb.exec("sleep 1.1 && cd /testbed && touch keep.txt mod.py && printf 'new\\n' > new.py")
    patch = container_diff(sb, base)
    assert touched_files(patch) == ["new.py"]
    assert sb.exec(objects).stdout == before
