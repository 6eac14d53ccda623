"""Changed expected values that read like the original: drawn from the test files' own
literals and words, or the original moved by a random offset rounded as the original is, at
a random place. Nothing here is a rule a reader of the source can invert: each value is one
draw of ``rng`` (``random.SystemRandom`` unless a test gives another), among values of the
file itself. Pure but for the draws: a token's source text in, candidate texts out, each in
the token's own style (quotes, prefix, number format) and each differing in value from the
original (checked where Python can evaluate it)."""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from orchestrator.grading.twins import mutate

WORD = re.compile(r"[A-Za-z]{2,}")
_IDENTIFIER_PART = re.compile(r"[A-Za-z][a-z]+|[A-Z]{2,}(?![a-z])")
_EXCEPTION = re.compile(r"^[A-Z]\w*(Error|Exception|Warning)$")
# a literal a pattern (``match=``) may take whole: no character with a meaning in a regex
_REGEX_PLAIN = re.compile(r"^[\w ,:'\"-]*$")
_FLOAT_TEXT = re.compile(r"^(?P<mantissa>\d*\.?\d*)(?P<exponent>[eE][+-]?\d+)?$")


@dataclass
class Vocabulary:
    """What the test files hold: their literals by type and their words (in strings and in
    names), each as often as it occurs."""

    ints: list[int] = field(default_factory=list)
    floats: list[str] = field(default_factory=list)
    strings: list[str] = field(default_factory=list)
    words: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)
    exceptions: set[str] = field(default_factory=set)

    @classmethod
    def of(
        cls, trees: Iterable[ast.AST | None], texts: Mapping[int, str] | None = None
    ) -> Vocabulary:
        """The vocabulary of parsed files; ``texts``: a float constant's node id -> its source
        text (so ``1.50`` stays ``1.50``)."""
        found = cls()
        for tree in trees:
            if tree is None:
                continue
            for node in ast.walk(tree):
                found._add(node, texts or {})
        return found

    def _add(self, node: ast.AST, texts: Mapping[int, str]) -> None:
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool) or value is None:
                return
            if isinstance(value, int):
                self.ints.append(value)
            elif isinstance(value, float) and id(node) in texts:
                self.floats.append(texts[id(node)])
            elif isinstance(value, str):
                self.strings.append(value)
                self.words.update(WORD.findall(value))
        elif isinstance(node, ast.Name | ast.Attribute | ast.FunctionDef | ast.ClassDef):
            name = (
                node.id if isinstance(node, ast.Name)
                else node.attr if isinstance(node, ast.Attribute) else node.name
            )  # fmt: skip
            if _EXCEPTION.match(name) and name not in mutate.BROAD_EXCEPTIONS:
                self.exceptions.add(name)
            self.names.update(p for p in _IDENTIFIER_PART.findall(name) if len(p) > 2)


