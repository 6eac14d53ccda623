"""The sandbox tools on a real container: every tool, its state and its error paths."""

from __future__ import annotations

import json

import pytest

from orchestrator.tools.tool_protocol import ToolCall, ToolResult
from orchestrator.tools.tools_host import (
    REQUEST_DIR,
    TOOLS_PATH,
    install_tools,
    run_tool,
    server_port,
)
from sandbox_tools.tools import CLIENT

from .conftest import TEST_RUN_ID

pytestmark = pytest.mark.container


@pytest.fixture
def sb(make_sandbox):
    sandbox = make_sandbox()
    sandbox.exec(
        "mkdir -p /testbed/pkg/sub/deep /testbed/.hidden && cd /testbed && "
        "printf 'def f():\\n    return 1\\n' > pkg/mod.py && "
        "printf 'x = 1\\ny = 1\\nx = 1\\n' > pkg/dup.py && touch pkg/sub/deep/z.py"
    )
    return sandbox


def call(sandbox, name: str, **arguments) -> ToolResult:
    return run_tool(sandbox, ToolCall(id="c1", name=name, arguments=arguments), timeout=60)


def bash(sandbox, command: str, **kwargs) -> ToolResult:
    return call(sandbox, "bash", command=command, **kwargs)


# ----------------------------------------------------------------------------- bash
def test_bash_returns_combined_output_and_exit_code(sb):
    result = bash(sb, "echo out; echo err >&2; exit 3")
    assert (result.output, result.exit_code, result.error) == ("out\nerr\n", 3, False)
    assert result.id == "c1"


def test_bash_starts_in_testbed_and_keeps_cwd_and_exported_variables(sb):
    assert bash(sb, "pwd").output == "/testbed\n"
    bash(sb, "cd pkg/sub && export KEPT='a b\nc' && LOCAL=gone")
    result = bash(sb, 'pwd; printf "%s|" "$KEPT" "${LOCAL-unset}"')
    assert result.output == "/testbed/pkg/sub\na b\nc|unset|"


def test_bash_state_survives_exit_and_a_failing_command(sb):
    result = bash(sb, "cd /tmp; export STEP=1; exit 7")
    assert result.exit_code == 7
    assert bash(sb, "set -e; export STEP=2; false; echo never").exit_code == 1
    assert bash(sb, 'echo "$PWD $STEP"').output == "/tmp 2\n"


def test_bash_unset_variable_stays_unset(sb):
    bash(sb, "export GONE=1")
    bash(sb, "unset GONE")
    assert bash(sb, 'echo "${GONE-unset}"').output == "unset\n"


def test_bash_sources_activate_sh_and_state_does_not_grow(sb):
    sb.write_file("/opt/fakeenv/bin/whichenv", "#!/bin/sh\necho fake-env\n", mode=0o755)
    sb.write_file(
        "/opt/swe/activate.sh", "export SWE_MARK=on\nexport PATH=/opt/fakeenv/bin:$PATH\n"
    )
    assert bash(sb, 'whichenv; echo "$SWE_MARK"').output == "fake-env\non\n"
    paths = {bash(sb, 'echo "$PATH"').output for _ in range(3)}
    assert len(paths) == 1
    assert paths.pop().count("/opt/fakeenv/bin") == 1


def test_activate_sh_written_by_a_call_takes_effect_in_the_next(sb):
    bash(sb, "export BEFORE=1")
    bash(sb, "echo 'export VIRTUAL_ENV=/venv' > /opt/swe/activate.sh")
    assert bash(sb, 'echo "$VIRTUAL_ENV $BEFORE"').output == "/venv 1\n"
    bash(sb, "echo 'export VIRTUAL_ENV=/venv2' > /opt/swe/activate.sh; export LATER=2")
    assert bash(sb, 'echo "$VIRTUAL_ENV $LATER"').output == "/venv2 2\n"


def test_bash_falls_back_to_testbed_when_cwd_was_removed(sb):
    bash(sb, "mkdir /tmp/gone && cd /tmp/gone")
    sb.exec("rm -rf /tmp/gone")
    result = bash(sb, "pwd")
    assert result.output.endswith("/testbed\n")
    assert "/tmp/gone no longer exists" in result.output


