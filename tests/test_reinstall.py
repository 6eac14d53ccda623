"""A patch that adds a dependency is installed again before the tests (pylint-dev__pylint-4661
adds appdirs in setup.cfg); the network is on for that install only."""

from __future__ import annotations

import base64
import hashlib
import json
import time

import pytest

from orchestrator.context.successor import successor
from orchestrator.environments.build import prepare_instance
from orchestrator.environments.prepared import recipe_of
from orchestrator.grading.reinstall.contained import (
    changes_build_inputs,
    contained_reinstall,
    needs_reinstall,
    reinstall_after_patch,
)
from orchestrator.grading.reinstall.guard import (
    RepoChanges,
    Written,
    pth_problem,
    record_problems,
    recorded_hashes,
    reinstall_problems,
    repo_file_problem,
)
from orchestrator.recipes.recipe import load_recipes
from orchestrator.sandbox import FileMissing

from .reference_data import verified_row

# succeeds only with the network on (the package index is the one host containers reach)
PYPI_PROBE = "python3 -m pip download -q --no-deps --timeout 5 --retries 0 six==1.16.0 -d /tmp/p"
ADD_DEPENDENCY = """\
diff --git a/pyproject.toml b/pyproject.toml
--- a/pyproject.toml
+++ b/pyproject.toml
@@ -4,3 +4,4 @@ build-backend = "setuptools.build_meta"
 [project]
 name = "calc"
 version = "0.1"
+dependencies = ["six==1.16.0"]
"""
SOURCE_ONLY = """\
diff --git a/calc/__init__.py b/calc/__init__.py
--- a/calc/__init__.py
+++ b/calc/__init__.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a + b
+    return b + a
"""


def test_only_patches_to_build_inputs_need_a_reinstall():
    assert changes_build_inputs(ADD_DEPENDENCY)
    assert not changes_build_inputs(SOURCE_ONLY)


def test_a_source_patch_is_installed_again_when_the_install_copied_the_sources():
    # django 2.2 installs with ``python setup.py install`` (an egg in site-packages, where
    # runtests.py imports django from): django__django-10097's gold patch changes only
    # django/core/validators.py, and without a reinstall its gold run printed the base
    # run's output, the URL validator's subtests failing as before (proxy sweep)
    gold = verified_row("django__django-10097")["patch"]
    assert not changes_build_inputs(gold)
    django_22 = load_recipes()[("django/django", "2.2")]
    assert django_22.install == "python setup.py install"
    assert needs_reinstall(django_22, gold)
    assert not needs_reinstall(load_recipes()[("django/django", "3.0")], gold)  # editable
    assert needs_reinstall(load_recipes()[("django/django", "3.0")], ADD_DEPENDENCY)


@pytest.mark.container
def test_a_patch_that_adds_a_dependency_gets_it_installed(
    run_ctx, synthetic_instances, make_sandbox
):
    instance = synthetic_instances["demo__calc-1"]
    prepared = prepare_instance(run_ctx, instance)
    recipe = recipe_of(prepared).model_copy(
        update={"install": "python -m pip install -e ."}  # resolves dependencies
    )
    sandbox = make_sandbox(prepared.instance_image, network=False)
    sandbox.write_file("/tmp/dep.patch", ADD_DEPENDENCY)
    assert sandbox.exec("cd /testbed && git apply /tmp/dep.patch").exit_code == 0
    has_six = "source /opt/swe/activate.sh && python -c 'import six'"
    assert sandbox.exec(has_six).exit_code != 0
    assert reinstall_after_patch(sandbox, recipe, SOURCE_ONLY, timeout=300) is None
    fresh_from = successor(run_ctx, instance, "grading")
    with contained_reinstall(sandbox, recipe, ADD_DEPENDENCY, 300, fresh_from) as (fresh, done):
        assert done is not None and done.ok, done
        assert done.refused == []  # a dependency from the index and the package's own metadata
        assert fresh.name != sandbox.name and not sandbox.is_running()  # the build's: stopped
        assert fresh.exec(has_six).exit_code == 0
        # the network is off, and the fresh container runs
        assert fresh.exec(PYPI_PROBE, timeout=60).exit_code != 0
        assert fresh.is_running()
    assert not fresh.exists()  # removed with the context, and the image it came from
    assert not run_ctx.backend.images.exists(fresh.image)


