"""Do two texts about the same thing contradict each other? Figures (numbers, dates) and polarity.

Wherever near-duplicate texts would be merged into one, this check keeps apart the pairs that look alike
but say different things: the ACE curator's grow-and-refine (an ADD that says the opposite of the bullet
it resembles stays a separate bullet) and the reflector's figure check use it, and any de-duplication of
evidence can. It assumes the texts are already known to be about the same thing (a near-duplicate test
chose them), so it looks only at what differs between them:

- **Figures.** Each text's quantities: numbers (Arabic or full-width digits, `1,000`, decimals, `3万`,
  kanji numerals before a counter as in 三百三十三メートル, English number words) with their unit, and
  dates. Two texts contradict when each states a figure the other lacks, of the same kind and with
  compatible units (the same unit, or one of them without a unit): `334メートル` vs `333メートル`, "retry
  3 times" vs "retry 5 times", 5月 vs 6月. A text that only adds figures ("retry 3 times, 2 s apart")
  refines the other; it does not contradict it. List numbering (`(1)`, `1.` in a numbered run, ①,
  "step 2"), bullet ids and citations (`[shr-00001]`, `api-00042`), versions (`2.5.1`) and identifiers
  with digits (`page_index2`, `gpt-4o`) are labels, not figures.
- **Polarity.** Both texts are cut into clauses, and each clause is paired with the clause of the other
  text that shares the most content words. A pair contradicts when the two clauses use the same pair
  of opposites on different sides (enable / disable, 許可 / 禁止, ascending / descending), or, when they
  share no such pair, when one is negated and the other is not (never / not / don't / avoid, ない /
  しない / 禁止 / せず). Negations are counted, so "do not forget to paginate" agrees with "always
  paginate" and "disable X" with "do not enable X".

The cue words are data (`contradiction_cues.yaml`), in English and Japanese.
"""

from __future__ import annotations

import heapq
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from importlib import resources
from typing import Literal

import yaml

from graphs.text.tokenize import is_function_token, tokenize

FigureKind = Literal["number", "date"]
BareUnits = Literal["either", "second"]

ALIGN_MIN = 0.25
"""Content-token Jaccard at which two clauses count as saying something about the same thing."""