def test_bash_command_is_not_pasted_into_a_shell_line(sb):
    tricky = "echo '$(touch /tmp/pwned)' \"$HOME\" ; echo 'it''s' `echo ok`"
    result = bash(sb, tricky)
    assert result.output == "$(touch /tmp/pwned) /root\nits ok\n"
    assert bash(sb, "test -e /tmp/pwned").exit_code == 1


def test_bash_timeout_kills_the_command_and_container_stays_usable(sb):
    result = bash(sb, "echo started; sleep 1001 & sleep 1002", timeout=2)
    assert result.timed_out and result.error
    assert "killed after 2 s" in result.output
    assert "started" in result.output
    assert sb.exec(["pgrep", "-f", "sleep 100[12]"]).stdout == ""
    assert bash(sb, "echo alive").output == "alive\n"


def test_bash_output_is_capped_keeping_start_and_end(sb):
    result = run_tool(
        sb, ToolCall(id="c", name="bash", arguments={"command": "seq 1 100000"}), output_limit=2000
    )
    assert result.truncated
    assert len(result.output) < 2300
    assert result.output.startswith("1\n2\n")
    assert result.output.endswith("99999\n100000\n")
    assert "output cut:" in result.output


def test_bash_five_megabyte_command_goes_through_a_file(sb):
    blob = "x" * 5_000_000
    result = bash(sb, f"v='{blob}'; echo ${{#v}}")
    assert (result.output, result.exit_code) == ("5000000\n", 0)
    assert sb.exec(f"ls -A {REQUEST_DIR}").stdout == ""


def test_bash_nul_byte_is_an_error_not_a_crash(sb):
    result = bash(sb, "echo a\x00b")
    assert result.error and "NUL" in result.output


def test_bash_state_is_not_inherited_by_a_container_from_a_snapshot(sb, make_sandbox):
    bash(sb, "cd /tmp && export FROM_PARENT=1")
    image = sb.snapshot("swe-green-test/tools", TEST_RUN_ID)
    child = make_sandbox(image=image)
    assert bash(child, 'pwd; echo "${FROM_PARENT-unset}"').output == "/testbed\nunset\n"


def test_tools_program_runs_bash_with_the_same_state(sb):
    install_tools(sb)
    bash(sb, "cd pkg && export VIA=host")
    request = json.dumps({"name": "bash", "arguments": {"command": 'pwd; echo "$VIA"'}})
    answer = json.loads(sb.exec(["/usr/bin/python3", TOOLS_PATH, "--request", request]).stdout)
    assert answer == {
        "output": "/testbed/pkg\nhost\n",
        "exit_code": 0,
        "error": False,
        "truncated": False,
    }


# ----------------------------------------------------------------------------- view
def test_view_file_with_line_numbers_and_range(sb):
    assert call(sb, "view", path="pkg/mod.py").output == "     1\tdef f():\n     2\t    return 1"
    result = call(sb, "view", path="/testbed/pkg/dup.py", view_range=[2, -1])
    assert result.output == "     2\ty = 1\n     3\tx = 1"
    result = call(sb, "view", path="/testbed/pkg/dup.py", view_range=[3, 10])
    assert result.output.startswith("     3\tx = 1\n[end of file")


def test_view_range_errors(sb):
    past = call(sb, "view", path="pkg/dup.py", view_range=[9, 12])
    assert past.error and "only 3 lines" in past.output
    backwards = call(sb, "view", path="pkg/dup.py", view_range=[3, 1])
    assert backwards.error and "invalid" in backwards.output
    directory = call(sb, "view", path="pkg", view_range=[1, 2])
    assert directory.error and "directory" in directory.output


def test_view_directory_lists_two_levels_without_hidden(sb):
    result = call(sb, "view", path="/testbed")
    lines = result.output.splitlines()[1:]
    assert lines == [
        "/testbed/",
        "/testbed/pkg/",
        "/testbed/pkg/dup.py",
        "/testbed/pkg/mod.py",
        "/testbed/pkg/sub/",
    ]


def test_view_refuses_binary_and_replaces_bad_utf8(sb):
    sb.write_file("/testbed/blob.bin", bytes(range(256)))
    binary = call(sb, "view", path="blob.bin")
    assert binary.error and "binary file (256 bytes)" in binary.output
    sb.write_file("/testbed/latin.txt", "caf\xe9\n".encode("latin-1"))
    assert call(sb, "view", path="latin.txt").output == "     1\tcaf\ufffd"


