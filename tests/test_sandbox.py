"""The sandbox on a real Docker engine: limits, timeouts, files, snapshots, bad input."""

from __future__ import annotations

import socket
import threading
import time

import docker
import pytest

from orchestrator.errors import SandboxError, UserError
from orchestrator.sandbox import Limits
from orchestrator.sandbox.docker import DockerSandbox as Sandbox
from orchestrator.sandbox.models import LABEL_INSTANCE, LABEL_RUN, LABEL_TOOL

from .conftest import TEST_RUN_ID

pytestmark = pytest.mark.container


def test_exec_returns_exit_code_and_separate_streams(make_sandbox):
    sb = make_sandbox()
    result = sb.exec("echo out; echo err >&2; exit 3")
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.timed_out


def test_labels_name_tool_run_and_instance(make_sandbox):
    sb = make_sandbox(instance_id="demo__repo-1")
    labels = sb.labels()
    assert labels[LABEL_TOOL] == "1"
    assert labels[LABEL_RUN] == TEST_RUN_ID
    assert labels[LABEL_INSTANCE] == "demo__repo-1"


def test_timeout_kills_the_process_tree_and_container_stays_usable(make_sandbox):
    sb = make_sandbox()
    result = sb.exec("sleep 1001 & sleep 1002", timeout=2)
    assert result.timed_out
    assert result.duration < 30
    assert sb.exec(["pgrep", "-f", "sleep 100[12]"]).stdout.strip() == ""
    assert sb.exec("echo alive").stdout == "alive\n"


def test_memory_limit_kills_and_reports_oom(make_sandbox):
    sb = make_sandbox(limits=Limits(memory="128m"))
    hog = "python3 -c \"b = bytearray(600 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096])\""
    result = sb.exec(hog, timeout=60)
    assert result.exit_code == 137
    assert result.oom_killed
    assert not result.timed_out
    assert sb.exec("echo alive").stdout == "alive\n"


def test_fork_loop_hits_the_process_limit(make_sandbox):
    sb = make_sandbox(limits=Limits(pids_limit=64))
    bomb = "for i in $(seq 200); do sleep 31 & done; wait"
    result = sb.exec(bomb, timeout=10)
    assert "retry: Resource temporarily unavailable" in result.stderr or "fork" in result.stderr
    sb.exec("pkill -f 'sleep 31'", timeout=10)
    assert sb.exec("echo alive", timeout=10).stdout == "alive\n"


def test_network_off_makes_pip_fail_fast_and_on_again_works(make_sandbox):
    sb = make_sandbox(network=False)
    result = sb.exec(
        "python3 -m pip download --no-deps --retries 0 --timeout 5 -d /tmp/x six", timeout=60
    )
    assert result.exit_code != 0
    assert not result.timed_out
    assert sb.exec("ip -o link 2>/dev/null | grep -v ' lo:' | wc -l || true").exit_code == 0
    routes = sb.exec("cat /proc/net/route | wc -l").stdout.strip()
    assert routes == "1"  # the header line only: no route anywhere


def test_files_round_trip_byte_for_byte(make_sandbox):
    sb = make_sandbox()
    blobs = {
        "/tmp/bin/all-bytes.bin": bytes(range(256)) * 64,
        "/tmp/latin1.txt": "caf\xe9 na\xefve\n".encode("latin-1"),
        "/tmp/empty": b"",
        "/tmp/crlf.txt": b"a\r\nb\r\n",
    }
    for path, data in blobs.items():
        sb.write_file(path, data)
    for path, data in blobs.items():
        assert sb.read_file(path) == data
    assert sb.exec(["sha256sum", "/tmp/latin1.txt"]).exit_code == 0


def test_snapshot_and_start_from_snapshot_keep_files(make_sandbox, docker_client):
    sb = make_sandbox()
    sb.write_file("/work/state.txt", "kept\n")
    sb.exec("mkdir -p /opt/x && echo built > /opt/x/marker")
    image_id = sb.snapshot("swe-green-test/snap", TEST_RUN_ID)
    assert docker_client.images.get(image_id).labels[LABEL_RUN] == TEST_RUN_ID
    clone = make_sandbox(image="swe-green-test/snap:" + TEST_RUN_ID)
    assert clone.read_file("/work/state.txt") == b"kept\n"
    assert clone.exec("cat /opt/x/marker").stdout == "built\n"