_CIRCLED = re.compile("[\u2460-\u24ff\u2776-\u2793\u3251-\u325f\u32b1-\u32bf]")
"""①–⑳, ⑴, ⒈, ⓵, ❶, ㉑ …: enumeration marks (NFKC would turn them into plain digits)."""
_CITATION = re.compile(r"\[[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}\]")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_PAREN_NUMBER = re.compile(r"[(\[]\d{1,2}[)\]]")
_RUN_MARKER = re.compile(r"(?:(?<=^)|(?<=[\s:;,、。]))(\d{1,2})[.)](?=\s|$)", re.MULTILINE)
_LABEL = re.compile(
    r"\b(?:steps?|phases?|stages?|parts?|items?|rules?|cases?|options?|tips?|no\.?|nos\.?|#)\s*\d+(?:\s*[-–~]\s*\d+)?"
    r"|#\s*\d+|第\s*\d+|(?:手順|ステップ|項目|ルール|ケース)\s*\d+",
)
_TIME = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?::(\d{2}))?(?![\d:])")
_ISO_DATE = re.compile(r"(?<![\d.])(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?![\d.])")
_JA_DATE = re.compile(r"(?<!\d)(?:(\d{4})年)?(\d{1,2})月(?:(\d{1,2})日)?|(?<!\d)(\d{4})年(?!間)")
_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_EN_DATE = re.compile(
    rf"\b(?P<m1>{_MONTH_NAMES})\.?\s+(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(?P<y1>\d{{4}}))?\b"
    rf"|\b(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<m2>{_MONTH_NAMES})\.?(?:,?\s+(?P<y2>\d{{4}}))?\b"
    rf"|\b(?P<m3>{_MONTH_NAMES})\.?,?\s+(?P<y3>\d{{4}})\b"
)
_NUMBER = re.compile(
    r"(?<![a-z_\d.#])(?<![a-z_][-:/])(?P<int>\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.(?P<frac>\d+))?(?![\d])(?!\.\d)"
    r"(?P<mult>\s?(?:thousand|million|billion|[万億兆千]|k\b))?"
)
_KANJI_DIGITS = {"〇": 0, "零": 0, "一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_KANJI_SMALL = {"十": 10, "百": 100, "千": 1000}
_KANJI_LARGE = {"万": 10**4, "億": 10**8, "兆": 10**12}
_KANJI_NUMBER = re.compile("[〇零一二三四五六七八九十百千万億兆]+")
_MULTIPLIERS = {"thousand": 1000, "million": 10**6, "billion": 10**9, "k": 1000, "千": 1000} | _KANJI_LARGE
_NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        [
            *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
            *("eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen"),
            *("nineteen", "twenty"),
        ]
    )
} | {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_NUMBER_WORD = re.compile(r"\b(?P<word>[a-z]+)\b(?:\s+(?P<scale>hundred|thousand|million)\b)?")
_TIMES_WORDS = {"once": 1, "twice": 2, "thrice": 3}
_ASCII_UNIT = re.compile(r"\s?(?P<unit>%|[a-z]+)")
_KATAKANA_UNIT = re.compile("[\u30a1-\u30fa\u30fc]+")
_EN_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_JA_ZU = re.compile(r"(?<=[\u3040-\u309f\u4e00-\u9fff])ず(?![つっー])")
_CLAUSE_BREAK = re.compile(r"[,;:.!?\n、。，．；：！？]+|\s(?:but|however|although|whereas|while|yet)\s")
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")


@dataclass(frozen=True)
class Figure:
    """A quantity a text states: a number with its unit, or a date."""

    kind: FigureKind
    value: str
    """Canonical: `1000` for 1,000 / 千 / one thousand; `2024-05-01`, `-5-`, `t10:30` for dates and times."""
    unit: str
    """What follows the number (`メートル`, `song`, `%`), singular; empty when nothing does (and for dates)."""
    text: str
    """As written (normalised), for messages."""

    @property
    def key(self) -> tuple[FigureKind, str]:
        """What two figures must share to be the same figure."""
        return self.kind, self.value


@dataclass(frozen=True)
class Contradiction:
    """Why two texts disagree: `kind` is `figures` or `polarity`, `detail` shows the differing parts."""

    kind: Literal["figures", "polarity"]
    detail: str


@dataclass(frozen=True)
class _Cue:
    negation: bool
    sides: tuple[tuple[int, int], ...]
    """(pair index, side) for every pair of opposites the word belongs to."""


@dataclass(frozen=True)
class _Cues:
    english: dict[str, _Cue]
    japanese: dict[str, _Cue]
    japanese_pattern: re.Pattern[str]
    neutral_english: re.Pattern[str]
    neutral_japanese: re.Pattern[str]
    counters: re.Pattern[str]


def _inflections(word: str) -> set[str]:
    forms = {word, f"{word}s", f"{word}es", f"{word}ed", f"{word}d", f"{word}ing"}
    if word.endswith("e"):
        forms.add(f"{word[:-1]}ing")
    if word.endswith("y"):
        forms |= {f"{word[:-1]}ies", f"{word[:-1]}ied"}
    if len(word) >= 3 and word[-1] not in "aeiouwy" and word[-2] in "aeiou" and word[-3] not in "aeiou":
        forms |= {f"{word}{word[-1]}ed", f"{word}{word[-1]}ing"}  # skip → skipped, drop → dropping
    return forms


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))


@lru_cache(maxsize=1)
def _cues() -> _Cues:
    """Load `contradiction_cues.yaml` once per process."""
    raw = yaml.safe_load(resources.files(__package__).joinpath("contradiction_cues.yaml").read_text(encoding="utf-8"))
    _only_strings(raw)
    norm = _normalise
    sides: dict[str, set[tuple[int, int]]] = {}
    for index, pair in enumerate(raw["opposites"]):
        for side, words in enumerate(pair):
            for word in words:
                sides.setdefault(norm(word), set()).add((index, side))
    negations = {norm(w) for lang in ("en", "ja") for w in raw["negation"][lang]}

    def cue(word: str) -> _Cue:
        return _Cue(negation=word in negations, sides=tuple(sorted(sides.get(word, ()))))

    vocabulary = negations | set(sides)
    english: dict[str, _Cue] = {}
    japanese: dict[str, _Cue] = {}
    for word in vocabulary:
        if _JAPANESE.search(word):
            japanese[word] = cue(word)
        elif word != "n't":
            for form in _inflections(word):
                english.setdefault(form, cue(word))
    neutral_en = [norm(p) for p in raw["neutral"]["en"]]
    neutral_ja = [norm(p) for p in raw["neutral"]["ja"]]
    return _Cues(
        english=english,
        japanese=japanese,
        japanese_pattern=re.compile(_alternation(japanese)),
        neutral_english=re.compile(rf"\b(?:{_alternation(neutral_en)})\b"),
        neutral_japanese=re.compile(_alternation(neutral_ja)),
        counters=re.compile(rf"(?:{_alternation(norm(c) for c in raw['counters_ja'])})"),
    )