@pytest.mark.container
def test_a_source_patch_reaches_a_copied_install(run_ctx, synthetic_instances, make_sandbox):
    instance = synthetic_instances["demo__calc-1"]
    prepared = prepare_instance(run_ctx, instance)
    install = "python -m pip install --no-build-isolation --no-deps ."  # copies the sources
    recipe = recipe_of(prepared).model_copy(update={"install": install})
    sandbox = make_sandbox(prepared.instance_image, network=False)
    copied = sandbox.exec(f"source /opt/swe/activate.sh && cd /testbed && {install}")
    assert copied.exit_code == 0, copied.output
    # from /tmp, calc is the copy in site-packages, not /testbed's sources
    source = "source /opt/swe/activate.sh && cd /tmp && python -c " \
        "'import calc, inspect; print(calc.__file__, inspect.getsource(calc.add))'"  # fmt: skip
    before = sandbox.exec(source)
    assert "site-packages" in before.stdout and "a + b" in before.stdout, before.output
    edit = "cd /testbed && sed -i 's/return a + b/return b + a/' calc/__init__.py && git diff"
    patch = sandbox.exec(edit).stdout
    assert "+    return b + a" in patch, patch
    assert "a + b" in sandbox.exec(source).stdout  # the patch alone does not reach the tests
    fresh_from = successor(run_ctx, instance, "grading")
    with contained_reinstall(sandbox, recipe, patch, 300, fresh_from) as (fresh, done):
        assert done is not None and done.ok, done
        assert done.refused == [], done.refused
        assert "b + a" in fresh.exec(source).stdout


# ------------------------------------------------------------- what a reinstall may write
SITE = "/opt/swe/venv/lib/python3.11/site-packages"


def _problems(changed, texts=None, existed=(), repo_modules=("calc",)):
    written = Written(changed, texts or {}, existed, repo_modules)
    return reinstall_problems(written, "/testbed", ["runtests.py"])


def test_the_package_s_own_build_output_and_metadata_are_allowed():
    changed = [
        "/testbed/calc.egg-info/PKG-INFO",
        "/testbed/build/lib/calc/__init__.py",
        "/testbed/calc/_ext.cpython-311-x86_64-linux-gnu.so",
        "/testbed/calc/version.py",
        "/testbed/.git/index",
        f"{SITE}/calc-0.1.dist-info/RECORD",
        f"{SITE}/__editable__.calc-0.1.pth",
        f"{SITE}/__editable___calc_0_1_finder.py",
        f"{SITE}/calc.egg-link",
        f"{SITE}/easy-install.pth",
        f"{SITE}/six.py",  # a new dependency, listed in its RECORD
        f"{SITE}/six-1.16.0.dist-info/RECORD",
        "/opt/swe/venv/bin/calc-cli",
        "/tmp/pip-build/x",
        "/root/.cache/pip/http/y",
    ]
    texts = {
        f"{SITE}/__editable__.calc-0.1.pth": "import __editable___calc_0_1_finder; "
        "__editable___calc_0_1_finder.install()\n",
        f"{SITE}/easy-install.pth": "/testbed\n",
        f"{SITE}/six-1.16.0.dist-info/RECORD": "six.py,sha256=x,1\nsix-1.16.0.dist-info/RECORD,,\n",
        f"{SITE}/calc-0.1.dist-info/RECORD": "__editable__.calc-0.1.pth,sha256=x,1\n"
        "__editable___calc_0_1_finder.py,sha256=y,2\n",
    }
    assert _problems(changed, texts) == []


