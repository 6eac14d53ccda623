"""The test-time audit hook of grading (PEP 578); it runs inside the grading container.

A root-owned ``.pth`` file in the environment's site-packages executes this file in every
Python process of a graded test run, before any repository or test code runs, with a copy of
the builtins of its own (a patch that replaces ``builtins.str`` later changes nothing here).
It installs an interpreter audit hook, which no code can remove, that reports what the
*patch's* code does (each added or changed line, every line of a file the patch adds,
whatever its extension, and the code those lines make at run time):

- replacing the test process (``os.exec*``), spawning the test runner again, or spawning a
  Python that skips the start-up this hook rides on (``-S``, ``PYTHONHOME``, ``/proc/*/exe``,
  a Python outside the environment);
- opening the hidden test files, the eval files or a ``/proc/*/fd`` listing;
- getting frames or code objects (``sys._getframe``, ``sys._current_frames``,
  ``inspect``/``traceback``/``logging`` frame helpers, ``tb_frame``, ``gi_frame``,
  ``f_code``, ``__code__``): reading the running test's answers;
- compiling code from a file that is not a Python source (``runpy.run_path`` of a data file);
- walking the interpreter's objects (``gc.get_*``), tracers and audit hooks of its own,
  ``ctypes``, ``marshal.loads``. Walking the objects, the frames of every thread and
  installing a tracer are refused as well: they are how this hook's own state is reached.

**Attribution** walks the stack down from the frame that raised the event. Frames that act
for their caller are passed through: the standard library for file and process operations
(``linecache``, ``runpy``, ``subprocess``), its frame helpers (``inspect``, ``traceback``,
``logging.currentframe``) and its runners (``threading``, ``concurrent.futures``, ``runpy``,
``weakref``) for frames, and code with no file of its own (``exec`` of a string). The first
other frame decides: a patch line makes the patch the actor; the repository's, the test's or
the runner's own code (sympy's and Django's ``sys._getframe``, pytest reading test files,
``logging`` getting the frame of its caller) is not the patch's. Code the patch makes at run
time is the patch's wherever it later runs: code objects it ``exec``-s or turns into
functions, file names it compiles code under, and code whose file name is not that of the
patch module it runs in (``CodeType.replace(co_filename=...)``). A thread whose whole stack
is the standard library's (work handed to a pool) acts for the code waiting on it: the patch
when a patch frame is on another thread's stack, else the work's origin is unknown and the
event is reported as the thread's.

The hook's state lives in closures over frozensets and tuples (no object of a module's
namespace), reachable only through what the hook refuses to the patch (``gc``, the frames of
other threads, tracers). Records go to a FIFO that only root reads, one ``os.write`` each:
``S`` when a process starts (with a secret of its own, and whether it is the test command's
first Python process), ``E`` for an event, ``X`` when that first process ends through the
interpreter's exit (its secret again: nobody else can forge it). A process that closed or
replaced the descriptor gets the FIFO opened again by path; where even that fails, the
watched operation is refused instead of going unseen. Stdlib only; Python 3.8 and newer
(older ones have no audit hooks: nothing is installed, and the report says so by the missing
``S`` record).
"""

import os
import sys

# the configuration's path: given by the loader (``audit.PTH_LINE``, from the container contract)
CONFIG: str