def test_view_missing_file_and_output_cap(sb):
    missing = call(sb, "view", path="/testbed/nope.py")
    assert missing.error and "does not exist" in missing.output
    sb.exec("seq 1 5000 > /testbed/long.txt")
    result = run_tool(
        sb, ToolCall(id="c", name="view", arguments={"path": "long.txt"}), output_limit=1500
    )
    assert result.truncated and not result.error
    assert "pass view_range" in result.output and "the file has 5000 lines" in result.output
    assert len(result.output) < 1700


def test_view_cuts_a_huge_single_line(sb):
    sb.write_file("/testbed/min.js", "var a=1;" * 100_000)
    result = run_tool(
        sb, ToolCall(id="c", name="view", arguments={"path": "min.js"}), output_limit=4000
    )
    assert not result.error
    assert "[... line cut: 800000 characters in all]" in result.output
    assert len(result.output) < 4100


# ----------------------------------------------------------------------------- edit
def read(sandbox, path: str) -> bytes:
    return sandbox.read_file(path)


def test_edit_create_replace_insert_and_undo_in_order(sb):
    created = call(sb, "edit", command="create", path="new/a.py", file_text="a = 1\nb = 2\n")
    assert not created.error and "Created /testbed/new/a.py" in created.output
    replaced = call(
        sb, "edit", command="str_replace", path="new/a.py", old_str="b = 2", new_str="b = 3"
    )
    assert "line 2" in replaced.output and "b = 3" in replaced.output
    inserted = call(
        sb, "edit", command="insert", path="new/a.py", insert_line=0, insert_text="import os"
    )
    assert not inserted.error
    assert read(sb, "/testbed/new/a.py") == b"import os\na = 1\nb = 3\n"
    call(sb, "edit", command="insert", path="new/a.py", insert_line=3, insert_text="c = 4\n")
    assert read(sb, "/testbed/new/a.py") == b"import os\na = 1\nb = 3\nc = 4\n"
    for expected in (b"import os\na = 1\nb = 3\n", b"a = 1\nb = 3\n", b"a = 1\nb = 2\n"):
        assert not call(sb, "edit", command="undo", path="new/a.py").error
        assert read(sb, "/testbed/new/a.py") == expected
    undone = call(sb, "edit", command="undo", path="/testbed/new/a.py")
    assert "removed" in undone.output
    assert sb.exec("test -e /testbed/new/a.py").exit_code == 1
    nothing = call(sb, "edit", command="undo", path="new/a.py")
    assert nothing.error and "no edit" in nothing.output


def test_str_replace_with_no_match_changes_nothing(sb):
    result = call(
        sb, "edit", command="str_replace", path="pkg/mod.py", old_str="return 2", new_str="return 3"
    )
    assert result.error and "0 matches" in result.output
    assert read(sb, "/testbed/pkg/mod.py") == b"def f():\n    return 1\n"
    near = call(
        sb, "edit", command="str_replace", path="pkg/mod.py", old_str="return 1\n\n", new_str=""
    )
    assert near.error and "whitespace" in near.output


def test_str_replace_with_several_matches_says_how_many_and_where(sb):
    result = call(
        sb, "edit", command="str_replace", path="pkg/dup.py", old_str="x = 1", new_str="x = 2"
    )
    assert result.error
    assert "occurs 2 times" in result.output and "lines 1, 3" in result.output
    assert read(sb, "/testbed/pkg/dup.py") == b"x = 1\ny = 1\nx = 1\n"


def test_str_replace_keeps_crlf_and_bytes_that_are_not_utf8(sb):
    sb.write_file("/testbed/win.txt", b"one\r\ntwo\r\ncaf\xe9\r\n")
    result = call(
        sb, "edit", command="str_replace", path="win.txt", old_str="one\ntwo", new_str="1\n2"
    )
    assert not result.error, result.output
    assert read(sb, "/testbed/win.txt") == b"1\r\n2\r\ncaf\xe9\r\n"