def test_under_setuptools_editable_names_only_its_recorded_imported_finder_is_allowed():
    pth = f"{SITE}/__editable__.calc-0.1.pth"
    finder = f"{SITE}/__editable___calc_0_1_finder.py"
    record = f"{SITE}/calc-0.1.dist-info/RECORD"
    texts = {
        pth: "import __editable___calc_0_1_finder; __editable___calc_0_1_finder.install()\n",
        record: "__editable___calc_0_1_finder.py,sha256=y,2\n",
    }
    helper = f"{SITE}/__editable___calc_helper.py"  # planted by setup.py, imported by the package
    lone = f"{SITE}/__editable___other_finder.py"  # a finder's name, which no .pth imports
    unlisted = f"{SITE}/__editable___calc_0_2_finder.py"
    texts_pth2 = texts | {
        f"{SITE}/__editable__.x.pth": "import __editable___calc_0_2_finder; "
        "__editable___calc_0_2_finder.install()\n",
        record: texts[record] + "__editable___other_finder.py,sha256=z,3\n",
    }
    changed = [pth, finder, record, helper, lone, unlisted, f"{SITE}/__editable__.x.pth"]
    assert _problems(changed, texts_pth2) == [
        f"{unlisted} (no installed package's RECORD lists it)",
        f"{helper} (not a file setuptools' editable install writes)",
        f"{lone} (an editable finder no .pth of the install imports)",
    ]


def test_a_file_whose_content_is_not_what_its_record_lists_is_refused():
    digest = hashlib.sha256(b"print(1)\n").digest()
    encoded = base64.urlsafe_b64encode(digest).decode().rstrip("=")
    record = f"{SITE}/six-1.16.0.dist-info/RECORD"
    texts = {record: f"six.py,sha256={encoded},9\n../../../bin/six-cli,sha256={encoded},9\n"}
    hashes = recorded_hashes(texts)
    assert hashes == {
        f"{SITE}/six.py": digest.hex(),
        "/opt/swe/venv/bin/six-cli": digest.hex(),
    }
    good = {f"{SITE}/six.py": digest.hex(), "/opt/swe/venv/bin/six-cli": digest.hex()}
    assert record_problems(good, hashes, good) == []
    bad = good | {f"{SITE}/six.py": hashlib.sha256(b"print(2)\n").hexdigest()}
    assert record_problems(bad, hashes, bad) == [
        f"{SITE}/six.py (its content is not what its RECORD lists)"
    ]
    # a listed file that cannot be hashed (gone, unreadable) is not as listed either
    assert record_problems([f"{SITE}/six.py"], hashes, {}) != []


def test_a_copying_install_may_write_the_package_itself_as_its_record_lists_it():
    # psf/requests installs with ``pip install .``: its reinstall rewrites
    # site-packages/requests/*, which an editable install never writes
    changed = [f"{SITE}/calc/__init__.py", f"{SITE}/calc-0.1.dist-info/RECORD"]
    texts = {f"{SITE}/calc-0.1.dist-info/RECORD": "calc/__init__.py,sha256=x,1\n"}
    existed = [f"{SITE}/calc/__init__.py"]
    copying = Written(changed, texts, existed, ["calc"], copies_sources=True)
    assert reinstall_problems(copying, "/testbed") == []
    # the uninstall and the install re-create the package's directories (requests-1921:
    # site-packages/requests/packages/urllib3/util): a directory the RECORD's files are in
    texts_sub = {f"{SITE}/calc-0.1.dist-info/RECORD": "calc/util/__init__.py,sha256=x,1\n"}
    sub = [f"{SITE}/calc/util", f"{SITE}/calc/util/__init__.py"]
    assert reinstall_problems(Written(sub, texts_sub, (), ["calc"], True), "/testbed") == []
    assert reinstall_problems(Written([f"{SITE}/calc/other"], texts_sub, (), ["calc"], True)) == [
        f"{SITE}/calc/other (shadows the repository's own package)"
    ]
    # a directory of the package the new release no longer has, emptied by the uninstall
    # (requests' urllib3/util/ where the base has urllib3/util.py): no module, not refused
    gone = Written([f"{SITE}/calc/old"], texts, [f"{SITE}/calc/old/__init__.py"], ["calc"], True)
    assert reinstall_problems(gone, "/testbed") == []
    unlisted = Written([*changed, f"{SITE}/calc/extra.py"], texts, existed, ["calc"], True)
    assert reinstall_problems(unlisted, "/testbed") == [
        f"{SITE}/calc/extra.py (shadows the repository's own package)"
    ]
    editable = Written(changed, texts, existed, ["calc"])
    assert reinstall_problems(editable, "/testbed") == [
        f"{SITE}/calc/__init__.py (shadows the repository's own package)"
    ]


