"""The test-time audit hook of grading (PEP 578); it runs inside the grading container.

A root-owned ``.pth`` file in the environment's site-packages executes this file in every
Python process of a graded test run, before any repository or test code runs, with a copy of
the builtins of its own (a patch that replaces ``builtins.str`` later changes nothing here).
It installs an interpreter audit hook, which no code can remove, that reports what the
*patch's* lines do
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

# the configuration's path: given by the loader (``audit.PTH_LINE``, from the container contract)
CONFIG: str
_WATCHED = frozenset(
    (
        "open", "os.listdir", "os.scandir", "compile", "os.exec", "subprocess.Popen",
        "os.posix_spawn", "os.spawn", "os.system", "sys._getframe", "object.__getattr__",
        "sys.settrace", "sys.setprofile", "sys.addaudithook", "marshal.loads",
    )
)  # fmt: skip
_CODE_ATTRIBUTES = ("f_code", "tb_frame", "gi_frame", "cr_frame", "ag_frame", "__code__")
_SPAWNS = ("subprocess.Popen", "os.posix_spawn", "os.spawn", "os.system")


class _Audit:
    """The hook's state and its steps. Everything it calls is bound when it is made: a patch
    that replaces ``os.write`` or ``json`` later changes nothing here (str methods and these
    C functions cannot be replaced in place). Only ``gc`` (itself watched) reaches it."""

    def __init__(self, config, stdlib, token):
        import _thread
        import fcntl
        import stat

        self.fifo, self.token = config["fifo"], token
        self.repo = repo = config["repo"].rstrip("/")
        self.exact = {}  # absolute path -> lines (None: every line)
        self.suffixes = []  # ("/" + relative path, lines): the package installed as a copy
        for rel, lines in config["lines"].items():
            chosen = None if lines is None else frozenset(lines)
            self.exact[repo + "/" + rel] = chosen
            for prefix in ("src/", "lib/", ""):
                if rel.startswith(prefix) and "/" in rel[len(prefix) :]:
                    self.suffixes.append(("/" + rel[len(prefix) :], chosen))
        self.tests = frozenset(repo + "/" + rel for rel in config["tests"])
        self.eval_dir = config["eval_dir"].rstrip("/") + "/"
        self.runner_words = tuple(config["runner_words"])
        self.stdlib = stdlib.rstrip("/") + "/"
        self.getframe, self.write, self.fstat = sys._getframe, os.write, os.fstat
        self.getpid, self.getcwd, self.os_open = os.getpid, os.getcwd, os.open
        self.get_ident, self.fcntl, self.is_fifo = _thread.get_ident, fcntl.fcntl, stat.S_ISFIFO
        self.flags = (
            os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC, os.O_NONBLOCK, fcntl.F_GETFL,
            fcntl.F_SETFL,
        )  # fmt: skip
        self.busy, self.seen = set(), set()
        self.fd, self.fd_id = -1, None

    # ------------------------------------------------------------------ the channel
    def open_channel(self):
        opening, nonblock, getfl, setfl = self.flags
        try:
            fd = self.os_open(self.fifo, opening)
            self.fcntl(fd, setfl, self.fcntl(fd, getfl) & ~nonblock)
            info = self.fstat(fd)
        except OSError:
            return False
        if not self.is_fifo(info.st_mode):
            return False
        self.fd, self.fd_id = fd, (info.st_dev, info.st_ino)
        return True

    def send(self, line):
        """Write one record; False when no channel to the FIFO can be had."""
        data = line.replace("\n", " ").encode("utf-8", "replace")[:3800] + b"\n"
        for _ in range(2):
            try:
                info = self.fstat(self.fd)
                if (info.st_dev, info.st_ino) == self.fd_id:
                    self.write(self.fd, data)
                    return True
            except OSError:
                pass
            if not self.open_channel():
                return False
        return False

    # ------------------------------------------------------------------ attribution
    def norm(self, path):
        if type(path) is bytes:
            path = path.decode("utf-8", "replace")
        if type(path) is not str:
            return ""
        if not path.startswith("/"):
            path = self.getcwd() + "/" + path
        parts = []
        for part in path.split("/"):
            if part == "..":
                if parts:
                    parts.pop()
            elif part not in ("", "."):
                parts.append(part)
        return "/" + "/".join(parts)

    def lines_of(self, filename):
        """(whether ``filename`` is a file of the patch, its lines: None for all)."""
        if filename in self.exact:
            return True, self.exact[filename]
        if not filename.startswith(self.repo + "/"):
            for suffix, lines in self.suffixes:
                if filename.endswith(suffix):
                    return True, lines
        return False, None

    def actor(self, frame, through):
        """The frame that acted: ``frame``, or past the modules ``through`` accepts."""
        while frame is not None:
            filename = frame.f_code.co_filename
            if through == "stdlib" and (
                filename.startswith("<frozen")
                or (filename.startswith(self.stdlib) and "-packages/" not in filename)
            ):
                frame = frame.f_back
                continue
            if through == "frames" and frame.f_globals.get("__name__") in ("inspect", "traceback"):
                frame = frame.f_back
                continue
            return filename, frame.f_lineno
        return None, 0

    # ------------------------------------------------------------------ events
    def path_event(self, event, args):
        """What an ``open`` or a directory listing is, when it is one to attribute."""
        if event == "open":
            path = self.norm(args[0])
            if path in self.tests:
                return "opens a hidden test file " + path
            if path.startswith(self.eval_dir) or path == self.fifo:
                return "opens grading's own files " + path
            if path.startswith("/proc/") and "/fd" in path:
                return "opens a descriptor of a process " + path
            return None
        path = self.norm(args[0] if args and args[0] is not None else ".")
        if path.startswith("/proc/") and path.endswith("/fd"):
            return "lists a process's descriptors " + path
        if path.startswith(self.eval_dir.rstrip("/")):
            return "lists grading's own files"
        return None

    def spawn_event(self, args):
        words = []
        for arg in args[:2]:
            for word in arg if type(arg) in (tuple, list) else (arg,):
                if type(word) is bytes:
                    word = word.decode("utf-8", "replace")
                words.append(word if type(word) is str else "")
        line = " ".join(words)
        if any(word in line for word in self.runner_words):
            return "runs the test runner again: " + line[:200]
        return None

    def relevant(self, event, args):  # noqa: C901, PLR0911 one return per audited event, a table
        """(what it is, the modules seen through) when ``event`` is one to attribute."""
        if event in ("open", "os.listdir", "os.scandir"):
            return self.path_event(event, args), "stdlib"
        if event == "compile":
            name = args[1] if len(args) > 1 else None
            if type(name) is bytes:
                name = name.decode("utf-8", "replace")
            if type(name) is not str or name.startswith("<") or name.endswith((".py", ".pyw")):
                return None, ""
            return "compiles code from a file that is not Python source " + name, "stdlib"
        if event == "os.exec":
            return "replaces the test process (exec)", "stdlib"
        if event in _SPAWNS:
            return self.spawn_event(args), "stdlib"
        if event == "sys._getframe":
            return "gets a frame (sys._getframe)", "frames"
        if event == "object.__getattr__":
            name = args[1] if len(args) > 1 else ""
            if name in _CODE_ATTRIBUTES:
                return "reads " + str(name) + " (frames or code of other functions)", "direct"
            return None, ""
        if event.startswith("ctypes."):
            return "uses ctypes (" + event + ")", "stdlib"
        if event.startswith("gc.get_"):
            return "walks the interpreter's objects (" + event + ")", "direct"
        if event == "marshal.loads":
            return "loads code objects (marshal.loads)", "direct"
        return "installs " + event, "direct"  # settrace, setprofile, addaudithook

    def handle(self, event, args):
        """Report ``event`` when a patch line acted; a refusal's text when it cannot be."""
        what, through = self.relevant(event, args)
        if what is None:
            return None
        try:  # getframe(0) is handle, 1 the hook, 2 the frame whose call raised the event
            frame = self.getframe(2)
        except ValueError:  # raised from C with no Python frame above the hook
            return None
        filename, line = self.actor(frame, through)
        ours, lines = self.lines_of(filename) if filename is not None else (False, None)
        if not ours or (lines is not None and line not in lines):
            return None
        if (event, filename, line) in self.seen:
            return None
        self.seen.add((event, filename, line))
        rel = filename[len(self.repo) + 1 :] if filename.startswith(self.repo + "/") else filename
        if self.send(f"E\t{self.getpid()}\t{event}\t{rel}:{line}\t{what}"):
            return None
        return f"swe-green grading: {event} refused (its audit channel is gone)"

    def hook(self, event, args):
        if event not in _WATCHED and not event.startswith(("gc.get_", "ctypes.")):
            return
        ident = self.get_ident()
        if ident in self.busy:  # the hook's own calls raise events too
            return
        self.busy.add(ident)
        try:
            refused = self.handle(event, args)
        except Exception:  # noqa: BLE001 - the hook never breaks the code it watches...
            # ...but says that it let an event pass unseen: an ``F`` record (pid, event) in
            # audit.log, which is no evidence (the actor is unknown). Nothing of the exception
            # is read: its class and text may be the patch's code.
            self.send(f"F\t{self.getpid()}\t{event}")
            refused = None
        finally:
            self.busy.discard(ident)
        if refused:
            raise PermissionError(refused)


def _install(config_path):
    """Install the hook when grading set it up (its configuration is there), once a process
    (site-packages can be on ``sys.path`` twice: a venv's ``lib64`` is a link to ``lib``)."""
    if not hasattr(sys, "addaudithook") or getattr(sys, "_swe_green_audit", False):
        return
    sys._swe_green_audit = True
    try:
        with open(config_path) as handle:
            text = handle.read()
    except OSError:
        return
    import atexit
    import json

    # the standard library's directory is the os module's (sysconfig costs 30 ms to import)
    stdlib = os.path.dirname(os.__file__)
    audit = _Audit(json.loads(text), stdlib, os.urandom(16).hex())
    top = os.environ.pop("SWE_GREEN_AUDIT_TOP", "") == "1"
    if not audit.open_channel():
        return
    audit.send(f"S\t{os.getpid()}\t{1 if top else 0}\t{audit.token}")
    if top:
        pid, getpid = os.getpid(), os.getpid

        def ended():
            if getpid() == pid:
                audit.send(f"X\t{pid}\t{audit.token}")

        atexit.register(ended)
    sys.addaudithook(audit.hook)


_install(CONFIG)  # noqa: F821 - CONFIG is given by the loader
del _install