def _only_strings(node: object, where: str = "contradiction_cues.yaml") -> None:
    """Every cue is text: YAML reads a bare `no`, `on` or `true` as a boolean, which must be quoted."""
    if isinstance(node, dict):
        for key, value in node.items():
            _only_strings(value, f"{where}: {key}")
    elif isinstance(node, list):
        for item in node:
            _only_strings(item, where)
    elif not isinstance(node, str):
        raise TypeError(f"{where}: cue {node!r} is not a string (quote it)")


def _normalise(text: str) -> str:
    """NFKC and case folding, keeping line breaks (list markers and clauses need them)."""
    text = unicodedata.normalize("NFKC", text.translate(_APOSTROPHES)).casefold()
    return unicodedata.normalize("NFKC", text)


# --- figures --------------------------------------------------------------------------------------------


def figures(text: str) -> list[Figure]:
    """The figures `text` states, in order (see the module docstring for what counts)."""
    return list(_figures(text))


@lru_cache(maxsize=512)
def _figures(text: str) -> tuple[Figure, ...]:
    """`figures`, parsed once per text (bounded cache), as `_clauses` is.

    Callers compare one text against many: a candidate's snippet against each later near-duplicate hit, a
    selected snippet against the others.
    """
    cleaned = _normalise(_CIRCLED.sub(" ", _CITATION.sub(" ", text)))
    masked = _mask_labels(cleaned)
    found: list[tuple[int, Figure]] = []
    for pattern, reader in ((_ISO_DATE, _iso_date), (_JA_DATE, _ja_date), (_EN_DATE, _en_date), (_TIME, _time)):
        found.extend((match.start(), reader(match)) for match in pattern.finditer(masked))
        masked = pattern.sub(lambda m: " " * len(m.group()), masked)
    for match in _NUMBER.finditer(masked):
        value = _decimal(match.group("int").replace(",", ""), match.group("frac"))
        multiplier = (match.group("mult") or "").strip()
        if multiplier:
            value *= _MULTIPLIERS[multiplier]
        unit, unit_end = _unit_after(masked, match.end())
        found.append((match.start(), Figure("number", _canonical(value), unit, masked[match.start() : unit_end])))
    masked = _NUMBER.sub(lambda m: " " * len(m.group()), masked)  # 3万 is one figure, not 3 and 万
    for match in _KANJI_NUMBER.finditer(masked):
        figure = _kanji_figure(masked, match)
        if figure is not None:
            found.append((match.start(), figure))
    for match in _NUMBER_WORD.finditer(masked):
        figure = _word_figure(masked, match)
        if figure is not None:
            found.append((match.start(), figure))
    return tuple(figure for _, figure in sorted(found, key=lambda item: item[0]))


def _mask_labels(text: str) -> str:
    """Blank out numbering: (1), step 2, 第3, and `1.` / `2)` markers when they form a run from 1."""
    blank = lambda m: " " * len(m.group())  # noqa: E731 - a one-line substitution callback
    text = _LABEL.sub(blank, _PAREN_NUMBER.sub(blank, text))
    markers = list(_RUN_MARKER.finditer(text))
    numbers = [int(m.group(1)) for m in markers]
    if numbers and ((numbers[0] == 1 and len(numbers) > 1) or any(m.start() == 0 for m in markers)):
        chars = list(text)
        for marker in markers:
            chars[marker.start() : marker.end()] = " " * (marker.end() - marker.start())
        text = "".join(chars)
    return text


def _decimal(integer: str, fraction: str | None) -> Decimal:
    try:
        return Decimal(f"{integer}.{fraction}" if fraction else integer)
    except InvalidOperation:  # pragma: no cover - the pattern only passes digits
        return Decimal(0)