def test_plants_beyond_the_package_s_own_files_are_refused():
    changed = [
        f"{SITE}/zz_hostile.pth",
        f"{SITE}/hostile_plugin.py",
        f"{SITE}/__editable__.calc-0.1.pth",
        f"{SITE}/calc/__init__.py",  # would shadow the repository's package
        f"{SITE}/_pytest/runner.py",
        f"{SITE}/numpy/core/x.py",  # an installed package's file
        f"{SITE}/evil-1.0.dist-info/entry_points.txt",
        "/opt/swe/venv/bin/pytest",
        "/opt/swe/activate.sh",
        "/usr/lib/python3.11/sitecustomize.py",
        "/root/.bashrc",
        "/testbed/conftest.py",
        "/testbed/tests/conftest.py",
        "/testbed/.git/hooks/pre-commit",
    ]
    texts = {
        f"{SITE}/__editable__.calc-0.1.pth": "import os; os.system('x')\n",
        f"{SITE}/evil-1.0.dist-info/entry_points.txt": "[pytest11]\nevil = evil\n",
    }
    problems = _problems(changed, texts, existed=[f"{SITE}/numpy/core/x.py"])
    assert [p.split(" (", 1)[0] for p in problems] == sorted(changed)
    assert f"{SITE}/zz_hostile.pth (a .pth file of no package's own metadata)" in problems
    assert f"{SITE}/hostile_plugin.py (no installed package's RECORD lists it)" in problems


def test_pth_lines_that_run_code_are_refused_unless_setuptools_wrote_them():
    assert pth_problem("/testbed\n# comment\n") is None
    assert pth_problem("import sys; sys.__plen = len(sys.path)\n") is None
    assert pth_problem("import os; os.environ['PYTEST_ADDOPTS'] = '-p x'\n") is not None


# ------------------------------------------------------- the reinstall's network: the index
# what a build step tries during the reinstall: a host of the test's own (a container on the
# default bridge) directly and through the proxy, and the index through the proxy
EGRESS_PROBE = r"""
import json, os, socket, sys, urllib.request
target = sys.argv[1]
out = {}
def attempt(name, action):
    try:
        out[name] = str(action())
    except Exception as exc:
        out[name] = 'failed: ' + type(exc).__name__
def direct():
    with socket.create_connection((target, 8080), timeout=5) as s:
        s.sendall(b'GET / HTTP/1.0\r\n\r\n')
        return s.recv(100)[:12]
def connect(host, port):
    proxy = os.environ.get('HTTPS_PROXY', '')
    address = proxy.rsplit('/', 1)[-1].rsplit(':', 1)
    with socket.create_connection((address[0], int(address[1])), timeout=5) as s:
        s.sendall(f'CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}\r\n\r\n'.encode())
        return s.recv(100).split(b'\r\n')[0]
attempt('direct', direct)
attempt('proxy_target', lambda: connect(target, 8080))
attempt('proxy_target_443', lambda: connect(target, 443))
attempt('proxy_github', lambda: connect('github.com', 443))
attempt('proxy_index', lambda: connect('pypi.org', 443))
attempt('dns', lambda: socket.getaddrinfo('pypi.org', 443)[0][4][0])
attempt('http_get', lambda: urllib.request.urlopen(f'http://{target}:8080/', timeout=5).status)
open('/tmp/egress.json', 'w').write(json.dumps(out))
"""


