"""The test-time audit hook of grading (PEP 578); it runs inside the grading container.

A root-owned ``.pth`` file in the environment's site-packages executes this file in every
Python process of a graded test run, before any repository or test code runs. It installs an
interpreter audit hook, which no code can remove, that reports what the *patch's* lines do
(each added or changed line, every line of a file the patch adds, whatever its extension):

- replacing the test process (``os.exec*``) or spawning the test runner again;
- opening the hidden test files, the eval files or a ``/proc/*/fd`` listing;
- getting frames or code objects (``sys._getframe``, ``inspect.currentframe``/``stack``,
  ``tb_frame``, ``gi_frame``, ``f_code``, ``__code__``): reading the running test's answers;
- compiling code from a file that is not a Python source (``runpy.run_path`` of a data file);
- walking the interpreter's objects (``gc.get_*``), tracers and audit hooks of its own,
  ``ctypes``, ``marshal.loads``.

An event is the patch's when its *actor* is a patch line: the frame that made the call, seen
through the standard library for file and process operations (``linecache``, ``runpy``,
``subprocess`` act for their caller) and through ``inspect``/``traceback`` for frames.
So the repository's own behaviour (sympy's and Django's ``sys._getframe``, sphinx's
subprocesses, pytest reading test files) is never the patch's, and neither is a patch line
that merely logs (``logging`` gets frames for itself).

Records go to a FIFO that only root reads, one ``os.write`` each: ``S`` when a process starts
(with a secret of its own, and whether it is the test command's first Python process), ``E``
for an event, ``X`` when that first process ends through the interpreter's exit (its secret
again: nobody else can forge it). A process that closed or replaced the descriptor gets the
FIFO opened again by path; where even that fails, the watched operation is refused instead
of going unseen. Stdlib only; Python 3.8 and newer (older ones have no audit hooks: nothing
is installed, and the report says so by the missing ``S`` record).
"""

import os
import sys

CONFIG = "/opt/swe/audit/config.json"