def _canonical(value: Decimal | int) -> str:
    return format(Decimal(value).normalize(), "f")


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def _unit_after(text: str, end: int) -> tuple[str, int]:
    """The unit right after a number (a Japanese counter, a katakana word, `%` or an English word) and where it ends."""
    rest = text[end:]
    stripped = rest.lstrip(" ")
    gap = len(rest) - len(stripped)
    if gap > 1:
        return "", end
    katakana = _KATAKANA_UNIT.match(stripped)
    if katakana:
        return katakana.group(), end + gap + katakana.end()
    counter = _cues().counters.match(stripped)
    if counter:
        return counter.group(), end + gap + counter.end()
    ascii_unit = _ASCII_UNIT.match(rest)
    if ascii_unit is None:
        return "", end
    word = ascii_unit.group("unit")
    if word != "%" and is_function_token(word):
        return "", end
    return (word if word == "%" else _singular(word)), end + ascii_unit.end()


def _kanji_value(numeral: str) -> int:
    """三百三十三 → 333, 二千 → 2000, 一万五千 → 15000, 二〇二四 → 2024."""
    total = section = digit = 0
    seen_digit = False
    for char in numeral:
        if char in _KANJI_DIGITS:
            digit = digit * 10 + _KANJI_DIGITS[char] if seen_digit else _KANJI_DIGITS[char]
            seen_digit = True
        elif char in _KANJI_SMALL:
            section += (digit if seen_digit else 1) * _KANJI_SMALL[char]
            digit, seen_digit = 0, False
        else:
            total += (section + digit or 1) * _KANJI_LARGE[char]
            section = digit = 0
            seen_digit = False
    return total + section + digit


def _kanji_figure(text: str, match: re.Match[str]) -> Figure | None:
    """A kanji numeral counts only before a counter or a katakana unit (一般, 統一 are words, not figures)."""
    numeral = match.group()
    if numeral == "十" and text.startswith("分", match.end()):
        return None  # 十分: "enough"
    unit, unit_end = _unit_after(text, match.end())
    if not unit or not _JAPANESE.search(unit):
        return None
    return Figure("number", _canonical(_kanji_value(numeral)), unit, text[match.start() : unit_end])


def _word_figure(text: str, match: re.Match[str]) -> Figure | None:
    word = match.group("word")
    if word in _TIMES_WORDS:
        return Figure("number", str(_TIMES_WORDS[word]), "time", word)
    if word not in _NUMBER_WORDS:
        return None
    value = _NUMBER_WORDS[word]
    scale = match.group("scale")
    if scale:
        value *= {"hundred": 100, "thousand": 1000, "million": 10**6}[scale]
    unit, unit_end = _unit_after(text, match.end())
    if word == "one" and not scale and not unit:
        return None  # "the one that", "one of", "one by one": a pronoun, not a count
    return Figure("number", str(value), unit, text[match.start() : unit_end])


def _iso_date(match: re.Match[str]) -> Figure:
    year, month, day = match.groups()
    return Figure("date", f"{int(year):04d}-{int(month):02d}-{int(day):02d}", "", match.group())


def _ja_date(match: re.Match[str]) -> Figure:
    year, month, day, year_only = match.groups()
    if year_only:
        return Figure("date", f"{int(year_only):04d}--", "", match.group())
    value = f"{int(year):04d}" if year else ""
    value += f"-{int(month):02d}-" + (f"{int(day):02d}" if day else "")
    return Figure("date", value, "", match.group())


def _en_date(match: re.Match[str]) -> Figure:
    month = match.group("m1") or match.group("m2") or match.group("m3")
    day = match.group("d1") or match.group("d2")
    year = match.group("y1") or match.group("y2") or match.group("y3")
    value = (f"{int(year):04d}" if year else "") + f"-{_MONTHS[month]:02d}-" + (f"{int(day):02d}" if day else "")
    return Figure("date", value, "", match.group())


def _time(match: re.Match[str]) -> Figure:
    hours, minutes, seconds = match.groups()
    value = f"t{int(hours):02d}:{minutes}" + (f":{seconds}" if seconds else "")
    return Figure("date", value, "", match.group())