def test_the_proxy_lets_through_only_connect_to_the_index_hosts_on_443():
    from orchestrator.grading.reinstall.egress import index_hosts
    from orchestrator.grading.reinstall.proxy import allowed_target

    hosts = frozenset({"pypi.org", "files.pythonhosted.org"})
    assert allowed_target("CONNECT pypi.org:443 HTTP/1.1", hosts) == ("pypi.org", 443)
    assert allowed_target("CONNECT PyPI.org.:443 HTTP/1.1", hosts) == ("pypi.org", 443)
    for line in (
        "CONNECT pypi.org:80 HTTP/1.1",
        "CONNECT github.com:443 HTTP/1.1",
        "CONNECT 172.17.0.5:443 HTTP/1.1",
        "GET http://pypi.org/simple/ HTTP/1.1",
        "CONNECT pypi.org.evil.com:443 HTTP/1.1",
        "",
    ):
        assert allowed_target(line, hosts) is None, line
    config = (
        "global.index-url='https://mirror.example.org/simple'\n"
        "global.extra-index-url='http://plain.example.org/simple https://extra.example.org/s'\n"
        "global.cert='/etc/ssl/certs/ca.crt'\nPIP_INDEX_URL=https://env.example.org/simple\n"
    )
    assert index_hosts(config) == [
        "pypi.org", "files.pythonhosted.org", "mirror.example.org", "extra.example.org",
        "env.example.org",
    ]  # fmt: skip


@pytest.mark.container
def test_a_reinstall_reaches_the_index_and_no_other_host(
    run_ctx, synthetic_instances, make_sandbox, docker_client, base_image
):
    from orchestrator.sandbox.models import LABEL_RUN, LABEL_TOOL

    from .conftest import TEST_RUN_ID

    target = docker_client.containers.run(
        base_image, ["python3", "-m", "http.server", "8080"], detach=True,
        labels={LABEL_TOOL: "1", LABEL_RUN: TEST_RUN_ID}, network="bridge",
    )  # fmt: skip
    try:
        target.reload()
        address = target.attrs["NetworkSettings"]["Networks"]["bridge"]["IPAddress"]
        instance = synthetic_instances["demo__calc-1"]
        prepared = prepare_instance(run_ctx, instance)
        sandbox = make_sandbox(prepared.instance_image, network=False)
        sandbox.write_file("/tmp/probe.py", EGRESS_PROBE)
        # the probe can fail: with the bridge network (the old reinstall) it reaches the host
        sandbox.set_network(True)
        wait = "for i in $(seq 50); do python3 /tmp/probe.py {a} && grep -q HTTP/1.0 " \
            "/tmp/egress.json && break; sleep 0.2; done; cat /tmp/egress.json"  # fmt: skip
        opened = sandbox.exec(wait.format(a=address), timeout=120)
        assert '"direct": "b\'HTTP/1.0 200' in opened.stdout, opened.output
        sandbox.set_network(False)
        sandbox.write_file("/tmp/dep.patch", ADD_DEPENDENCY)
        assert sandbox.exec("cd /testbed && git apply /tmp/dep.patch").exit_code == 0
        recipe = recipe_of(prepared).model_copy(
            update={"install": f"python -m pip install -e . && python3 /tmp/probe.py {address}"}
        )
        done = reinstall_after_patch(sandbox, recipe, ADD_DEPENDENCY, 300)
        assert done is not None and done[0], done
        assert "(network: the package index only)" in done[1]
        seen = json.loads(sandbox.read_file("/tmp/egress.json"))
        assert seen["direct"].startswith("failed"), seen  # no route
        assert seen["http_get"].startswith("failed"), seen  # through the proxy: 403
        for name in ("proxy_target", "proxy_target_443", "proxy_github"):
            assert seen[name] == "b'HTTP/1.1 403 Forbidden'", seen
        assert seen["proxy_index"] == "b'HTTP/1.1 200 Connection established'", seen
        assert seen["dns"].startswith("failed"), seen  # no outside names either
        has_six = "source /opt/swe/activate.sh && python -c 'import six'"
        assert sandbox.exec(has_six).exit_code == 0  # pip installed it through the proxy
        # nothing of the proxy is left: no container, no network
        egress = {"label": f"{LABEL_RUN}={TEST_RUN_ID}", "name": "-egress-"}
        assert docker_client.containers.list(all=True, filters=egress) == []
        assert docker_client.networks.list(filters=egress) == []
        assert sandbox.exec(PYPI_PROBE, timeout=60).exit_code != 0  # and no network at all
    finally:
        target.remove(force=True)


