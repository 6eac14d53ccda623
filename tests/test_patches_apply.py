"""Patch application: the pure patch helpers, and every strategy in a real container."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from orchestrator.diffs.apply import EMPTY_PATCH, apply_patch
from orchestrator.diffs.diff import Patch, drop_binary_stubs, normalize_patch
from orchestrator.diffs.safety import dry_run_names, patch_path_problems

FIXTURES = Path(__file__).parent / "fixtures" / "patches"
NUMBERS = "".join(f"{n}\n" for n in range(1, 21))
LOGO = bytes(range(256)) * 4
BASE_FILES: dict[str, str | bytes] = {
    "pkg/numbers.txt": NUMBERS,
    "pkg/mod.py": "def f():\n    return 1\n\n\ndef g():\n    return 2\n",
    "README.md": "readme\n",
    "logo.bin": LOGO,
}
_GIT_ID = ["-c", "user.name=T", "-c", "user.email=t@example.invalid"]


def host_diff(
    tmp: Path, before: dict[str, str | bytes], after: dict[str, str | bytes], *flags: str
) -> str:
    """The ``git diff`` (staged, renames found) that turns ``before`` into ``after``."""
    repo = tmp / "diffrepo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _write_tree(repo, before)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), *_GIT_ID, "commit", "-qm", "b"], check=True)
    for path in before:
        if path not in after:
            (repo / path).unlink()
    _write_tree(repo, after)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    done = subprocess.run(
        ["git", "-C", str(repo), "diff", "--cached", "-M", *flags],
        check=True,
        capture_output=True,
    )
    return done.stdout.decode()


def _write_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


def changed(files: dict[str, str | bytes], **edits: str | bytes | None) -> dict[str, str | bytes]:
    """``files`` with edits; keys use ``__`` for ``/`` and ``_dot_`` for ``.``; None deletes."""
    out = dict(files)
    for key, value in edits.items():
        path = key.replace("__", "/").replace("_dot_", ".")
        if value is None:
            out.pop(path, None)
        else:
            out[path] = value
    return out


# --------------------------------------------------------------------------- pure helpers


def test_normalize_turns_a_crlf_converted_patch_back_into_lf(tmp_path):
    patch = host_diff(tmp_path, BASE_FILES, changed(BASE_FILES, pkg__mod_dot_py="x = 1\n"))
    assert normalize_patch(patch.replace("\n", "\r\n")) == patch


def test_normalize_keeps_cr_in_content_lines_of_a_crlf_file(tmp_path):
    before = {"win.txt": "a\r\nb\r\n"}
    patch = host_diff(tmp_path, before, {"win.txt": "a\r\nc\r\n"})
    assert "\r" in patch
    assert normalize_patch(patch) == patch


def test_normalize_adds_the_missing_final_newline(tmp_path):
    patch = host_diff(tmp_path, BASE_FILES, changed(BASE_FILES, README_dot_md="new\n"))
    assert normalize_patch(patch.rstrip("\n")) == patch


def test_split_follows_hunk_counts_and_joins_back(tmp_path):
    before = {"a.txt": "-- not a header\n++ nor this\nkeep\n", "b.txt": "one\n"}
    after = {"a.txt": "keep\n", "b.txt": "two\n", "c.txt": "new\n"}
    patch = "Subject: a commit message\n\n" + host_diff(tmp_path, before, after)
    # the removed lines read "--- not a header" / "-++ nor this" inside the hunk
    assert "\n--- not a header\n" in patch
    parsed = Patch.parse(patch)
    preamble, parts = parsed.preamble, parsed.files
    assert preamble == "Subject: a commit message\n\n"
    assert [p.paths for p in parts] == [("a.txt",), ("b.txt",), ("c.txt",)]
    assert parsed.text == patch
    assert parsed.keeping(parts[1:2]).text == preamble + parts[1].text
    assert parsed.keeping([]).text == ""


def test_split_understands_plain_unified_diffs():
    patch = (
        "--- orig/x.py\t2024-01-01\n+++ new/x.py\t2024-01-02\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n"
        "--- orig/y.py\n+++ new/y.py\n@@ -1 +1 @@\n-d\n+e\n"
    )
    parsed = Patch.parse(patch)
    preamble, parts = parsed.preamble, parsed.files
    assert preamble == ""
    assert len(parts) == 2
    assert parts[0].text.startswith("--- orig/x.py") and parts[1].text.endswith("+e\n")


def stubs(patch: str) -> tuple[str, list[str]]:
    """:func:`drop_binary_stubs` on a text: the kept text and the files dropped."""
    kept, dropped = drop_binary_stubs(Patch.parse(patch))
    return kept.text, dropped


def test_binary_changes_without_data_are_found(tmp_path):
    after = changed(BASE_FILES, logo_dot_bin=LOGO[::-1])
    with_data = host_diff(tmp_path, BASE_FILES, after, "--binary")
    assert "GIT binary patch" in with_data
    assert stubs(with_data) == (with_data, [])
    assert stubs(host_diff(tmp_path / "2", BASE_FILES, after))[1] == ["logo.bin"]
    header_only = with_data.split("GIT binary patch")[0] + "GIT binary patch\n"
    assert stubs(header_only)[1] == ["logo.bin"]


def test_binary_stubs_are_dropped_and_named():
    patch = (FIXTURES / "binary_stub_new_png.diff").read_text()
    kept, dropped = stubs(patch)
    assert dropped == ["test_plot.png"]
    assert "test_plot.png" not in kept and "+    return 20" in kept
    assert [p.paths for p in Patch.parse(kept).files] == [("pkg/mod.py",)]
    only, named = stubs(patch[patch.index("diff --git a/test_plot.png") :])
    assert (only, named) == ("", ["test_plot.png"])
    assert stubs(kept) == (kept, [])


HOOK_PATCH = (
    "diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout\n"
    "new file mode 100755\n--- /dev/null\n+++ b/.git/hooks/post-checkout\n"
    "@@ -0,0 +1,2 @@\n+#!/bin/sh\n+touch /tmp/hook-ran\n"
)
GIT_CONFIG_PATCH = (
    "--- a/.git/config\n+++ b/.git/config\n@@ -1,1 +1,2 @@\n [core]\n+\tfsmonitor = touch /tmp/x\n"
)


def _new_file(path: str, mode: str = "100644", line: str = "x") -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode {mode}\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1 @@\n+{line}\n"
    )


@pytest.mark.parametrize(
    ("patch", "problem"),
    [
        (HOOK_PATCH, ".git/hooks/post-checkout: inside .git"),
        (GIT_CONFIG_PATCH, ".git/config: inside .git"),
        (_new_file("pkg/.GIT/config"), "pkg/.GIT/config: inside .git"),
        (_new_file("git~1/config"), "git~1/config: inside .git"),
        ("--- a/../out.py\n+++ b/../out.py\n@@ -1 +1 @@\n-a\n+b\n", "../out.py: leaves"),
        ("--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", "/etc/passwd: an absolute"),
        ("*** a/.git/config\n--- b/.git/config\n***************\n*** 1 ****\n! a\n"
         "--- 1 ----\n! b\n", ".git/config: inside .git"),
        ('diff --git "a/.git/x" "b/.git/x"\nnew file mode 100644\n--- /dev/null\n+++ "b/.git/x"\n'
         "@@ -0,0 +1 @@\n+x\n", ".git/x: inside .git"),
        (_new_file("link", "120000", "/etc") + _new_file("link/passwd"),
         "link/passwd: goes through the symbolic link link the patch creates"),
    ],
    ids=["hook", "git-config", "nested-.GIT", "8.3-name", "dotdot", "absolute", "context-diff",
         "quoted", "own-symlink"],
)  # fmt: skip
def test_paths_outside_the_repository_files_are_refused(patch, problem):
    problems = patch_path_problems(patch)
    assert len(problems) == 1 and problems[0].startswith(problem), problems


def test_ordinary_paths_pass_the_path_check(tmp_path):
    patch = host_diff(tmp_path, BASE_FILES, changed(BASE_FILES, pkg__new_dot_py="x\n"))
    assert patch_path_problems(patch) == []
    # a removed line that reads like a header is hunk content, not a path
    hunk = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n--- a/.git/x\n+++ b/.git/y\n"
    assert patch_path_problems(hunk) == []
    assert patch_path_problems(_new_file("docs/.gitignore") + _new_file("a/.github/x.yml")) == []


def test_dry_run_names_are_read_from_patch_output():
    output = "checking file .git/config\nchecking file 'a b.py' (renamed from c.py)\nHunk #1\n"
    assert dry_run_names(output) == [".git/config", "a b.py", "c.py"]


# --------------------------------------------------------------------------- in a container


@pytest.fixture
def repo(make_sandbox):
    """A container with a committed git repository of BASE_FILES at /testbed."""
    sb = make_sandbox()
    for path, content in BASE_FILES.items():
        sb.write_file(f"/testbed/{path}", content)
    done = sb.exec(
        f"git init -q && git add -A && git {' '.join(_GIT_ID)} commit -qm base", workdir="/testbed"
    )
    assert done.ok, done.output
    return sb


def read(sb, path: str) -> bytes:
    return sb.read_file(f"/testbed/{path}")


def git(sb, command: str) -> str:
    result = sb.exec(f"git {' '.join(_GIT_ID)} {command}", workdir="/testbed")
    assert result.ok, result.output
    return result.stdout


def commit_edit(sb, path: str, old: str, new: str) -> None:
    """Change one line of a committed file in the container and commit it."""
    text = read(sb, path).decode().replace(old, new)
    sb.write_file(f"/testbed/{path}", text)
    git(sb, "commit -qam local")


@pytest.mark.container
def test_a_clean_patch_applies_with_git_apply(repo, tmp_path):
    patch = host_diff(tmp_path, BASE_FILES, changed(BASE_FILES, README_dot_md="changed\n"))
    outcome = apply_patch(repo, patch)
    assert (outcome.applied, outcome.strategy, outcome.error) == (True, "git apply", "")
    assert read(repo, "README.md") == b"changed\n"


@pytest.mark.container
@pytest.mark.parametrize("patch", ["", "  \n\t\n"])
def test_an_empty_patch_is_not_applied(repo, patch):
    outcome = apply_patch(repo, patch)
    assert (outcome.applied, outcome.strategy, outcome.error) == (False, None, EMPTY_PATCH)


@pytest.mark.container
def test_a_crlf_patch_applies_and_writes_lf(repo, tmp_path):
    after = changed(BASE_FILES, pkg__mod_dot_py="def f():\n    return 10\n")
    patch = host_diff(tmp_path, BASE_FILES, after).replace("\n", "\r\n")
    outcome = apply_patch(repo, patch)
    assert outcome.applied and outcome.strategy == "git apply"
    assert read(repo, "pkg/mod.py") == b"def f():\n    return 10\n"


@pytest.mark.container
def test_a_patch_without_final_newline_applies(repo, tmp_path):
    patch = host_diff(tmp_path, BASE_FILES, changed(BASE_FILES, README_dot_md="x\n"))
    outcome = apply_patch(repo, patch.rstrip("\n"))
    assert outcome.applied, outcome.error
    assert read(repo, "README.md") == b"x\n"


@pytest.mark.container
def test_create_delete_and_rename_in_one_patch(repo, tmp_path):
    mod = str(BASE_FILES["pkg/mod.py"])
    after = changed(
        BASE_FILES,
        README_dot_md=None,
        pkg__mod_dot_py=None,
        pkg__core_dot_py=mod.replace("return 2", "return 3"),
        pkg__sub__new_dot_py="NEW = True\n",
    )
    patch = host_diff(tmp_path, BASE_FILES, after)
    assert "rename from pkg/mod.py" in patch and "deleted file mode" in patch
    outcome = apply_patch(repo, patch)
    assert outcome.applied and outcome.strategy == "git apply", outcome.error
    ls = repo.exec("ls -R", workdir="/testbed").stdout
    assert "README.md" not in ls and "mod.py" not in ls
    assert read(repo, "pkg/core.py") == mod.replace("return 2", "return 3").encode()
    assert read(repo, "pkg/sub/new.py") == b"NEW = True\n"


@pytest.mark.container
def test_a_binary_patch_with_data_applies(repo, tmp_path):
    after = changed(BASE_FILES, logo_dot_bin=LOGO[::-1], new_dot_bin=b"\x00\x01\xff")
    outcome = apply_patch(repo, host_diff(tmp_path, BASE_FILES, after, "--binary"))
    assert outcome.applied, outcome.error
    assert read(repo, "logo.bin") == LOGO[::-1]
    assert read(repo, "new.bin") == b"\x00\x01\xff"


@pytest.mark.container
def test_a_binary_change_without_data_is_dropped_and_the_rest_applies(repo, tmp_path):
    after = changed(BASE_FILES, logo_dot_bin=LOGO[::-1], README_dot_md="text too\n")
    patch = host_diff(tmp_path, BASE_FILES, after)
    assert "Binary files a/logo.bin and b/logo.bin differ" in patch
    outcome = apply_patch(repo, patch)
    assert outcome.applied and outcome.strategy == "git apply", outcome.log
    assert outcome.dropped_binary_stubs == ["logo.bin"]
    assert "left out: binary file(s) changed without their content (logo.bin)" in outcome.log
    assert read(repo, "README.md") == b"text too\n"
    assert read(repo, "logo.bin") == LOGO


@pytest.mark.container
def test_an_agents_patch_with_a_new_image_stub_applies_its_text(repo):
    # the shape of a real agent's patch: a script it ran wrote test_plot.png
    patch = (FIXTURES / "binary_stub_new_png.diff").read_text()
    assert "Binary files /dev/null and b/test_plot.png differ" in patch
    outcome = apply_patch(repo, patch)
    assert outcome.applied, outcome.log
    assert outcome.dropped_binary_stubs == ["test_plot.png"]
    assert read(repo, "pkg/mod.py").endswith(b"return 20\n")
    assert "test_plot.png" not in repo.exec("ls", workdir="/testbed").stdout


@pytest.mark.container
def test_a_patch_of_only_binary_stubs_applies_nothing(repo, tmp_path):
    after = changed(BASE_FILES, logo_dot_bin=LOGO[::-1])
    outcome = apply_patch(repo, host_diff(tmp_path, BASE_FILES, after))
    assert not outcome.applied and outcome.strategy is None
    assert outcome.dropped_binary_stubs == ["logo.bin"]
    assert "only changes binary file(s) logo.bin" in outcome.error
    assert "git diff --binary" in outcome.error
    assert read(repo, "logo.bin") == LOGO


@pytest.mark.container
def test_whitespace_drift_in_context_needs_ignore_whitespace(repo, tmp_path):
    after = changed(
        BASE_FILES, pkg__mod_dot_py="def f():\n    return 1\n\n\ndef g():\n    return 5\n"
    )
    patch = host_diff(tmp_path, BASE_FILES, after)
    commit_edit(repo, "pkg/mod.py", "def g():", "def  g():")
    outcome = apply_patch(repo, patch)
    assert outcome.applied and outcome.strategy == "git apply --ignore-whitespace", outcome.log
    assert b"return 5" in read(repo, "pkg/mod.py")


@pytest.mark.container
def test_changed_context_with_known_blobs_needs_3way(repo, tmp_path):
    patch = host_diff(
        tmp_path,
        BASE_FILES,
        changed(BASE_FILES, pkg__numbers_dot_txt=NUMBERS.replace("10\n", "ten\n")),
    )
    commit_edit(repo, "pkg/numbers.txt", "13\n", "thirteen\n")
    outcome = apply_patch(repo, patch)
    assert outcome.applied and outcome.strategy == "git apply --3way", outcome.log
    text = read(repo, "pkg/numbers.txt").decode()
    assert "ten\n" in text and "thirteen\n" in text and "<<<<" not in text
    assert git(repo, "diff --cached --name-only") == ""  # the result is left unstaged
    assert git(repo, "status --porcelain") == " M pkg/numbers.txt\n"


@pytest.mark.container
def test_changed_context_without_blobs_needs_fuzz(repo, tmp_path):
    patch = host_diff(
        tmp_path,
        BASE_FILES,
        changed(BASE_FILES, pkg__numbers_dot_txt=NUMBERS.replace("10\n", "ten\n")),
    )
    plain = "\n".join(line for line in patch.split("\n") if not line.startswith("index "))
    commit_edit(repo, "pkg/numbers.txt", "13\n", "thirteen\n")
    assert not apply_patch(repo, plain, fuzz=0).applied
    assert git(repo, "status --porcelain") == ""
    outcome = apply_patch(repo, plain, fuzz=3)
    assert outcome.applied and outcome.strategy == "patch --fuzz=3", outcome.log
    assert git(repo, "status --porcelain") == " M pkg/numbers.txt\n"  # no .orig or .rej
    text = read(repo, "pkg/numbers.txt").decode()
    assert "\nten\n" in text and "\nthirteen\n" in text


@pytest.mark.container
def test_a_conflicting_patch_leaves_the_tree_as_it_was(repo, tmp_path):
    after = changed(
        BASE_FILES,
        README_dot_md="applies cleanly\n",
        pkg__numbers_dot_txt=NUMBERS.replace("10\n", "ten\n"),
    )
    patch = host_diff(tmp_path, BASE_FILES, after)
    commit_edit(repo, "pkg/numbers.txt", "10\n", "TEN\n")
    # earlier state that must survive: an uncommitted change and an untracked file
    repo.write_file("/testbed/pkg/mod.py", "dirty = True\n")
    repo.write_file("/testbed/untracked.txt", "mine\n")
    before = git(repo, "status --porcelain")
    outcome = apply_patch(repo, patch)
    assert not outcome.applied and outcome.strategy is None
    assert outcome.error.startswith("patch --fuzz=3:")
    for strategy in ("git apply", "--ignore-whitespace", "--3way", "patch -p1"):
        assert strategy in outcome.log
    assert git(repo, "status --porcelain") == before
    assert git(repo, "ls-files --unmerged") == ""
    assert read(repo, "README.md") == b"readme\n"
    assert b"<<<<" not in read(repo, "pkg/numbers.txt")
    assert read(repo, "pkg/mod.py") == b"dirty = True\n"


@pytest.mark.container
def test_an_already_applied_patch_fails_without_prompting(repo, tmp_path):
    patch = host_diff(tmp_path, BASE_FILES, changed(BASE_FILES, README_dot_md="once\n"))
    assert apply_patch(repo, patch).applied
    outcome = apply_patch(repo, patch)
    assert not outcome.applied
    assert read(repo, "README.md") == b"once\n"


@pytest.mark.container
def test_garbage_is_not_applied(repo):
    outcome = apply_patch(repo, "I fixed it, trust me.\n@@ nonsense @@\n+x\n")
    assert not outcome.applied and outcome.strategy is None
    assert outcome.error
    assert git(repo, "status --porcelain") == ""


@pytest.mark.container
@pytest.mark.parametrize("patch", [HOOK_PATCH, GIT_CONFIG_PATCH], ids=["hook", "git-config"])
def test_a_patch_into_git_is_refused_by_every_strategy(repo, patch):
    config = read(repo, ".git/config")
    outcome = apply_patch(repo, patch)
    assert (outcome.applied, outcome.refused) == (False, True)
    assert outcome.error.startswith("the patch may only change the repository's files, refused")
    assert ": inside .git" in outcome.error
    assert outcome.log == ""  # no strategy ran
    assert repo.exec(["test", "-e", "/testbed/.git/hooks/post-checkout"]).exit_code == 1
    assert read(repo, ".git/config") == config


@pytest.mark.container
def test_a_patch_through_a_symbolic_link_of_the_tree_is_refused(repo):
    done = repo.exec("ln -s /opt envlink && ln -s mod.py pkg/alias.py", workdir="/testbed")
    assert done.ok, done.output
    outcome = apply_patch(repo, _new_file("envlink/evil.pth", line="import os"))
    assert outcome.refused and "envlink/evil.pth: goes through the symbolic link envlink" in (
        outcome.error
    )
    assert repo.exec(["test", "-e", "/opt/evil.pth"]).exit_code == 1
    edit = "--- a/pkg/alias.py\n+++ b/pkg/alias.py\n@@ -1 +1 @@\n-def f():\n+def h():\n"
    outcome = apply_patch(repo, edit)
    assert outcome.refused and "pkg/alias.py: is a symbolic link" in outcome.error
    assert read(repo, "pkg/mod.py").startswith(b"def f():")


@pytest.mark.container
def test_a_patch_that_retargets_a_symbolic_link_of_its_own_is_applied(repo):
    """A listed path that is a link, changed by a section that treats it as one: the check
    prints it, it is judged allowed, and the strategies run after the backup."""
    git = "git -c user.email=t@t -c user.name=t"
    done = repo.exec(
        f"ln -s mod.py pkg/alias.py && {git} add pkg/alias.py && {git} commit -qm link "
        "&& ln -sfn other.py pkg/alias.py && git diff && git checkout -q -- pkg/alias.py",
        workdir="/testbed",
    )
    assert done.ok and "120000" in done.stdout, done.output
    outcome = apply_patch(repo, done.stdout)
    assert outcome.applied and outcome.strategy == "git apply", outcome
    assert repo.exec(["readlink", "/testbed/pkg/alias.py"]).stdout.strip() == "other.py"


@pytest.mark.container
def test_git_hooks_never_run_in_our_git_commands(repo, tmp_path):
    hook = "#!/bin/sh\ntouch /tmp/hook-ran\n"
    repo.write_file("/testbed/.git/hooks/post-checkout", hook, mode=0o755)
    repo.exec(["git", "config", "core.fsmonitor", "touch /tmp/fsmonitor-ran"], workdir="/testbed")
    patch = host_diff(tmp_path, BASE_FILES, changed(BASE_FILES, README_dot_md="changed\n"))
    assert apply_patch(repo, patch).applied
    # the control: plain git does run them
    assert repo.exec(["test", "-e", "/tmp/hook-ran"]).exit_code == 1
    assert repo.exec(["test", "-e", "/tmp/fsmonitor-ran"]).exit_code == 1
    repo.exec("git checkout -q HEAD -- README.md && git status -s", workdir="/testbed")
    assert repo.exec(["test", "-e", "/tmp/hook-ran"]).exit_code == 0


@pytest.mark.container
def test_a_one_megabyte_patch_adding_build_artefacts_applies(repo, tmp_path):
    # an agent that ran `pip install .` commits build/lib/... (868 KB in a real patch)
    big = "".join(f"LINE_{n} = {n!r}  # generated by the build\n" for n in range(24_000))
    after = changed(BASE_FILES, build__lib__pkg__mod_dot_py=big, pkg__mod_dot_py="x = 1\n")
    patch = host_diff(tmp_path, BASE_FILES, after)
    assert len(patch) > 1_000_000
    outcome = apply_patch(repo, patch)
    assert outcome.applied and outcome.strategy == "git apply", outcome.error
    assert read(repo, "build/lib/pkg/mod.py") == big.encode()