def figure_conflicts(
    first: Sequence[Figure], second: Sequence[Figure], *, bare: BareUnits = "either", limit: int | None = None
) -> list[tuple[Figure, Figure]]:
    """Pairs (x from `first`, y from `second`) where each states a figure the other lacks, in the same role.

    Same role: the same kind, and the same unit or a bare number where `bare` allows one (`either` side,
    or only the `second`, e.g. a bare ground truth "333" against a bullet's "300メートル"). One pair per
    pair of figures (kind and value), the first in reading order; at most `limit` of them.

    Work grows with the figures and the pairs returned, not with their product: two texts of 1,500
    numbers each (a table, or a hostile snippet) are not 2 million comparisons. Past `_DIRECT_PAIRS`
    candidate pairs, only one of each figure and unit is paired, and each only with the other side's
    figures of its own kind and a unit it may stand against (`_indexed_conflicts`).
    """
    first_keys = {f.key for f in first}
    second_keys = {f.key for f in second}
    only_first = [f for f in first if f.key not in second_keys]
    only_second = [f for f in second if f.key not in first_keys]
    if len(only_first) * len(only_second) > _DIRECT_PAIRS:
        return _indexed_conflicts(only_first, only_second, bare, limit)
    pairs: dict[tuple[tuple[str, str], tuple[str, str]], tuple[Figure, Figure]] = {}
    for x in only_first:
        for y in only_second:
            if x.kind == y.kind and (x.unit == y.unit or not y.unit or (bare == "either" and not x.unit)):
                pairs.setdefault((x.key, y.key), (x, y))
                if limit is not None and len(pairs) >= limit:
                    return list(pairs.values())
    return list(pairs.values())


MAX_ALIGNED_CLAUSES = 200
"""Clauses of each text aligned at most, each against each: a retrieved snippet or a bullet has a few dozen; a text
of thousands of tiny clauses would otherwise cost millions of Jaccards (0.8 s for two 8,000-character ones; 20 ms
at this bound)."""
_DIRECT_PAIRS = 64
"""Candidate pairs of figures up to which every pair is compared rather than indexed: most texts."""


def _indexed_conflicts(
    only_first: list[Figure], only_second: list[Figure], bare: BareUnits, limit: int | None
) -> list[tuple[Figure, Figure]]:
    """`figure_conflicts` for many figures: the same pairs in the same order, through an index by kind and unit."""
    only_first = _each_once(only_first)
    only_second = _each_once(only_second)
    by_role: dict[tuple[FigureKind, str], list[int]] = {}
    by_kind: dict[FigureKind, list[int]] = {}
    for index, y in enumerate(only_second):
        by_role.setdefault((y.kind, y.unit), []).append(index)
        by_kind.setdefault(y.kind, []).append(index)
    pairs: dict[tuple[tuple[str, str], tuple[str, str]], tuple[Figure, Figure]] = {}
    for x in only_first:
        if not x.unit and bare == "either":
            candidates: Iterable[int] = by_kind.get(x.kind, ())
        else:
            same_unit = by_role.get((x.kind, x.unit), []) if x.unit else []
            candidates = heapq.merge(same_unit, by_role.get((x.kind, ""), []))  # in reading order
        for index in candidates:
            y = only_second[index]
            pairs.setdefault((x.key, y.key), (x, y))
            if limit is not None and len(pairs) >= limit:
                return list(pairs.values())
    return list(pairs.values())


def _each_once(found: list[Figure]) -> list[Figure]:
    """The first of each figure and unit (a later one would pair exactly as the first does)."""
    kept: dict[tuple[FigureKind, str, str], Figure] = {}
    for figure in found:
        kept.setdefault((figure.kind, figure.value, figure.unit), figure)
    return list(kept.values())


# --- polarity -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Clause:
    text: str
    content: frozenset[str]
    negations: int
    sides: dict[int, int]
    """Pair index → side, for pairs the clause uses on one side only."""
    negation_words: tuple[tuple[str, tuple[int, ...]], ...]
    """Each negation cue, with the pairs of opposites it also belongs to (禁止, forbid, avoid)."""


@lru_cache(maxsize=512)
def _clauses(text: str) -> tuple[_Clause, ...]:
    """The text's clauses, parsed once per text (bounded cache).

    Callers compare one text against many (a ground truth against every used bullet, a snippet against
    its neighbours), and parsing is most of the cost.
    """
    normalised = _normalise(_CITATION.sub(" ", text))
    return tuple(clause for part in _CLAUSE_BREAK.split(normalised) if (clause := _clause(part.strip())) is not None)