# --------------------------------------------- what a build may leave in the repository
def test_in_the_repository_a_build_may_leave_only_build_products():
    repo = RepoChanges(
        changed={"calc/__init__.py", "README.md"},
        untracked={"calc/extra.py", "calc/_ext.cpython-311-x86_64-linux-gnu.so", "notes.txt"},
        known={"calc/__init__.py", "README.md", "pyproject.toml", "setup.py", "src/x.py"},
    )
    allowed = [
        "calc/_ext.cpython-311-x86_64-linux-gnu.so",  # an extension, untracked and not ignored
        "calc/_speedups.cpython-311-x86_64-linux-gnu.so",  # ignored
        "calc/version.py",  # generated and ignored (astropy's version.py, setuptools_scm's)
        "calc/_cython.c",
        "setup.py",  # written again as it was
    ]
    assert [rel for rel in allowed if repo_file_problem(rel, repo)] == []
    refused = {
        "calc/__init__.py": "changes a file that existed after the patch was applied",
        "README.md": "changes a file that existed after the patch was applied",
        "calc/extra.py": "a new file git does not ignore",
        "notes.txt": "a new file git does not ignore",
        "pytest.py": "a new top-level module (first on the test runner's path)",
        "_pytest/__init__.py": "a new top-level module (first on the test runner's path)",
        "evil.cpython-311-x86_64-linux-gnu.so": "a new top-level module (first on the test "
        "runner's path)",
        "calc/__init__.cpython-311-x86_64-linux-gnu.so": "a compiled module that shadows a "
        "Python module",
        "src/x.cpython-311-x86_64-linux-gnu.so": "a compiled module that shadows a Python module",
        "calc/.gitignore": "a .gitignore (decides which files git ignores)",
        "calc/sub/.git/config": "a git repository inside the repository",
    }
    assert {rel: repo_file_problem(rel, repo) for rel in refused} == refused


def test_the_repository_rules_apply_to_the_written_files_beside_the_others():
    repo = RepoChanges(changed={"calc/__init__.py"}, known={"calc/__init__.py"})
    changed = [
        "/testbed/calc/__init__.py",
        "/testbed/calc.egg-info/PKG-INFO",
        "/testbed/build/lib/calc/__init__.py",
        "/testbed/calc/__pycache__/__init__.cpython-311.pyc",
        "/testbed/conftest.py",  # ignored or not: test infrastructure
    ]
    written = Written(changed, {}, (), ["calc"], repo=repo)
    assert reinstall_problems(written, "/testbed", ["runtests.py"]) == [
        "/testbed/calc/__init__.py (changes a file that existed after the patch was applied)",
        "/testbed/conftest.py (test infrastructure)",
    ]
    # a .pth the rules cannot read (a link, a directory) is refused, whatever its name
    pth = f"{SITE}/__editable__.calc-0.1.pth"
    assert reinstall_problems(Written([pth], unreadable=[pth])) == [
        f"{pth} (cannot be read as a regular file)"
    ]
    # the system's programs, and a console script named like one (first on a PATH)
    tools = Written(
        ["/opt/swe/venv/bin/git", "/usr/local/bin/sleep", "/usr/bin/sleep", "/sbin/x"],
        tools=["sleep", "ls"],
    )
    assert reinstall_problems(tools) == [
        "/opt/swe/venv/bin/git (replaces a runner's or a tool's script)",
        "/sbin/x (a system program)",
        "/usr/bin/sleep (a system program)",
        "/usr/local/bin/sleep (replaces a runner's or a tool's script)",
    ]