def _make_hook(config, stdlib, token):  # noqa: C901, PLR0915 - one closure holds the hook's state
    """The hook: nested functions over the configuration, made immutable, and the few
    mutable tables attribution needs (none is reachable from outside the closure)."""
    import _thread
    import fcntl
    import stat

    watched = frozenset(
        (
            "open", "os.listdir", "os.scandir", "compile", "os.exec", "subprocess.Popen",
            "os.posix_spawn", "os.spawn", "os.system", "sys._getframe", "object.__getattr__",
            "sys.settrace", "sys.setprofile", "sys.addaudithook", "marshal.loads", "exec",
            "function.__new__", "code.__new__", "object.__setattr__", "sys._current_frames",
        )
    )  # fmt: skip
    code_attributes = frozenset(
        ("f_code", "tb_frame", "gi_frame", "cr_frame", "ag_frame", "__code__")
    )
    spawns = frozenset(("subprocess.Popen", "os.posix_spawn", "os.spawn", "os.system", "os.exec"))
    refused_events = frozenset(("sys._current_frames", "sys.settrace", "sys.setprofile"))
    made_events = frozenset(("exec", "function.__new__", "code.__new__", "object.__setattr__"))
    # the standard library's functions that hand frames to their caller, and its runners
    # (they call what they were given): passed through when attributing frame reads
    frame_helpers = frozenset(
        (
            ("logging", "currentframe"), ("logging", "<lambda>"), ("traceback", "walk_tb"),
            ("traceback", "walk_stack"), ("traceback", "_walk_tb_with_full_positions"),
            ("traceback", "extract_stack"), ("traceback", "format_stack"),
            ("traceback", "print_stack"), ("inspect", "currentframe"), ("inspect", "stack"),
            ("inspect", "trace"), ("inspect", "getouterframes"), ("inspect", "getinnerframes"),
        )
    )  # fmt: skip
    runners = frozenset(
        (
            ("threading", "run"), ("threading", "_bootstrap"), ("threading", "_bootstrap_inner"),
            ("concurrent.futures.thread", "run"), ("concurrent.futures.thread", "_worker"),
            ("runpy", "_run_code"), ("runpy", "_run_module_code"), ("runpy", "run_path"),
            ("runpy", "run_module"), ("weakref", "__call__"), ("weakref", "_exitfunc"),
            ("functools", "wrapper"), ("contextlib", "inner"), ("atexit", "_run_exitfuncs"),
        )
    )  # fmt: skip
    fifo = config["fifo"]
    repo = config["repo"].rstrip("/")
    exact, suffixes = [], []
    for rel, lines in config["lines"].items():
        chosen = None if lines is None else frozenset(lines)
        exact.append((repo + "/" + rel, chosen))
        for prefix in ("src/", "lib/", ""):
            if rel.startswith(prefix) and "/" in rel[len(prefix) :]:
                suffixes.append(("/" + rel[len(prefix) :], chosen))
    exact_names = frozenset(name for name, _ in exact)
    exact_lines, suffix_lines = tuple(exact), tuple(suffixes)
    tests = frozenset(repo + "/" + rel for rel in config["tests"])
    eval_dir = config["eval_dir"].rstrip("/") + "/"
    words = tuple(config["runner_words"])
    stdlib = stdlib.rstrip("/") + "/"
    del exact, suffixes, config
    getframe, write, fstat, os_open = sys._getframe, os.write, os.fstat, os.open
    getpid, getcwd, get_ident, fcntl_ = os.getpid, os.getcwd, _thread.get_ident, fcntl.fcntl
    current_frames, is_fifo = sys._current_frames, stat.S_ISFIFO
    main_thread = get_ident()
    executable = os.path.realpath(sys.executable) if sys.executable else ""
    # the environment's own programs: a Python elsewhere reads no .pth of this environment
    env_bin = os.path.dirname(sys.executable or "") + "/"
    flags = (
        os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC,
        os.O_NONBLOCK,
        fcntl.F_GETFL,
        fcntl.F_SETFL,
    )
    str_, bytes_, tuple_, list_, dict_, type_, id_ = str, bytes, tuple, list, dict, type, id
    code_type = type_((lambda: None).__code__)
    function_type = type_(lambda: None)
    # the mutable tables: the channel, the re-entrancy guard, what was sent, and the code
    # the patch made at run time (id -> (the code, kept alive; where the patch made it))
    channel = [-1, None]
    busy, seen = set(), set()
    made_codes, made_files = {}, {}

    # ------------------------------------------------------------------ the channel
    def open_channel():
        opening, nonblock, getfl, setfl = flags
        try:
            fd = os_open(fifo, opening)
            fcntl_(fd, setfl, fcntl_(fd, getfl) & ~nonblock)
            info = fstat(fd)
        except OSError:
            return False
        if not is_fifo(info.st_mode):
            return False
        channel[0], channel[1] = fd, (info.st_dev, info.st_ino)
        return True

    def send(line):
        """Write one record; False when no channel to the FIFO can be had."""
        data = line.replace("\n", " ").encode("utf-8", "replace")[:3800] + b"\n"
        for _ in range(2):
            try:
                info = fstat(channel[0])
                if (info.st_dev, info.st_ino) == channel[1]:
                    write(channel[0], data)
                    return True
            except OSError:
                pass
            if not open_channel():
                return False
        return False

    # ------------------------------------------------------------------ attribution
    def text(value):
        if type_(value) is bytes_:
            return value.decode("utf-8", "replace")
        return value if type_(value) is str_ else ""

    def norm(path):
        path = text(path)
        if not path:
            return ""
        if not path.startswith("/"):
            path = getcwd() + "/" + path
        parts = []
        for part in path.split("/"):
            if part == "..":
                if parts:
                    parts.pop()
            elif part not in ("", "."):
                parts.append(part)
        return "/" + "/".join(parts)

    def lines_of(filename):
        """(whether ``filename`` is a file of the patch, its lines: None for all)."""
        if filename in exact_names:
            for name, lines in exact_lines:
                if name == filename:
                    return True, lines
        if not filename.startswith(repo + "/"):
            for suffix, lines in suffix_lines:
                if filename.endswith(suffix):
                    return True, lines
        return False, None

    def rel(filename):
        return filename[len(repo) + 1 :] if filename.startswith(repo + "/") else filename

    def global_text(frame, name):
        value = frame.f_globals.get(name) if type_(frame.f_globals) is dict_ else None
        return value if type_(value) is str_ else ""

    def judge(frame, mode):  # noqa: C901, PLR0911 - one return per kind of frame, a table
        """One frame: (the patch's location, how) when it is the patch's; "" when it acts
        for its caller (pass through); None when it is someone else's (stop)."""
        code = frame.f_code
        made = made_codes.get(id_(code))
        if made is not None and made[0] is code:
            return made[1], " (through code it made at run time)"
        filename = code.co_filename if type_(code.co_filename) is str_ else ""
        if filename and not filename.startswith(("/", "<")):
            filename = norm(filename)
        if filename in made_files:
            how = " (through code it compiled under the name " + filename + ")"
            return made_files[filename], how
        ours, lines = lines_of(filename)
        if ours:
            if lines is None or frame.f_lineno in lines:
                return rel(filename) + ":" + str(frame.f_lineno), ""
            return None
        if filename.startswith("<frozen"):
            return ""
        if filename.startswith("<"):
            return ""  # exec of a string: it belongs to its caller (or is code it made)
        module_file = global_text(frame, "__file__")
        if module_file and norm(module_file) != filename:  # code named after another file
            if lines_of(norm(module_file))[0]:
                return (
                    rel(norm(module_file)) + ":" + str(frame.f_lineno),
                    " (through code named " + filename + " in the patch's module)",
                )
            return ""
        if filename.startswith(stdlib) and "-packages/" not in filename:
            if mode == "made":
                return None  # the standard library compiles for itself
            if mode == "stdlib":
                return ""
            key = (global_text(frame, "__name__"), code.co_name)
            if key in runners or key in frame_helpers:
                return ""
            if mode in ("frames", "installs") and key[0] in ("inspect", "traceback"):
                return ""
        return None

    def walk(frame, mode):
        """The patch's location and how, when the patch acted (see the module doc)."""
        while frame is not None:
            found = judge(frame, mode)
            if found is None:
                return None
            if found:
                return found
            frame = frame.f_back
        if get_ident() == main_thread or mode in ("installs", "made"):
            return None
        # a thread of the standard library alone: the patch when it waits on another thread
        me = get_ident()
        for ident, top in current_frames().items():
            if ident != me:
                found = walk_other(top)
                if found:
                    return found[0], found[1] + " (in a thread running the work it handed over)"
        return "<thread>", " (in a thread running only the standard library: work handed over)"

    def walk_other(frame):
        while frame is not None:
            found = judge(frame, "stdlib")
            if found is None:
                return None
            if found:
                return found
            frame = frame.f_back
        return None

    # ------------------------------------------------------------------ events
    def path_event(event, args):
        """What an ``open`` or a directory listing is, when it is one to attribute."""
        if event == "open":
            path = norm(args[0]) if args else ""
            if path in tests:
                return "opens a hidden test file " + path
            if path.startswith(eval_dir) or path == fifo:
                return "opens grading's own files " + path
            if path.startswith("/proc/") and "/fd" in path:
                return "opens a descriptor of a process " + path
            return None
        path = norm(args[0] if args and args[0] is not None else ".")
        if path.startswith("/proc/") and path.endswith("/fd"):
            return "lists a process's descriptors " + path
        if path.startswith(eval_dir.rstrip("/")):
            return "lists grading's own files"
        return None

    def is_python(word):
        name = word.rsplit("/", 1)[-1]
        if word == executable or (word.startswith("/proc/") and word.endswith("/exe")):
            return True
        return name.startswith("python") and all(c.isdigit() or c == "." for c in name[6:])

    def skips_hook(argv, env):  # noqa: C901 - a command line's options, read in place
        """Why a command line (or a shell command in it) starts a Python without this
        hook: through ``/proc/*/exe`` or from another directory (not this environment's
        site-packages), ``-S`` (no site, so no ``.pth``), or ``PYTHONHOME`` set."""
        pieces = []
        for word in argv:
            pieces.extend(word.split())  # a shell command: its words too
        shown = " ".join(argv)[:200]
        for i, word in enumerate(pieces):
            word = word.strip("'\"")
            if not is_python(word):
                continue
            skip = False
            for option in pieces[i + 1 :]:
                if skip:
                    skip = False
                    continue
                if not option.startswith("-") or option.startswith("--") or option == "-":
                    break
                letters = option[1:]
                for n, letter in enumerate(letters):
                    if letter == "S":
                        return "starts a Python without site-packages (-S): " + shown
                    if letter in "cmWXQ":
                        skip = n == len(letters) - 1 and letter in "WXQ"
                        break
                if "c" in letters or "m" in letters:
                    break
            if type_(env) is dict_:
                for key in env:
                    if text(key) in ("PYTHONHOME", "PYTHONPLATLIBDIR"):
                        return "starts a Python with " + text(key) + " set: " + shown
            if word.startswith("/proc/"):
                where = " (outside its environment): "
                return "starts the interpreter through " + word + where + shown
            if word.startswith("/") and word != executable and not word.startswith(env_bin):
                return "starts a Python other than the environment's: " + shown
        return None

    def spawn_event(event, args):
        """What a process start is, when it is one to attribute: a Python without this
        hook, the test process replaced, the test runner run again."""
        env = None
        if event == "os.system":
            argv = [text(args[0])] if args else []
        else:
            program, rest = (args[1:2], args[2:]) if event == "os.spawn" else (args[:1], args[1:])
            argv = [text(program[0])] if program else []
            given = rest[0] if rest else None
            if type_(given) in (tuple_, list_):
                argv += [text(word) for word in given]
            else:
                argv.append(text(given))
            env = rest[-1] if len(rest) > 1 else None
            if len(argv) > 1 and argv[0] in ("", argv[1]):
                argv = argv[1:]  # the program given again as the first argument
        skipped = skips_hook(argv, env)
        if skipped:
            return skipped
        if event == "os.exec":
            return "replaces the test process (exec)"
        line = " ".join(argv)
        if any(word in line for word in words):
            return "runs the test runner again: " + line[:200]
        return None

    def relevant(event, args):  # noqa: C901, PLR0911 one return per audited event, a table
        """(what it is, how attribution walks) when ``event`` is one to attribute."""
        if event in ("open", "os.listdir", "os.scandir"):
            return path_event(event, args), "stdlib"
        if event == "compile":
            name = text(args[1]) if len(args) > 1 else ""
            if not name or name.startswith("<") or name.endswith((".py", ".pyw")):
                return None, ""
            return "compiles code from a file that is not Python source " + name, "stdlib"
        if event in spawns:
            return spawn_event(event, args), "stdlib"
        if event == "sys._getframe":
            return "gets a frame (sys._getframe)", "frames"
        if event == "sys._current_frames":
            return "gets the frames of every thread (sys._current_frames)", "frames"
        if event == "object.__getattr__":
            name = args[1] if len(args) > 1 else ""
            if name in code_attributes:
                return "reads " + str_(name) + " (frames or code of other functions)", "attr"
            return None, ""
        if event.startswith("ctypes."):
            return "uses ctypes (" + event + ")", "stdlib"
        if event.startswith("gc.get_"):
            return "walks the interpreter's objects (" + event + ")", "frames"
        if event == "marshal.loads":
            return "loads code objects (marshal.loads)", "direct"
        return "installs " + event, "installs"  # settrace, setprofile, addaudithook

    def made_at_run_time(event, args, frame):  # noqa: C901 - one branch per event
        """Code the patch makes (``exec``, a new function or code object, ``__code__``
        replaced, code compiled under a file's name) is the patch's wherever it runs."""
        if frame.f_code.co_filename.startswith("<frozen"):
            return  # the import system: a module's own code, loaded or compiled
        if event in ("compile", "code.__new__"):
            name = text(args[1]) if len(args) > 1 else ""
            if name and not name.startswith("<") and name not in made_files:
                found = walk(frame, "made")
                if found:
                    made_files[name] = found[0]
            return
        if event == "object.__setattr__":
            if len(args) < 3 or args[1] != "__code__" or type_(args[0]) is not function_type:
                return
            code = args[2]
        else:  # exec, function.__new__
            code = args[0] if args else None
        if type_(code) is not code_type or id_(code) in made_codes:
            return
        found = walk(frame, "stdlib")
        if not found:
            return
        pending = [code]
        while pending:
            item = pending.pop()
            if id_(item) not in made_codes:
                made_codes[id_(item)] = (item, found[0])
                pending.extend(c for c in item.co_consts if type_(c) is code_type)

    def anonymous(args):
        """Whether the code ``exec`` runs has no file of its own (``<string>``, ...)."""
        code = args[0] if args else None
        if type_(code) is not code_type:
            return False
        name = code.co_filename
        return type_(name) is not str_ or name.startswith("<")

    def caller():
        """The frame whose call raised the event (None: raised from C with no Python frame
        above the hook); getframe(0) is this function, 1 handle, 2 the hook."""
        try:
            return getframe(3)
        except ValueError:
            return None

    def handle(event, args):  # noqa: C901 - the made-code events, then the reported ones
        """Report ``event`` when the patch acted; a refusal's text when it is refused."""
        if event in made_events:
            if event == "exec" and not anonymous(args):
                return None  # a module's code (a file's): what compiled it was judged then
            if event != "object.__setattr__" or (len(args) > 2 and args[1] == "__code__"):
                frame = caller()
                if frame is not None:
                    made_at_run_time(event, args, frame)
            return None
        if event == "compile":
            frame = caller()
            if frame is not None:
                made_at_run_time(event, args, frame)
        what, mode = relevant(event, args)
        if what is None:
            return None
        frame = caller()
        if frame is None:
            found = walk(None, mode) if get_ident() != main_thread else None
        elif mode == "direct":
            found = judge(frame, mode) or None
        else:
            found = walk(frame, mode)
        if not found:
            return None
        where, how = found
        refuse = event.startswith("gc.get_") or event in refused_events
        if (event, where) not in seen:
            seen.add((event, where))
            if not send("E\t" + str_(getpid()) + "\t" + event + "\t" + where + "\t" + what + how):
                return "swe-green grading: " + event + " refused (its audit channel is gone)"
        if refuse:
            return "swe-green grading: " + event + " refused to the patch's code"
        return None

    def hook(event, args):
        if event not in watched and not event.startswith(("gc.get_", "ctypes.")):
            return
        ident = get_ident()
        if ident in busy:  # the hook's own calls raise events too
            return
        busy.add(ident)
        try:
            refused = handle(event, args)
        except Exception:  # noqa: BLE001 - the hook never breaks the code it watches...
            # ...but says that it let an event pass unseen: an ``F`` record (pid, event) in
            # audit.log, which is no evidence (the actor is unknown). Nothing of the exception
            # is read: its class and text may be the patch's code.
            send("F\t" + str_(getpid()) + "\t" + event)
            refused = None
        finally:
            busy.discard(ident)
        if refused:
            raise PermissionError(refused)

    return hook, open_channel, send


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
    token = os.urandom(16).hex()
    hook, open_channel, send = _make_hook(json.loads(text), stdlib, token)  # noqa: F821
    top = os.environ.pop("SWE_GREEN_AUDIT_TOP", "") == "1"
    if not open_channel():
        return
    send(f"S\t{os.getpid()}\t{1 if top else 0}\t{token}")
    if top:
        pid, getpid = os.getpid(), os.getpid

        def ended():
            if getpid() == pid:
                send(f"X\t{pid}\t{token}")

        atexit.register(ended)
    sys.addaudithook(hook)


_install(CONFIG)  # noqa: F821 - CONFIG is given by the loader
del _install, _make_hook