def test_insert_out_of_range_and_binary_files_are_refused(sb):
    result = call(sb, "edit", command="insert", path="pkg/mod.py", insert_line=9, insert_text="x")
    assert result.error and "out of range" in result.output and "0 to 2" in result.output
    sb.write_file("/testbed/blob.bin", b"\x00\x01")
    binary = call(sb, "edit", command="str_replace", path="blob.bin", old_str="a", new_str="b")
    assert binary.error and "binary" in binary.output


def test_edit_create_with_a_five_megabyte_argument(sb):
    text = "line\n" * 1_000_000
    result = call(sb, "edit", command="create", path="big.txt", file_text=text)
    assert not result.error, result.output
    assert sb.exec("wc -c < /testbed/big.txt").stdout.strip() == "5000000"
    assert sb.exec(f"ls -A {REQUEST_DIR}").stdout == ""


# ----------------------------------------------------------------------------- search
def test_search_finds_lines_with_glob_and_skips_hidden_and_binary(sb):
    sb.write_file("/testbed/.hidden/secret.py", "needle = 1\n")
    sb.write_file("/testbed/pkg/blob.bin", b"\x00needle")
    sb.write_file("/testbed/notes.txt", "needle in text\n")
    result = call(sb, "search", pattern=r"need\w+ =")
    assert result.output.splitlines() == ["No matches for /need\\w+ =/ under /testbed"]
    assert result.exit_code == 1 and not result.error
    sb.write_file("/testbed/pkg/sub/deep/z.py", "NEEDLE = 2\n")
    result = call(sb, "search", pattern="needle", case_insensitive=True)
    assert result.output.splitlines() == [
        "/testbed/notes.txt:1: needle in text",
        "/testbed/pkg/sub/deep/z.py:1: NEEDLE = 2",
        "2 matches in 2 files",
    ]
    only_py = call(sb, "search", pattern="needle", case_insensitive=True, glob="*.py")
    assert only_py.output.splitlines()[0] == "/testbed/pkg/sub/deep/z.py:1: NEEDLE = 2"


def test_search_caps_results_and_says_how_many_more(sb):
    sb.exec("seq 1 500 | sed 's/^/hit /' > /testbed/many.txt")
    result = call(sb, "search", pattern="^hit", path="many.txt", max_results=10)
    lines = result.output.splitlines()
    assert lines[0] == "/testbed/many.txt:1: hit 1"
    assert len([line for line in lines if ": hit " in line]) == 10
    assert "490 more matches not shown (500 in total in 1 file)" in result.output
    assert result.truncated


def test_search_invalid_regex_is_an_error(sb):
    result = call(sb, "search", pattern="def (")
    assert result.error and "invalid regular expression" in result.output


# ----------------------------------------------------------------------------- bad calls
def test_unknown_tool_lists_the_tools(sb):
    result = call(sb, "rm_rf")
    assert result.error and "unknown tool 'rm_rf'" in result.output
    assert "bash, view, edit, search" in result.output


def test_missing_and_invalid_arguments_say_what_is_wrong(sb):
    missing = call(sb, "view")
    assert missing.error and "missing required argument 'path'" in missing.output
    wrong_type = call(sb, "view", path="pkg/mod.py", view_range="1:10")
    assert wrong_type.error and "'view_range': Input should be a valid list" in wrong_type.output
    unknown = call(sb, "bash", command="ls", cwd="/tmp")
    assert unknown.error and "unknown argument 'cwd'" in unknown.output
    needs = call(sb, "edit", command="create", path="x.py")
    assert needs.error and "create needs 'file_text'" in needs.output
    bad_enum = call(sb, "edit", command="delete", path="x.py")
    assert bad_enum.error and "'command': Input should be 'create'" in bad_enum.output
    assert sb.exec("test -e /testbed/x.py").exit_code == 1


def test_integer_given_as_text_is_accepted(sb):
    result = call(sb, "view", path="pkg/dup.py", view_range=["2", 2.0])
    assert result.output == "     2\ty = 1"


def test_tools_program_is_reinstalled_when_it_disappears(sb):
    assert not call(sb, "view", path="pkg/mod.py").error
    sb.exec(["rm", TOOLS_PATH])
    result = call(sb, "view", path="pkg/mod.py")  # the running server still answers
    assert not result.error and "return 1" in result.output
    sb.exec(["rm", TOOLS_PATH])
    sb.exec(["pkill", "-9", "-f", "[t]ools.py --serve"])
    result = call(sb, "view", path="pkg/mod.py")  # no server and no program: installed again
    assert not result.error and "return 1" in result.output
    assert sb.exec(["test", "-f", TOOLS_PATH]).exit_code == 0