@dataclass
class Natural:
    """Draws natural twin values from a vocabulary with ``rng``."""

    vocabulary: Vocabulary
    rng: random.Random
    limit: int = 6

    def string_texts(
        self, text: str, *, regex: bool = False, around: Iterable[str] = ()
    ) -> list[str]:
        """Another literal of the file of the same shape, or the original with one word
        replaced by another word of the file (one of ``around``, the words of the call's
        own arguments, as often as not)."""
        original = _literal(text)
        pieces = mutate.string_pieces(text)
        if not pieces:
            return []
        out: list[str] = []
        whole = len(pieces) == 1 and "f" not in pieces[0][0].lower()
        swaps = self._literal_swaps(text, original, regex=regex) if whole else []
        words = self._word_swaps(text, pieces, regex=regex, around=list(around))
        while (swaps or words) and len(out) < self.limit * 2:
            pool = swaps if swaps and (not words or self.rng.random() < 0.5) else words
            out.append(pool.pop(0))
        kept = [t for t in dict.fromkeys(out) if original is None or _literal(t) != original]
        return kept[: self.limit]

    def _literal_swaps(self, text: str, original: object, *, regex: bool) -> list[str]:
        if not isinstance(original, str):
            return []
        prefix, start, end = mutate.string_pieces(text)[0]
        quote = text[end:]
        fits = [
            s for s in set(self.vocabulary.strings)
            if s != original and _same_shape(s, original)
            and (not regex or _REGEX_PLAIN.match(s)) and (original not in s)
        ]  # fmt: skip
        fits.sort()
        self.rng.shuffle(fits)
        out = []
        for value in fits:
            body = _quoted(value, quote, raw="r" in prefix.lower())
            if body is not None:
                candidate = text[:start] + body + quote
                if _literal(candidate) == value:
                    out.append(candidate)
            if len(out) >= self.limit:
                break
        return out

    def _word_swaps(
        self, text: str, pieces: list[tuple[str, int, int]], *, regex: bool, around: list[str]
    ) -> list[str]:
        places: list[tuple[int, int]] = []
        for prefix, start, end in pieces:
            body = text[start:end]
            plain = set(mutate.body_positions(body, formatted="f" in prefix.lower(), regex=regex))
            for match in WORD.finditer(body):
                if all(i in plain for i in range(match.start(), match.end())):
                    places.append((start + match.start(), start + match.end()))
        self.rng.shuffle(places)
        out: list[str] = []
        for begin, finish in places * self.limit:
            word = text[begin:finish]
            if text[begin - 1 : begin] == "\\":  # the letter of an escape (``\\n``)
                continue
            others = [w for w in _styled(around, word) if w != word]
            pool = others if others and self.rng.random() < 0.5 else []
            pool = pool or [w for w in _styled(self.vocabulary.words, word) if w != word]
            pool = pool or [w for w in _styled(self.vocabulary.names, word) if w != word]
            if not pool:
                continue
            near = [w for w in pool if abs(len(w) - len(word)) <= 1]  # as long, where enough
            if len(near) < 3:
                near = [w for w in pool if abs(len(w) - len(word)) <= 3] or pool
            new = self.rng.choice(sorted(near))
            out.append(text[:begin] + new + text[finish:])
        if len({text[a:b] for a, b in places}) > 1 and self.rng.random() < 0.5:
            out.insert(self.rng.randrange(len(out) + 1), _transposed(text, places, self.rng))
        return list(dict.fromkeys(out))

    def int_texts(self, text: str, value: int) -> list[str]:
        """Another int literal of the file of the same magnitude and roundness, or the
        original moved by a random multiple of its own rounding (``100`` -> ``300``, ``37``
        -> ``34``), in the token's format (``0x``, ``_``)."""
        lowered = text.lower()
        base = next(
            (b for p, b in (("0x", "x"), ("0o", "o"), ("0b", "b")) if lowered.startswith(p)), ""
        )
        unit = 10 ** _zeros(value) if not base and abs(value) >= 10 else 1
        values: list[int] = []
        fits: list[int] = []
        if not base:
            fits = sorted(
                {v for v in self.vocabulary.ints if v != value and _similar(v, value)
                 and (abs(value) < 10 or _zeros(v) == _zeros(value))}
            )  # fmt: skip
            self.rng.shuffle(fits)
        steps = list(range(1, 4 if abs(value) < 10 else 5 if unit > 1 else 10))
        self.rng.shuffle(steps)
        for step in steps:
            sign = self.rng.choice((1, -1))
            for moved in (value + sign * step * unit, value - sign * step * unit):
                same_sign = moved > 0 if value >= 0 else moved < 0
                if same_sign and (abs(value) < 10 or _zeros(moved) == _zeros(value)):
                    values.append(moved)
                    break
        if not base:
            values = _interleave(fits[:2], values, self.rng)
        out = []
        for new in dict.fromkeys(values):
            if new == value:
                continue
            if base:
                digits = format(abs(new), base)
                width = len(text) - 2
                out.append(text[:2] + (digits.zfill(width) if text[2:3] == "0" else digits))
            elif "_" in text:
                out.append(f"{new:_}")
            else:
                out.append(str(new))
        return out[: self.limit]

    def float_texts(self, text: str, value: float) -> list[str]:
        """Another float literal of the file of the same magnitude and decimals, or one of
        the original's first significant digits changed at random (far beyond the tolerance
        of any test that states the value this way)."""
        match = _FLOAT_TEXT.match(text)
        if match is None:
            return mutate.number_texts(text, value)
        out: list[str] = []
        decimals = _decimals(text)
        fits = sorted(
            {t for t in self.vocabulary.floats if _decimals(t) == decimals
             and _float(t) not in (None, value) and _similar_float(_float(t), value)}
        )  # fmt: skip
        self.rng.shuffle(fits)
        out.extend(fits[:2])
        mantissa = match["mantissa"]
        digits = [i for i, c in enumerate(mantissa) if c.isdigit()]
        significant = [
            i
            for i in digits
            if mantissa[i] != "0" or any(mantissa[j] not in "0." for j in range(i))
        ]
        places = significant[:2] if len(significant) > 2 else significant or digits[-1:]
        for _ in range(self.limit * 2):
            i = self.rng.choice(places)
            choices = [d for d in "0123456789" if d != mantissa[i]]
            if i == (significant or digits)[0] and len(significant) > 1:
                choices = [d for d in choices if d != "0"]
            new = mantissa[:i] + self.rng.choice(choices) + mantissa[i + 1 :]
            out.append(new + (match["exponent"] or ""))
        kept = [t for t in dict.fromkeys(out) if _float(t) is not None and _float(t) != value]
        self.rng.shuffle(kept)
        return kept[: self.limit]

    def container_texts(self, text: str, quote: str = "'") -> list[str]:
        """An empty container given one element, a short literal of the file (``[]`` ->
        ``['setup']``, ``{}`` -> ``{'name': 2}``), its strings in ``quote``."""
        shapes = {"[]": "[{}]", "()": "({},)", "set()": "{{{}}}", "list()": "[{}]",
                  "tuple()": "({},)", "{}": "{{{}: {}}}", "dict()": "{{{}: {}}}"}  # fmt: skip
        shape = shapes.get(re.sub(r"\s", "", text))
        if shape is None:
            return []
        words = sorted({s for s in self.vocabulary.strings if s.isidentifier() and len(s) < 20})
        small = sorted({i for i in self.vocabulary.ints if 0 <= i < 100})
        pool = [f"{quote}{w}{quote}" for w in words] + [str(i) for i in small]
        if not pool:
            return []
        out = []
        for _ in range(self.limit):
            out.append(shape.format(self.rng.choice(pool), self.rng.choice(small or [1])))
        return list(dict.fromkeys(out))

    def exception_texts(self, name: str) -> list[str]:
        """Other exception classes: those the file itself names and the builtins beside the
        one expected, in random order."""
        fallback = mutate.exception_names(name)
        if not fallback:
            return []
        kind = "Warning" if name.endswith("Warning") else "Error"
        own = sorted(e for e in self.vocabulary.exceptions if e != name and e.endswith(kind))
        pool = list(dict.fromkeys([*own, *fallback]))
        self.rng.shuffle(pool)
        return pool[: self.limit]