def _cue_spans(text: str, cues: _Cues) -> list[tuple[int, int, _Cue]]:
    """Where each negation or opposite-pair cue sits in `text`: English words (any `n't`), Japanese cues, `〜ず`."""
    spans: list[tuple[int, int, _Cue]] = []
    for match in _EN_WORD.finditer(text):
        word = match.group()
        cue = cues.english.get(word)
        if word.endswith("n't"):
            cue = _Cue(negation=True, sides=cue.sides if cue else ())
        if cue is not None:
            spans.append((match.start(), match.end(), cue))
    spans.extend((m.start(), m.end(), cues.japanese[m.group()]) for m in cues.japanese_pattern.finditer(text))
    for match in _JA_ZU.finditer(text):
        if not any(start <= match.start() < end for start, end, _ in spans):  # せず is a listed cue already
            spans.append((match.start(), match.end(), _Cue(negation=True, sides=())))
    return spans


def _clause(text: str) -> _Clause | None:
    if not text:
        return None
    cues = _cues()
    neutral = [m.span() for m in cues.neutral_english.finditer(text)]
    neutral += [m.span() for m in cues.neutral_japanese.finditer(text)]
    masked = list(text)
    negation_words: list[tuple[str, tuple[int, ...]]] = []
    by_pair: dict[int, set[int]] = {}
    for start, end, cue in _cue_spans(text, cues):
        masked[start:end] = " " * (end - start)
        in_neutral = any(n_start <= start and end <= n_end for n_start, n_end in neutral)
        if cue.negation and not in_neutral:
            negation_words.append((text[start:end], tuple(index for index, _ in cue.sides)))
        for index, side in cue.sides:
            by_pair.setdefault(index, set()).add(side)
    content = frozenset(t for t in tokenize("".join(masked)) if not is_function_token(t))
    if not content:
        return None
    sides = {index: next(iter(found)) for index, found in by_pair.items() if len(found) == 1}
    return _Clause(
        text=text,
        content=content,
        negations=len(negation_words),
        sides=sides,
        negation_words=tuple(negation_words),
    )


def _clauses_disagree(a: _Clause, b: _Clause) -> bool:
    """Opposite sides of a shared pair (net of negations), or, with no shared pair, opposite negation."""
    common = set(a.sides) & set(b.sides)
    # A negation word that is itself one side of a shared pair (禁止, forbid, avoid) counts as that side only.
    parity_a = sum(1 for _, pairs in a.negation_words if not common.intersection(pairs)) % 2
    parity_b = sum(1 for _, pairs in b.negation_words if not common.intersection(pairs)) % 2
    if common:
        return any(a.sides[i] ^ parity_a != b.sides[i] ^ parity_b for i in common)
    return parity_a != parity_b


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def polarity_conflict(first: str, second: str) -> tuple[str, str] | None:
    """The first pair of aligned clauses (one from each text) that say opposite things, or None."""
    clauses_a, clauses_b = _clauses(first)[:MAX_ALIGNED_CLAUSES], _clauses(second)[:MAX_ALIGNED_CLAUSES]
    if not clauses_a or not clauses_b:
        return None
    pairs = _aligned(clauses_a, clauses_b) + [(a, b) for b, a in _aligned(clauses_b, clauses_a)]
    for a, b in pairs:
        if _clauses_disagree(a, b):
            return a.text, b.text
    return None


def _aligned(clauses: Sequence[_Clause], others: Sequence[_Clause]) -> list[tuple[_Clause, _Clause]]:
    """Each clause with the first of `others` it shares the most of (Jaccard of content), when that is ≥ ALIGN_MIN."""
    aligned = []
    for clause in clauses:
        best = max(others, key=lambda other: _jaccard(clause.content, other.content))
        if _jaccard(clause.content, best.content) >= ALIGN_MIN:
            aligned.append((clause, best))
    return aligned


def find_contradiction(first: str, second: str) -> Contradiction | None:
    """Why `first` and `second` contradict (differing figures first, then polarity), or None when they agree."""
    conflicts = figure_conflicts(figures(first), figures(second), limit=3)
    if conflicts:
        detail = ", ".join(f"{x.text} vs {y.text}" for x, y in conflicts)
        return Contradiction(kind="figures", detail=detail)
    clash = polarity_conflict(first, second)
    if clash is not None:
        return Contradiction(kind="polarity", detail=f"{_short(clash[0])!r} vs {_short(clash[1])!r}")
    return None


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
