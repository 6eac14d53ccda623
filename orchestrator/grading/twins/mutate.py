"""One expected value changed, as a person editing the line would change it: the new source
text of one literal token (a string with one letter changed, a number one up, ``True`` for
``False``, another exception class), in the token's own style (quotes, prefixes, number
format kept). Each function returns the candidate texts, the most natural first; every
candidate differs in value from the original (checked where Python can evaluate it)."""

from __future__ import annotations

import ast
import math
import random
import re
import string

# an exception class -> classes that are neither its base nor its subclass, natural first
_OTHER_EXCEPTION = {
    "ValueError": ("TypeError", "KeyError"),
    "TypeError": ("ValueError", "AttributeError"),
    "KeyError": ("IndexError", "TypeError"),
    "IndexError": ("KeyError", "TypeError"),
    "AttributeError": ("TypeError", "KeyError"),
    "NotImplementedError": ("TypeError", "ValueError"),
    "RuntimeError": ("ValueError", "TypeError"),
    "ZeroDivisionError": ("ValueError", "TypeError"),
    "OverflowError": ("ValueError", "TypeError"),
    "AssertionError": ("ValueError", "TypeError"),
    "ImportError": ("AttributeError", "TypeError"),
    "ModuleNotFoundError": ("AttributeError", "TypeError"),
    "FileNotFoundError": ("ValueError", "TypeError"),
    "OSError": ("ValueError", "TypeError"),
    "IOError": ("ValueError", "TypeError"),
    "UnicodeDecodeError": ("TypeError", "KeyError"),
    "UnicodeEncodeError": ("TypeError", "KeyError"),
    "StopIteration": ("ValueError", "TypeError"),
    "RecursionError": ("ValueError", "TypeError"),
    "SystemExit": ("ValueError", "TypeError"),
    "NameError": ("TypeError", "ValueError"),
    "SyntaxError": ("ValueError", "TypeError"),
    "UserWarning": ("DeprecationWarning", "RuntimeWarning"),
    "DeprecationWarning": ("UserWarning", "RuntimeWarning"),
    "PendingDeprecationWarning": ("UserWarning", "RuntimeWarning"),
    "FutureWarning": ("UserWarning", "RuntimeWarning"),
    "RuntimeWarning": ("UserWarning", "DeprecationWarning"),
    "SyntaxWarning": ("UserWarning", "RuntimeWarning"),
}
# too broad to change: whatever is raised, a class beside them may match it too
BROAD_EXCEPTIONS = frozenset(
    {"Exception", "BaseException", "Warning", "ArithmeticError", "LookupError"}
)
_PLAIN = frozenset(string.ascii_letters + string.digits)
_STRING_TOKEN = re.compile(r"(?P<prefix>[A-Za-z]*)(?P<quote>'''|\"\"\"|'|\")", re.DOTALL)


def exception_names(name: str) -> list[str]:
    """Other exception (or warning) classes in place of the class named ``name`` (the last
    part of a dotted name); a class of the project's own: the builtins it most likely is
    not."""
    if name in BROAD_EXCEPTIONS:
        return []
    if name in _OTHER_EXCEPTION:
        return list(_OTHER_EXCEPTION[name])
    if name.endswith("Warning"):
        return ["RuntimeWarning", "SyntaxWarning"]
    return ["TypeError", "KeyError"]