# ------------------------------------------------ the build in a container of its own
def _new_file(path: str, text: str) -> str:
    lines = text.splitlines(keepends=True)
    added = "".join("+" + line for line in lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{added}"
    )


# a setup.py that appends code to the package at build time, hex-encoded, in chunks
_TAMPER_CODE = b"\n\ndef mul(a, b):\n    return a * b\n".hex()
TAMPERING_SETUP_PY = _new_file(
    "setup.py",
    "import os\nfrom setuptools import setup\n\n"
    f"CODE = {_TAMPER_CODE!r}\n"
    "with open(os.path.join(os.getcwd(), 'calc', '__init__.py'), 'a') as f:\n"
    "    for i in range(0, len(CODE), 16):\n"
    "        f.write(bytes.fromhex(CODE[i:i + 16]).decode())\n"
    "setup()\n",
)
# a setup.py that leaves a root daemon re-forking to a new PID every millisecond; it logs
# each PID to /tmp/.hostile-pids and, once /opt/swe/eval appears, copies the test patch out
DAEMON_SOURCE = (
    "import os, shutil, time, traceback\nfrom setuptools import setup\n\n\n"
    "def daemon():\n"
    "    os.setsid()\n"
    "    null = os.open(os.devnull, os.O_RDWR)\n"
    "    for fd in (0, 1, 2):\n        os.dup2(null, fd)\n"
    "    os.closerange(3, 65536)\n"
    "    try:\n"
    "        while True:\n"
    "            if os.fork():\n                os._exit(0)\n"
    "            with open('/tmp/.hostile-pids', 'a') as f:\n"
    "                f.write('%d\\n' % os.getpid())\n"
    "            if os.path.exists('/opt/swe/eval/test.patch'):\n"
    "                shutil.copy('/opt/swe/eval/test.patch', '/testbed/leaked.patch')\n"
    "            time.sleep(0.001)\n"
    "    except BaseException:\n"
    "        open('/tmp/.hostile-error', 'w').write(traceback.format_exc())\n"
    "        raise\n\n\n"
    "if not os.path.exists('/tmp/.hostile-daemon'):\n"
    "    open('/tmp/.hostile-daemon', 'w').close()\n"
    "    if os.fork() == 0:\n        daemon()\n"
    "setup()\n"
)
DAEMON_SETUP_PY = _new_file("setup.py", DAEMON_SOURCE)
# an honest build's products: an ignored generated module, an extension, a build directory
HONEST_SETUP_PY = _new_file(".gitignore", "calc/_version.py\n") + _new_file(
    "setup.py",
    "import os\nfrom setuptools import setup\n\n"
    "with open('calc/_version.py', 'w') as f:\n    f.write('version = \"0.1\"\\n')\n"
    "with open('calc/_speedups.cpython-311-x86_64-linux-gnu.so', 'wb') as f:\n"
    "    f.write(b'\\x7fELF')\n"
    "os.makedirs('build/temp', exist_ok=True)\n"
    "open('build/temp/x.o', 'wb').close()\n"
    "setup()\n",
)


def _applied(run_ctx, synthetic_instances, make_sandbox, patch: str):
    instance = synthetic_instances["demo__calc-1"]
    prepared = prepare_instance(run_ctx, instance)
    sandbox = make_sandbox(prepared.instance_image, network=False)
    sandbox.write_file("/tmp/p.patch", patch)
    applied = sandbox.exec("cd /testbed && git apply /tmp/p.patch")
    assert applied.exit_code == 0, applied.output
    return sandbox, recipe_of(prepared), successor(run_ctx, instance, "grading")