def _transposed(text: str, places: list[tuple[int, int]], rng: random.Random) -> str:
    """``text`` with two of its different words at ``places`` swapped (``hello-world`` ->
    ``world-hello``)."""
    first = rng.choice(places)
    second = rng.choice([p for p in places if text[p[0] : p[1]] != text[first[0] : first[1]]])
    (a, b), (c, d) = sorted([first, second])
    return text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]


def _interleave(first: list[int], second: list[int], rng: random.Random) -> list[int]:
    """The two lists' items taken in turn, from a list drawn at random each time."""
    first, second, out = list(first), list(second), []
    while first or second:
        pool = first if first and (not second or rng.random() < 0.5) else second
        out.append(pool.pop(0))
    return out


def _literal(text: str) -> object:
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _shape(value: str) -> tuple[object, ...]:
    """What a reader sees of a string at a glance: its case, its kinds of characters, the
    punctuation it holds."""
    case = (
        "upper" if value.isupper() else "lower" if value.islower()
        else "title" if value[:1].isupper() else "other"
    )  # fmt: skip
    marks = frozenset(c for c in value if not c.isalnum() and c != " ")
    return (case, " " in value, "\n" in value, value.isascii(), any(c.isdigit() for c in value),
            len(marks) > 2 or marks)  # fmt: skip


def _same_shape(other: str, value: str) -> bool:
    if not other or not value:
        return False
    if _shape(other) != _shape(value):
        return False
    if value.isidentifier() != other.isidentifier():
        return False
    return len(value) / 2 - 1 <= len(other) <= len(value) * 2 + 1


def _quoted(value: str, quote: str, *, raw: bool) -> str | None:
    """``value`` as the body of a string token closed by ``quote``; None where it cannot
    be written so."""
    if raw:
        if "\\" in value or quote in value or (len(quote) == 1 and "\n" in value):
            return None
        return value
    body = value.replace("\\", "\\\\").replace(quote[0], "\\" + quote[0])
    if len(quote) == 1:
        body = body.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return body


def _styled(words: Iterable[str], like: str) -> list[str]:
    """The words written in the case of ``like`` (``Value``, ``VALUE``, ``value``)."""
    out = set()
    for word in words:
        if not word.isalpha() or not word.isascii():
            continue
        if like.isupper():
            out.add(word.upper())
        elif like[:1].isupper():
            out.add(word[:1].upper() + word[1:].lower())
        elif like.islower():
            out.add(word.lower())
    return sorted(out)


def _zeros(value: int) -> int:
    """How many zeros end ``value`` (0 for 0)."""
    count, value = 0, abs(value)
    while value and value % 10 == 0:
        count, value = count + 1, value // 10
    return count


def _similar(other: int, value: int) -> bool:
    if (other < 0) != (value < 0):
        return False
    a, b = abs(other), abs(value)
    if b < 10:
        return a < 10
    return b / 3 <= a <= b * 3


def _similar_float(other: float | None, value: float) -> bool:
    if other is None or (other < 0) != (value < 0):
        return False
    a, b = abs(other), abs(value)
    return b / 4 <= a <= b * 4 if b else a <= 1


def _decimals(text: str) -> int:
    mantissa = text.lower().split("e")[0]
    return len(mantissa.split(".")[1]) if "." in mantissa else -1


def _float(text: str) -> float | None:
    value = _literal(text)
    return float(value) if isinstance(value, float) else None