def test_large_output_is_capped_with_a_marker(make_sandbox):
    sb = make_sandbox(limits=Limits(output_limit=100_000))
    result = sb.exec("head -c 10000000 /dev/zero | tr '\\0' a", timeout=60)
    assert result.truncated
    assert len(result.stdout) < 101_000
    assert "output cut: 9900000 more bytes" in result.stdout


def test_nul_byte_in_command_is_refused(make_sandbox):
    sb = make_sandbox()
    with pytest.raises(SandboxError, match="NUL byte"):
        sb.exec(["echo", "a\x00b"])


def test_exec_on_removed_container_is_a_clear_error(make_sandbox):
    sb = make_sandbox()
    sb.remove()
    with pytest.raises(SandboxError, match="no longer exists"):
        sb.exec("true")


def test_unknown_image_is_a_user_error(docker_client):
    with pytest.raises(UserError, match="does not exist"):
        Sandbox.start(docker_client, "swe-green/no-such-image:1", run_id=TEST_RUN_ID)


class _DockerSocketProxy:
    """A TCP proxy on 127.0.0.1 to the Docker socket that can be cut, like a dying daemon."""

    def __init__(self, target: str = "/var/run/docker.sock") -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(self.target)
            self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        for conn in self.conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            except OSError:
                pass


def test_daemon_going_away_mid_exec_is_a_clear_error(make_sandbox):
    sb = make_sandbox()
    proxy = _DockerSocketProxy()
    client = docker.DockerClient(base_url=f"tcp://127.0.0.1:{proxy.port}", timeout=20)
    via_proxy = Sandbox.attach(client, sb.id)
    threading.Timer(1.0, proxy.cut).start()
    started = time.monotonic()
    with pytest.raises(SandboxError, match="daemon went away|no longer"):
        via_proxy.exec("sleep 30", timeout=60)
    assert time.monotonic() - started < 25


def test_capabilities_are_the_minimum_and_chown_and_apt_style_user_switch_work(make_sandbox):
    sb = make_sandbox()
    status = sb.exec("grep CapEff /proc/self/status").stdout.split()[1]
    # CHOWN, DAC_OVERRIDE, FOWNER, FSETID, SETGID, SETUID: bits 0 1 3 4 6 7
    assert int(status, 16) == 0xDB
    assert sb.exec("touch /tmp/f && chown nobody:nogroup /tmp/f && chmod 600 /tmp/f").ok
    who = sb.exec("setpriv --reuid nobody --regid nogroup --clear-groups id -un", timeout=10)
    assert who.stdout.strip() == "nobody"
    assert sb.exec("mknod /tmp/dev c 1 3").exit_code != 0  # MKNOD is gone
    assert sb.exec("chroot / true").exit_code != 0  # SYS_CHROOT is gone


def test_disk_budget_stops_a_runaway_writer_and_every_later_call_says_so(make_sandbox):
    from orchestrator.sandbox import DiskLimitExceeded

    budget = 200 << 20
    sb = make_sandbox(limits=Limits(disk=budget, disk_poll=0.5))
    assert sb.exec("head -c 50M /dev/zero > /tmp/fits && echo ok", timeout=30).stdout == "ok\n"
    time.sleep(1.0)
    assert not sb.disk_exceeded
    started = time.monotonic()
    with pytest.raises(DiskLimitExceeded, match="disk budget of 200 MiB"):
        sb.exec("while true; do head -c 100M /dev/zero > /tmp/x$RANDOM; done", timeout=120)
    assert time.monotonic() - started < 30
    deadline = time.monotonic() + 10
    while sb.is_running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not sb.is_running()
    assert sb.disk_watcher is not None and sb.disk_watcher.exceeded_size > budget
    with pytest.raises(DiskLimitExceeded):
        sb.exec("true")
    with pytest.raises(DiskLimitExceeded):
        sb.kill_processes()