@pytest.mark.container
def test_a_build_that_rewrites_a_source_is_refused(run_ctx, synthetic_instances, make_sandbox):
    sandbox, recipe, fresh_from = _applied(
        run_ctx, synthetic_instances, make_sandbox, TAMPERING_SETUP_PY
    )
    with contained_reinstall(sandbox, recipe, TAMPERING_SETUP_PY, 300, fresh_from) as (
        fresh,
        done,
    ):
        assert done is not None and done.ok, done
        assert done.refused == [
            "/testbed/calc/__init__.py (changes a file that existed after the patch was applied)"
        ]
        assert "return a * b" in fresh.exec("cat /testbed/calc/__init__.py").stdout


# the same daemon, holding the install's own output open (it never redirects its descriptors)
DAEMON_KEEPING_OUTPUT = _new_file(
    "setup.py",
    DAEMON_SOURCE.replace("    null = os.open(os.devnull, os.O_RDWR)\n", "")
    .replace("    for fd in (0, 1, 2):\n        os.dup2(null, fd)\n", "")
    .replace("    os.closerange(3, 65536)\n", ""),
)


@pytest.mark.container
@pytest.mark.parametrize("patch", [DAEMON_SETUP_PY, DAEMON_KEEPING_OUTPUT], ids=["quiet", "output"])
def test_no_process_of_the_build_reaches_the_fresh_container(
    run_ctx, synthetic_instances, make_sandbox, patch
):
    sandbox, recipe, fresh_from = _applied(run_ctx, synthetic_instances, make_sandbox, patch)
    # the install ends once the daemon has re-forked a few times (new PIDs)
    wait = (
        "; for i in $(seq 200); do [ $(wc -l < /tmp/.hostile-pids) -ge 5 ] && break; "
        "sleep 0.05; done"
    )
    recipe = recipe.model_copy(update={"install": recipe.install + wait})
    with contained_reinstall(sandbox, recipe, patch, 30, fresh_from) as (
        fresh,
        done,
    ):
        # pip waits for its build's output to close, which the daemon holding it never does:
        # the install runs into its timeout (as a hung test would), and the build is stopped
        assert done is not None and (done.ok or patch is DAEMON_KEEPING_OUTPUT), done
        assert done.refused == [], done.refused  # it wrote nothing beyond scratch space
        pids = sandbox.read_file("/tmp/.hostile-pids").decode().split()
        assert len(set(pids)) >= 5, pids  # it was alive, re-forking, when the build ended
        with pytest.raises(FileMissing):  # and had not died of itself
            sandbox.read_file("/tmp/.hostile-error")
        # the eval files arrive in the fresh container: nothing is there to copy them
        fresh.exec("mkdir -p /opt/swe/eval && echo hidden > /opt/swe/eval/test.patch")
        time.sleep(1)
        assert fresh.exec("test -e /testbed/leaked.patch").exit_code != 0
        logged = fresh.exec("wc -l < /tmp/.hostile-pids").stdout
        time.sleep(0.3)
        assert fresh.exec("wc -l < /tmp/.hostile-pids").stdout == logged  # no one logs any more
        assert "python" not in fresh.exec("ps -eo comm=").stdout


@pytest.mark.container
def test_an_honest_build_s_products_are_allowed(run_ctx, synthetic_instances, make_sandbox):
    sandbox, recipe, fresh_from = _applied(
        run_ctx, synthetic_instances, make_sandbox, HONEST_SETUP_PY
    )
    with contained_reinstall(sandbox, recipe, HONEST_SETUP_PY, 300, fresh_from) as (
        fresh,
        done,
    ):
        assert done is not None and done.ok, done
        assert done.refused == [], done.refused
        version = "source /opt/swe/activate.sh && cd /tmp && python -c 'import calc._version'"
        assert fresh.exec(version).exit_code == 0