def number_texts(text: str, value: object) -> list[str]:
    """``3`` -> ``4``, ``2``; ``0x10`` -> ``0x11``; ``1.5`` -> ``2.5`` (the first significant
    digit one up, or down from 9: far beyond any tolerance a test gives a float)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        lowered = text.lower()
        for prefix, fmt in (("0x", "x"), ("0o", "o"), ("0b", "b")):
            if lowered.startswith(prefix):
                return [text[:2] + format(value + delta, fmt) for delta in (1, 2)]
        return [str(value + 1), str(value + 2) if value == 0 else str(value - 1)]
    match = re.search(r"[1-9]", text)
    if match is None:  # 0.0, 0j
        return [re.sub(r"0", "1", text, count=1)]
    i, digit = match.start(), int(match.group())
    news = (digit + 1, digit + 2) if digit < 8 else (digit - 1, digit - 2)
    out = [text[:i] + str(new) + text[i + 1 :] for new in news]
    return [t for t in out if _evaluates_other(t, value)]


def bound_steps(value: float, rng: random.Random | None = None) -> list[float]:
    """How far to move a bound (``< 0`` -> ``< -5``) to make it stricter: several steps in
    the bound's own rounding, small first (which ones the gold value misses, validation
    finds out); with ``rng``, four drawn at random."""
    unit: float = 1
    if isinstance(value, int) and abs(value) >= 10:
        unit = 10 ** (len(str(abs(value))) - len(str(abs(value)).rstrip("0")))
    elif isinstance(value, float) and 0 < abs(value) < 1:
        unit = 10.0 ** math.floor(math.log10(abs(value)))
    pool = [1, 2, 3, 5, 10, 20, 50, 100]
    steps = sorted(rng.sample(pool, 4)) if rng is not None else [1, 2, 10, 100]
    return [step * unit for step in steps]


def bound_text(text: str, value: float, delta: float) -> str | None:
    """The bound written ``text`` moved by ``delta``, in its format (as many decimals)."""
    new = value + delta
    if isinstance(value, int) and not isinstance(delta, float):
        return str(new)
    if "e" in text.lower():
        return f"{new:g}" if float(f"{new:g}") != value else None
    mantissa = text.lower().lstrip("-").split("e")[0]
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 1
    out = f"{new:.{max(decimals, 1)}f}"
    return out if float(out) != value else None


def _evaluates_other(text: str, value: object) -> bool:
    try:
        return bool(ast.literal_eval(text) != value)
    except (ValueError, SyntaxError):
        return False


def _changed_letter(char: str) -> str:
    if char.isdigit():
        return str((int(char) + 1) % 10)
    if not char.isascii():
        return next((c for c in (chr(ord(char) + 1), chr(ord(char) - 1)) if c.isalpha()), "x")
    lower = char.lower()
    new = "a" if lower == "z" else chr(ord(lower) + 1) if "a" <= lower < "z" else "x"
    if new in "aeiou" and lower not in "aeiou":  # keep consonant for consonant: reads as a typo
        new = chr(ord(new) + 1)
    return new.upper() if char.isupper() else new


def body_positions(body: str, *, formatted: bool, regex: bool) -> list[int]:
    """Offsets in a string token's body of the characters that may change: ASCII letters and
    digits that are plain text (not an escape's letter, not inside an f-string's braces, not
    inside a regex's ``[...]`` / ``{m,n}`` or after its backslash)."""
    positions = []
    depth = 0
    escaped = False
    in_class = False
    for i, char in enumerate(body):
        if escaped:
            escaped = False
            continue
        if char == "\\":
            escaped = True
            continue
        if formatted and char in "{}":
            if i + 1 < len(body) and body[i + 1] == char and depth == 0:
                escaped = True  # {{ or }}
                continue
            depth += 1 if char == "{" else -1
            continue
        if depth > 0:
            continue
        in_class = regex and (char == "[" or (in_class and char != "]"))
        if not in_class and (char in _PLAIN or (not char.isascii() and char.isalpha())):
            positions.append(i)
    if regex:  # not a quantifier's digits ({2}) and not a letter right after a backslash
        positions = [i for i in positions if not body[i].isdigit()]
    return positions


def _word_middle_order(body: str, positions: list[int]) -> list[int]:
    """Positions ordered so that the first is a letter inside the longest word near the
    middle of the text: a change there reads as an ordinary typo fix."""
    letters = [i for i in positions if body[i].isalpha()]
    pool = letters or positions
    if not pool:
        return []
    words: list[list[int]] = []
    for i in pool:
        if words and words[-1][-1] == i - 1:
            words[-1].append(i)
        else:
            words.append([i])
    best = max(words, key=len)
    middle = best[len(best) // 2]
    rest = sorted(pool, key=lambda i: (abs(i - len(body) // 2), i))
    last = pool[-1]
    return list(dict.fromkeys([middle, last, *rest]))


def string_texts(text: str, *, regex: bool = False, limit: int = 2) -> list[str]:
    """A string literal's source (``'abc'``, ``r"x\\d"``, ``f"{a}b"``, ``b'x'``, implicitly
    concatenated pieces: each piece is a token) with one plain letter changed, the one in
    the middle of its longest word first; an empty string gets one letter. ``regex``: the
    text is a pattern (``match=``), its classes and escapes stay."""
    pieces = list(string_pieces(text))
    if not pieces:
        return []
    out: list[str] = []
    for prefix, body_start, body_end in pieces:
        body = text[body_start:body_end]
        formatted = "f" in prefix.lower()
        positions = body_positions(body, formatted=formatted, regex=regex)
        for i in _word_middle_order(body, positions):
            j = body_start + i
            out.append(text[:j] + _changed_letter(text[j]) + text[j + 1 :])
    if not out:
        for prefix, body_start, body_end in pieces:
            if "f" not in prefix.lower() and body_start == body_end:
                out.append(text[:body_start] + "x" + text[body_end:])
                break
    original = literal(text)
    kept = [t for t in dict.fromkeys(out) if original is None or literal(t) != original]
    return kept[:limit]


def literal(text: str) -> object:
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return None


def string_pieces(text: str) -> list[tuple[str, int, int]]:
    """Each string token of ``text``: (prefix, body start, body end)."""
    pieces = []
    i = 0
    while i < len(text):
        if text[i] in " \t\r\n\\(":
            i += 1
            continue
        if text[i] == "#":
            newline = text.find("\n", i)
            i = len(text) if newline < 0 else newline
            continue
        match = _STRING_TOKEN.match(text, i)
        if match is None or len(match["prefix"]) > 2:
            return []
        quote = match["quote"]
        body_start = match.end()
        j = body_start
        while True:
            if j >= len(text):
                return []
            if text[j] == "\\":
                j += 2
                continue
            if text.startswith(quote, j):
                break
            j += 1
        pieces.append((match["prefix"], body_start, j))
        i = j + len(quote)
    return pieces


def bool_texts(text: str) -> list[str]:
    return {"True": ["False"], "False": ["True"]}.get(text, [])


def empty_container_texts(text: str) -> list[str]:
    """``[]`` -> ``[0]``, ``()`` -> ``(0,)``, ``{}`` -> ``{0: 0}``, ``set()`` -> ``{0}``."""
    compact = re.sub(r"\s", "", text)
    return {
        "[]": ["[0]"],
        "()": ["(0,)"],
        "{}": ["{0: 0}"],
        "set()": ["{0}"],
        "list()": ["[0]"],
        "tuple()": ["(0,)"],
        "dict()": ["{0: 0}"],
    }.get(compact, [])


# names whose value a test compares against, and a name of the same kind with another value
_OTHER_NAME = {
    "int": "float", "float": "int", "complex": "float", "str": "bytes", "bytes": "str",
    "bool": "int", "object": "float", "list": "tuple", "tuple": "list", "dict": "list",
    "set": "list", "frozenset": "set",
    # sympy's singletons
    "S.Integers": "S.Reals", "S.Reals": "S.Integers", "S.Naturals": "S.Integers",
    "S.Naturals0": "S.Naturals", "S.Complexes": "S.Reals", "S.Rationals": "S.Reals",
    "S.EmptySet": "S.UniversalSet", "S.UniversalSet": "S.EmptySet", "S.Zero": "S.One",
    "S.One": "S.Zero", "S.NegativeOne": "S.One", "S.Half": "S.One", "S.true": "S.false",
    "S.false": "S.true", "S.Infinity": "S.NegativeInfinity",
    "S.NegativeInfinity": "S.Infinity", "S.ComplexInfinity": "S.Infinity",
    # pytest's exit codes
    "ExitCode.OK": "ExitCode.TESTS_FAILED", "ExitCode.TESTS_FAILED": "ExitCode.OK",
    "ExitCode.INTERRUPTED": "ExitCode.OK", "ExitCode.INTERNAL_ERROR": "ExitCode.OK",
    "ExitCode.USAGE_ERROR": "ExitCode.OK", "ExitCode.NO_TESTS_COLLECTED": "ExitCode.OK",
    # singletons compared with ``is``
    "NotImplemented": "None", "S.NaN": "S.Zero",
}  # fmt: skip
_DTYPE = re.compile(
    r"^(?P<module>np|numpy)\.(?P<kind>u?int|float|complex)(?P<bits>8|16|32|64|128)$"
)


def name_texts(text: str) -> list[str]:
    """Another name of the same kind: a builtin type (``int`` -> ``float``), a numpy dtype
    (``np.float64`` -> ``np.float32``), a sympy singleton (``S.Integers`` -> ``S.Reals``),
    a pytest exit code."""
    if text in _OTHER_NAME:
        return [_OTHER_NAME[text]]
    if match := _DTYPE.match(text):
        bits = {"8": "16", "16": "32", "32": "64", "64": "32", "128": "64"}[match["bits"]]
        return [f"{match['module']}.{match['kind']}{bits}"]
    return []


def is_named_value(text: str) -> bool:
    return text in _OTHER_NAME or _DTYPE.match(text) is not None