def _install(config_path):  # noqa: C901, PLR0915 - one closure: nothing outside can reach it
    if not hasattr(sys, "addaudithook"):
        return
    try:
        with open(config_path) as handle:
            text = handle.read()
    except OSError:
        return
    import _thread
    import atexit
    import fcntl
    import json
    import stat
    import sysconfig

    config = json.loads(text)
    fifo = config["fifo"]
    repo = config["repo"].rstrip("/")
    exact = {}  # absolute path -> lines (None: every line)
    suffixes = []  # ("/" + relative path, lines): the package installed as a copy
    for rel, lines in config["lines"].items():
        chosen = None if lines is None else frozenset(lines)
        exact[repo + "/" + rel] = chosen
        for prefix in ("src/", "lib/", ""):
            if rel.startswith(prefix) and "/" in rel[len(prefix) :]:
                suffixes.append(("/" + rel[len(prefix) :], chosen))
    watched_paths = frozenset(repo + "/" + rel for rel in config["tests"])
    eval_dir = config["eval_dir"].rstrip("/") + "/"
    runner_words = tuple(config["runner_words"])
    stdlib = sysconfig.get_paths()["stdlib"].rstrip("/") + "/"

    # everything the hook calls, bound now: a patch that replaces os.write or json later
    # changes nothing here (str methods and these C functions cannot be replaced in place)
    getframe, write, fstat, getpid, getcwd = sys._getframe, os.write, os.fstat, os.getpid, os.getcwd
    os_open, get_ident, hexlify = os.open, _thread.get_ident, os.urandom(16).hex
    token = hexlify()
    str_type, bytes_type, tuple_type, list_type = str, bytes, tuple, list
    busy = set()
    watched = frozenset(
        (
            "open", "os.listdir", "os.scandir", "compile", "os.exec", "subprocess.Popen",
            "os.posix_spawn", "os.spawn", "os.system", "sys._getframe", "object.__getattr__",
            "sys.settrace", "sys.setprofile", "sys.addaudithook", "marshal.loads",
        )
    )  # fmt: skip
    seen = set()
    channel = {"fd": -1, "id": None}

    def open_channel():
        try:
            fd = os_open(fifo, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
            fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
            info = fstat(fd)
        except OSError:
            return False
        if not stat.S_ISFIFO(info.st_mode):
            return False
        channel["fd"], channel["id"] = fd, (info.st_dev, info.st_ino)
        return True

    def send(line):
        """Write one record; False when no channel to the FIFO can be had."""
        data = line.replace("\n", " ").encode("utf-8", "replace")[:3800] + b"\n"
        for _ in range(2):
            fd = channel["fd"]
            try:
                info = fstat(fd)
                if (info.st_dev, info.st_ino) == channel["id"]:
                    write(fd, data)
                    return True
            except OSError:
                pass
            if not open_channel():
                return False
        return False

    def norm(path):
        if type(path) is bytes_type:
            path = path.decode("utf-8", "replace")
        if type(path) is not str_type:
            return ""
        if not path.startswith("/"):
            path = getcwd() + "/" + path
        parts = []
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if parts:
                    parts.pop()
            else:
                parts.append(part)
        return "/" + "/".join(parts)

    def lines_of(filename):
        if filename in exact:
            return True, exact[filename]
        if not filename.startswith(repo + "/"):
            for suffix, lines in suffixes:
                if filename.endswith(suffix):
                    return True, lines
        return False, None

    def is_stdlib(filename):
        return filename.startswith("<frozen") or (
            filename.startswith(stdlib) and "-packages/" not in filename
        )

    def actor(frame, through):
        """The frame that acted: ``frame``, or past the modules ``through`` accepts."""
        while frame is not None:
            code = frame.f_code
            if through == "stdlib" and is_stdlib(code.co_filename):
                frame = frame.f_back
                continue
            if through == "frames" and frame.f_globals.get("__name__") in ("inspect", "traceback"):
                frame = frame.f_back
                continue
            return code.co_filename, frame.f_lineno
        return None, 0

    def relevant(event, args):
        """(what it is, the modules seen through) when ``event`` is one to attribute."""
        if event == "open":
            path = norm(args[0])
            if path in watched_paths:
                return "opens a hidden test file " + path, "stdlib"
            if path.startswith(eval_dir) or path == fifo:
                return "opens grading's own files " + path, "stdlib"
            if path.startswith("/proc/") and "/fd" in path:
                return "opens a descriptor of a process " + path, "stdlib"
            return None
        if event in ("os.listdir", "os.scandir"):
            path = norm(args[0] if args and args[0] is not None else ".")
            if path.startswith("/proc/") and path.endswith("/fd"):
                return "lists a process's descriptors " + path, "stdlib"
            if path.startswith(eval_dir.rstrip("/")):
                return "lists grading's own files", "stdlib"
            return None
        if event == "compile":
            filename = args[1] if len(args) > 1 else None
            if type(filename) is bytes_type:
                filename = filename.decode("utf-8", "replace")
            if type(filename) is not str_type or filename.startswith("<"):
                return None
            if filename.endswith((".py", ".pyw")):
                return None
            return "compiles code from a file that is not Python source " + filename, "stdlib"
        if event == "os.exec":
            return "replaces the test process (exec)", "stdlib"
        if event in ("subprocess.Popen", "os.posix_spawn", "os.spawn", "os.system"):
            words = []
            for arg in args[:2]:
                if type(arg) in (tuple_type, list_type):
                    words.extend(norm_word(a) for a in arg)
                else:
                    words.append(norm_word(arg))
            line = " ".join(words)
            if any(word in line for word in runner_words):
                return "runs the test runner again: " + line[:200], "stdlib"
            return None
        if event == "sys._getframe":
            return "gets a frame (sys._getframe)", "frames"
        if event == "object.__getattr__":
            name = args[1] if len(args) > 1 else ""
            if name in ("f_code", "tb_frame", "gi_frame", "cr_frame", "ag_frame", "__code__"):
                return "reads " + str(name) + " (frames or code of other functions)", "direct"
            return None
        if event in ("sys.settrace", "sys.setprofile", "sys.addaudithook"):
            return "installs " + event, "direct"
        if event.startswith("gc.get_"):
            return "walks the interpreter's objects (" + event + ")", "direct"
        if event.startswith("ctypes."):
            return "uses ctypes (" + event + ")", "stdlib"
        if event == "marshal.loads":
            return "loads code objects (marshal.loads)", "direct"
        return None

    def norm_word(arg):
        if type(arg) is bytes_type:
            return arg.decode("utf-8", "replace")
        return arg if type(arg) is str_type else ""

    def handle(event, args):
        found = relevant(event, args)
        if found is None:
            return
        what, through = found
        try:  # getframe(0) is handle, 1 the hook, 2 the frame whose call raised the event
            frame = getframe(2)
        except ValueError:  # raised from C with no Python frame above the hook
            return
        filename, line = actor(frame, through)
        if filename is None:
            return
        ours, lines = lines_of(filename)
        if not ours or (lines is not None and line not in lines):
            return
        key = (event, filename, line)
        if key in seen:
            return
        seen.add(key)
        rel = filename[len(repo) + 1 :] if filename.startswith(repo + "/") else filename
        if not send(f"E\t{getpid()}\t{event}\t{rel}:{line}\t{what}"):
            return f"swe-green grading: {event} refused (its audit channel is gone)"

    def hook(event, args):
        if event not in watched and not event.startswith(("gc.get_", "ctypes.")):
            return
        ident = get_ident()
        if ident in busy:
            return
        busy.add(ident)
        try:
            refused = handle(event, args)
        except Exception:  # noqa: BLE001 - the hook never breaks the code it watches
            refused = None
        finally:
            busy.discard(ident)
        if refused:
            raise PermissionError(refused)

    top = os.environ.pop("SWE_GREEN_AUDIT_TOP", "") == "1"
    if not open_channel():
        return
    send(f"S\t{getpid()}\t{1 if top else 0}\t{token}")
    if top:
        pid = getpid()

        def ended():
            if getpid() == pid:
                send(f"X\t{pid}\t{token}")

        atexit.register(ended)
    sys.addaudithook(hook)


_install(CONFIG)
del _install