# ----------------------------------------------------------------------------- tool server
SERVER = "[t]ools.py --serve"  # the brackets: pgrep must not find its own `timeout`


def server_pids(sandbox) -> list[str]:
    return sandbox.exec(["pgrep", "-f", SERVER]).stdout.split()


def test_calls_share_one_server_started_by_the_first(sb):
    assert server_pids(sb) == []
    assert not call(sb, "view", path="pkg/mod.py").error
    server = sb.exec(["pgrep", "-o", "-f", SERVER]).stdout.strip()
    for _ in range(4):
        assert not call(sb, "view", path="pkg/mod.py").error
        assert not call(sb, "search", pattern="return").error
        assert not call(sb, "edit", command="create", path="n.txt", file_text="n\n").error
    assert sb.exec(["pgrep", "-o", "-f", SERVER]).stdout.strip() == server
    # the server and its one idle worker, as the container's user; no call's worker is left
    pids = server_pids(sb)
    assert server in pids and len(pids) <= 2
    users = sb.exec(["ps", "-o", "user=", "-p", ",".join(pids)]).stdout.split()
    assert set(users) == {sb.exec("id -un").stdout.strip()}


def test_server_is_started_again_when_killed_or_the_processes_stopped(sb):
    assert not call(sb, "view", path="pkg/mod.py").error
    sb.exec(["pkill", "-9", "-f", SERVER])
    assert server_pids(sb) == []
    assert "return 1" in call(sb, "view", path="pkg/mod.py").output
    sb.kill_processes()
    assert "return 1" in call(sb, "view", path="pkg/mod.py").output
    assert server_pids(sb)


def test_server_child_ends_at_its_kill_after(sb):
    install_tools(sb)
    request = {"name": "bash", "arguments": {"command": "exec sleep 30"}, "kill_after": 1}
    argv = ["bash", "-c", CLIENT, "swe-tool", str(server_port()), json.dumps(request)]
    result = sb.exec(argv, timeout=20)
    assert result.stdout == "" and result.duration < 10
    assert not call(sb, "view", path="pkg/mod.py").error


def test_server_sends_the_answer_on_the_socket_when_it_cannot_write_to_the_client(sb):
    assert not call(sb, "view", path="pkg/mod.py").error  # the server runs
    request = json.dumps({"name": "view", "arguments": {"path": "/testbed/pkg/mod.py"}})
    talk = f'exec 3<>/dev/tcp/127.0.0.1/{server_port()}; printf "0 %s\\n" "$1" >&3; cat <&3'
    out = sb.exec(["bash", "-c", talk, "talk", request]).stdout
    assert out.startswith("S{") and json.loads(out[1:])["output"].endswith("return 1")


def test_a_container_from_a_snapshot_starts_its_own_server(sb, make_sandbox):
    assert not call(sb, "view", path="pkg/mod.py").error
    image = sb.snapshot("swe-green-test/tools", TEST_RUN_ID)
    child = make_sandbox(image=image)
    assert server_pids(child) == []
    assert "return 1" in call(child, "view", path="pkg/mod.py").output
    assert server_pids(child)


def test_the_programs_install_mark_goes_with_its_container(docker_client, base_image):
    """``serve`` runs instance after instance in one process: the mark that a container holds
    the program leaves with the container's handle, so the marks do not grow per instance."""
    import gc

    from orchestrator.sandbox.docker import DockerSandbox
    from orchestrator.tools.tools_host import installed_sandboxes

    before = installed_sandboxes()
    for n in range(3):
        sandbox = DockerSandbox.start(
            docker_client, base_image, run_id=TEST_RUN_ID, instance_id=f"install-mark-{n}"
        )
        try:
            sandbox.exec("mkdir -p /testbed && echo x > /testbed/a.txt")
            assert call(sandbox, "view", path="/testbed/a.txt").output.endswith("1\tx")
            assert installed_sandboxes() == before + 1
            install_tools(sandbox)  # once per container: the mark holds
            assert installed_sandboxes() == before + 1
        finally:
            sandbox.remove()
        del sandbox
        gc.collect()
        assert installed_sandboxes() == before