def test_disk_budget_of_one_container_leaves_the_others_alone(make_sandbox):
    small = make_sandbox(limits=Limits(disk=100 << 20, disk_poll=0.2))
    other = make_sandbox(limits=Limits(disk=1 << 30, disk_poll=0.2))
    assert other.exec("head -c 150M /dev/zero > /tmp/x && echo ok", timeout=30).ok
    with pytest.raises(SandboxError):
        small.exec("head -c 150M /dev/zero > /tmp/x; sleep 20", timeout=30)
    assert small.disk_exceeded and not other.disk_exceeded
    assert other.exec("echo alive").stdout == "alive\n"


def test_kill_processes_stops_a_fork_bomb_and_keeps_files_and_network_off(make_sandbox):
    sb = make_sandbox(limits=Limits(pids_limit=64), network=False)
    sb.write_file("/testbed/kept.txt", "kept\n")
    bomb = "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass\n"
    sb.write_file("/tmp/bomb.py", bomb)
    sb.exec("nohup python3 /tmp/bomb.py >/dev/null 2>&1 &", timeout=10)
    time.sleep(1.5)
    assert sb.exec("echo hi", timeout=10).exit_code != 0  # no process can start
    sb.kill_processes()
    processes = sb.exec("ps -eo comm --no-headers").stdout.split()
    assert "python3" not in processes and len(processes) <= 6, processes
    assert sb.read_file("/testbed/kept.txt") == b"kept\n"
    assert sb.exec("cat /proc/net/route | wc -l").stdout.strip() == "1"


def test_a_container_that_cannot_start_is_removed_not_left_created(docker_client, base_image):
    """The engine creates the container, then fails to start it (here a device that does
    not exist; in a sweep, an engine that lost its bridge): nothing stays in state created."""
    from docker.errors import APIError

    from orchestrator.sandbox.docker.runtime import _start_or_remove

    container = docker_client.containers.create(
        base_image, ["sleep", "1"], devices=["/dev/swe-green-no-such-device:/dev/x:rwm"],
        labels={"swe-green": "1", "swe-green.run": TEST_RUN_ID, "swe-green.instance": "nostart"},
    )  # fmt: skip
    with pytest.raises(APIError):
        _start_or_remove(container)
    left = docker_client.containers.list(all=True, filters={"id": container.id})
    assert left == []


def test_a_failing_image_build_leaves_no_container(
    docker_backend, base_image, docker_client, tmp_path
):
    """A Dockerfile step that fails: its intermediate container is removed with the build, not
    left on the host (the engine keeps it unless asked; one stayed per failed build)."""
    import uuid

    marker = uuid.uuid4().hex
    (tmp_path / "Dockerfile").write_text(f"FROM {base_image}\nRUN exit 3 # {marker}\n")
    tag = f"swe-green-test-{TEST_RUN_ID}/failing:{marker[:8]}"
    with pytest.raises(SandboxError):
        list(docker_backend.images.build(tmp_path, tag, {}, {}))
    left = [
        c.name
        for c in docker_client.containers.list(all=True)
        if marker in " ".join(c.attrs["Config"].get("Cmd") or [])
    ]
    assert left == []


def test_containers_of_one_name_started_at_once_both_start(run_ctx, synthetic_instances):
    """Two containers of one role for one instance, started together (a grading's and its
    secret pair's): the engine holds a name before it shows it, so the second gets a suffix."""
    from concurrent.futures import ThreadPoolExecutor

    image = run_ctx.settings.environment.base_image()
    instance = synthetic_instances["demo__calc-1"]
    with ThreadPoolExecutor(2) as pool:
        futures = [
            pool.submit(run_ctx.start_sandbox, image, instance, "grading", network=False)
            for _ in range(2)
        ]
        boxes = [future.result() for future in futures]
    try:
        assert len({box.name for box in boxes}) == 2
        assert all("-grading" in box.name for box in boxes)
    finally:
        for box in boxes:
            box.remove()
