"""Finding tells in a batch of strings: one regex pass per detector over the whole batch.

A run dir holds hundreds of short strings; calling every detector on each of them would
cost a Python call per detector per string. Instead the strings are joined by newlines
into one blob, each detector runs once over it, and every hit is mapped back to its string
with a binary search. Overlapping hits are resolved once, left to right, longest first,
so the scanner and the redactor always agree on what a tell is.

A catalog build scrubs a million entries whose strings nearly all repeat (keys, model
names, tags). `ScanMemo` keeps, per distinct string, what each detector finds in it, so a
string is scanned once per build, and gives exactly the hits of the joined scan: it only
answers for detectors whose matches cannot reach across the newline between two strings
(`line_local`, decided from the parsed pattern); the rest still run over the entry's blob;
and an entry where a home path teaches a user name (a detector built from the whole
batch) is scanned the plain way.
"""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from benchlab.redact import tells
from benchlab.redact.policy import Policy
from benchlab.redact.tells import Detector

_SECRET_TRIM = " \t\r\n=:\"'"
_CONTEXT = 160  # characters of the same line a detector's `context` check may read
_NO_USER: Any = object()  # a candidate that teaches no home-directory user name

Candidate = tuple[int, int, int, int, Detector]
"""(start in the blob, -length, detector priority, end, detector): sorts into scan order."""


@dataclass(frozen=True)
class Hit:
    """One tell: string `index` of the batch, its [start, end) span there, and who found it."""

    index: int
    start: int
    end: int
    value: str
    detector: Detector

    @property
    def tell_class(self) -> str:
        return self.detector.tell_class


def _span(match: re.Match[str], group: int) -> tuple[int, int]:
    if group == -1:
        for number in range(1, match.re.groups + 1):
            if match.group(number):
                return match.span(number)
        return match.span()
    return match.span(group)


def find(policy: Policy, strings: Sequence[str], memo: ScanMemo | None = None) -> list[Hit]:
    """Every tell in `strings`, sorted by (index, start), never overlapping.

    Each distinct string is scanned once: run files repeat the same keys, model names and
    engine names thousands of times. `memo` (of this policy) carries that across batches:
    the hits are the same with or without it.
    """
    unique = list(dict.fromkeys(strings))
    scan = _find if memo is None or memo.policy is not policy else memo.find
    if len(unique) == len(strings):
        return scan(policy, strings)
    positions: dict[str, list[int]] = {}
    for index, text in enumerate(strings):
        positions.setdefault(text, []).append(index)
    hits = [
        replace(hit, index=index)
        for hit in scan(policy, unique)
        for index in positions[unique[hit.index]]
    ]
    hits.sort(key=lambda h: (h.index, h.start))
    return hits


def _offsets(strings: Sequence[str]) -> list[int]:
    starts: list[int] = []
    offset = 0
    for text in strings:
        starts.append(offset)
        offset += len(text) + 1
    return starts


def _find(policy: Policy, strings: Sequence[str]) -> list[Hit]:
    if not strings:
        return []
    blob = "\n".join(strings)
    candidates: list[Candidate] = []
    home_users: set[str] = set()
    for priority, detector in enumerate(policy.detectors):
        _collect(policy, detector, priority, blob, candidates, home_users)
    learned = tells.user_words_regex(home_users)
    if learned is not None:
        detector = Detector("home-user", tells.USER, learned, "user")
        _collect(policy, detector, len(policy.detectors), blob, candidates, set())
    return _resolve(candidates, strings, _offsets(strings))


def _resolve(candidates: list[Candidate], strings: Sequence[str], starts: list[int]) -> list[Hit]:
    """Left to right, longest first, never overlapping; a candidate that runs past the end
    of its string crossed into the next one and is a tell of neither."""
    candidates.sort()
    hits: list[Hit] = []
    end_of_last = -1
    for start, _neg_len, _priority, end, detector in candidates:
        if start < end_of_last:
            continue
        index = bisect.bisect_right(starts, start) - 1
        local_start = start - starts[index]
        local_end = end - starts[index]
        text = strings[index]
        if local_end > len(text):
            continue  # crossed into the next string: not a tell of either
        end_of_last = end
        hits.append(Hit(index, local_start, local_end, text[local_start:local_end], detector))
    return hits


def _collect(
    policy: Policy,
    detector: Detector,
    priority: int,
    blob: str,
    out: list[Candidate],
    home_users: set[str],
) -> None:
    if detector.gate is not None and detector.gate.search(blob) is None:
        return
    for start, end, user in _scan(policy, detector, blob):
        if user is not _NO_USER:
            home_users.add(user)
        out.append((start, start - end, priority, end, detector))


def _scan(policy: Policy, detector: Detector, blob: str) -> Iterator[tuple[int, int, Any]]:
    """(start, end, the home user it teaches or _NO_USER) of each candidate of one detector
    (its gate is the caller's business)."""
    for match in detector.regex.finditer(blob):
        start, end = _span(match, detector.group)
        if detector.tell_class == tells.SECRET:
            value = blob[start:end]
            stripped = value.strip(_SECRET_TRIM)
            if stripped:
                start += value.index(stripped)
                end = start + len(stripped)
        if start >= end:
            continue
        value = blob[start:end]
        if detector.check is not None and not detector.check(value):
            continue
        if detector.context is not None:
            line_start = blob.rfind("\n", max(0, start - _CONTEXT), start) + 1
            if not detector.context(blob[max(line_start, start - _CONTEXT) : start]):
                continue
        if policy.allowed(detector.tell_class, value):
            continue
        user = _NO_USER
        if detector.tell_class == tells.HOME_PATH and match.lastindex:
            user = match.group(1)
        yield start, end, user


# --- the memo -----------------------------------------------------------------------------


def line_local(pattern: re.Pattern[Any] | None) -> bool:
    """True when a pattern finds, in newline-joined strings, exactly the matches it finds in
    each string alone: nothing in it, lookarounds included, can match a newline (so no match
    or look reaches past one), and it has no anchor that tells the ends of the whole text
    from a newline (`^` and `$` without MULTILINE, `\\A`, `\\Z`). `\\b` sees a newline as
    it sees the end of a string. Anything this cannot read is taken as not local."""
    if pattern is None:
        return True
    if not isinstance(pattern, re.Pattern) or not isinstance(pattern.pattern, str):
        return False
    try:
        _parser, _constants = _sre()
        parsed = _parser.parse(pattern.pattern, pattern.flags)
        return _local_items(list(parsed), parsed.state.flags, _constants)
    except Exception:  # an unknown construct: not provably local
        return False


def _sre() -> tuple[Any, Any]:
    """The standard library's regex parser and its constants: `re._parser` from Python 3.11,
    `sre_parse` before it (same API), so the prefilters work on every Python we support."""
    if sys.version_info >= (3, 11):
        from re import _constants, _parser  # type: ignore[attr-defined]

        return _parser, _constants
    import sre_constants
    import sre_parse
    from types import SimpleNamespace

    # Atomic groups and possessive repeats came in 3.11: names 3.10's parser never produces.
    constants = SimpleNamespace(**vars(sre_constants))
    constants.ATOMIC_GROUP, constants.POSSESSIVE_REPEAT = object(), object()
    return sre_parse, constants


_NEWLINE = 10


def _local_items(items: list[Any], flags: int, c: Any) -> bool:
    newline_categories = {
        c.CATEGORY_SPACE,
        c.CATEGORY_NOT_DIGIT,
        c.CATEGORY_NOT_WORD,
        c.CATEGORY_LINEBREAK,
        c.CATEGORY_UNI_SPACE,
        c.CATEGORY_UNI_NOT_DIGIT,
        c.CATEGORY_UNI_NOT_WORD,
        c.CATEGORY_UNI_LINEBREAK,
        c.CATEGORY_LOC_NOT_WORD,
    }
    for op, av in items:
        if op is c.LITERAL:
            if av == _NEWLINE:
                return False
        elif op is c.NOT_LITERAL:
            if av != _NEWLINE:
                return False
        elif op is c.ANY:
            if flags & re.DOTALL:
                return False
        elif op is c.IN:
            negated, member = False, False
            for item_op, item in av:
                if item_op is c.NEGATE:
                    negated = True
                elif item_op is c.LITERAL:
                    member = member or item == _NEWLINE
                elif item_op is c.RANGE:
                    member = member or item[0] <= _NEWLINE <= item[1]
                elif item_op is c.CATEGORY:
                    member = member or item in newline_categories
                else:
                    return False
            if member != negated:
                return False
        elif op is c.BRANCH:
            if not all(_local_items(list(branch), flags, c) for branch in av[1]):
                return False
        elif op is c.SUBPATTERN:
            _group, add, remove, sub = av
            if not _local_items(list(sub), (flags | add) & ~remove, c):
                return False
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            if not _local_items(list(av[2]), flags, c):
                return False
        elif op is c.ATOMIC_GROUP:
            if not _local_items(list(av), flags, c):
                return False
        elif op in (c.ASSERT, c.ASSERT_NOT):
            if not _local_items(list(av[1]), flags, c):
                return False
        elif op is c.AT:
            if av in (c.AT_BEGINNING, c.AT_END):
                if not flags & re.MULTILINE:
                    return False
            elif av not in (c.AT_BOUNDARY, c.AT_NON_BOUNDARY):
                return False
        elif op is c.GROUPREF_EXISTS:
            _group, yes, no = av
            if not _local_items(list(yes), flags, c):
                return False
            if no is not None and not _local_items(list(no), flags, c):
                return False
        elif op is not c.GROUPREF:  # a backreference repeats a local group's text
            return False
    return True


_MAX_LITERALS = 64
_COMMON = re.compile(r"[\w.\-/ ]")


def required_literals(pattern: re.Pattern[Any]) -> re.Pattern[str] | None:
    """A fast search that finds something in every text the pattern matches in: the
    literals (two characters or more) one of which every match contains, as an
    alternation; None where none can be read off the pattern.

    Read off the parsed pattern: a run of single characters (a literal, or a class of at
    most four) spells literals; a group, an atomic group or a repeat of at least one
    contributes its own; a branch contributes the union of its branches' (each must have
    some); a sequence keeps the most selective of its parts'. Case-insensitive parts are
    searched case-insensitively, with the pattern's own folding rules."""
    if not isinstance(pattern, re.Pattern) or not isinstance(pattern.pattern, str):
        return None
    try:
        _parser, _constants = _sre()
        parsed = _parser.parse(pattern.pattern, pattern.flags)
        found = _literals(list(parsed), parsed.state.flags, _constants)
    except Exception:  # an unknown construct: no prefilter
        return None
    if not found or any(len(text) < 2 and _COMMON.match(text) for text, _ in found):
        return None  # a letter, a digit or a dash is in nearly every text: no help
    if len(found) > 3 and any(caseless for _, caseless in found):
        return None  # `re` searches a long caseless alternation slower than most patterns
    alternatives = sorted(
        f"(?i:{re.escape(text)})" if caseless else re.escape(text) for text, caseless in found
    )
    return re.compile("|".join(alternatives), pattern.flags & re.ASCII)


def _chars(op: Any, av: Any, c: Any) -> list[str] | None:
    """The characters one single-character element matches, if few and plainly listed."""
    if op is c.LITERAL:
        return [chr(av)]
    if op is not c.IN:
        return None
    out: list[str] = []
    for item_op, item in av:
        if item_op is c.LITERAL:
            out.append(chr(item))
        elif item_op is c.RANGE and item[1] - item[0] < 4:
            out.extend(chr(x) for x in range(item[0], item[1] + 1))
        else:
            return None  # a negation, a category, a wide range
    return out if 0 < len(out) <= 4 else None


def _literals(items: list[Any], flags: int, c: Any) -> set[tuple[str, bool]] | None:
    """Literals (text, caseless) one of which every match of the sequence contains."""
    best: set[tuple[str, bool]] | None = None

    def keep(found: set[tuple[str, bool]] | None) -> None:
        nonlocal best
        if not found or len(found) > _MAX_LITERALS or any(not text for text, _ in found):
            return
        score = (min(len(text) for text, _ in found), -len(found))
        if best is None or score > (min(len(text) for text, _ in best), -len(best)):
            best = found

    run: set[tuple[str, bool]] | None = None
    for op, av in items:
        chars = _chars(op, av, c)
        caseless = bool(flags & re.IGNORECASE)
        if chars is not None:
            if run is not None and all(flag == caseless for _, flag in run):
                grown = {(text + ch, caseless) for text, _ in run for ch in chars}
                if len(grown) <= _MAX_LITERALS:
                    run = grown
                    continue
            keep(run)
            run = {(ch, caseless) for ch in chars}
            continue
        keep(run)
        run = None
        if op is c.SUBPATTERN:
            keep(_literals(list(av[3]), (flags | av[1]) & ~av[2], c))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            if av[0] >= 1:
                keep(_literals(list(av[2]), flags, c))
        elif op is c.ATOMIC_GROUP:
            keep(_literals(list(av), flags, c))
        elif op is c.BRANCH:
            branches = [_literals(list(branch), flags, c) for branch in av[1]]
            if all(branches):
                keep(set().union(*branches))  # type: ignore[arg-type]
    keep(run)
    return best


class ScanMemo:
    """What each line-local detector finds in each distinct string, for the batches of one
    job (a catalog build): `find(policy, strings, memo)` equals `find(policy, strings)`.

    Per string it keeps which gates hit it, which detectors were run on it, and their
    candidates (positions relative to the string). For a batch, a gated detector is active
    when its gate hits any of the strings (a local gate hits the joined blob exactly then);
    its candidates are those of each string, shifted to the string's place in the blob.
    Detectors that are not line-local run over the blob as before. A candidate that teaches
    a home-directory user name sends the batch down the plain path (the learned detector
    depends on the whole batch). At `limit` distinct strings the memo starts again, so a
    million unique run ids cannot grow it without bound.
    """

    def __init__(self, policy: Policy, limit: int = 200_000) -> None:
        self.policy = policy
        self.limit = limit
        self._local: list[tuple[int, Detector]] = []
        self._wide: list[tuple[int, Detector]] = []
        for priority, detector in enumerate(policy.detectors):
            if line_local(detector.regex) and line_local(detector.gate):
                self._local.append((priority, detector))
            else:
                self._wide.append((priority, detector))
        self._always = 0
        for bit, (_priority, detector) in enumerate(self._local):
            if detector.gate is None:
                self._always |= 1 << bit
        # A string without any of a detector's required literals holds none of its matches.
        self._needs = [required_literals(d.regex) for _priority, d in self._local]
        self._wide_needs = [required_literals(d.regex) for _priority, d in self._wide]
        # string -> [gates hit, detectors run, detectors with candidates, candidates]
        self._records: dict[str, list[Any]] = {}
        self.plain = 0  # batches that took the plain path (a home path was found)

    @property
    def wide(self) -> list[str]:
        """Names of the detectors that run over each batch's blob (not line-local)."""
        return [detector.name for _priority, detector in self._wide]

    def find(self, policy: Policy, strings: Sequence[str]) -> list[Hit]:
        """`_find(policy, strings)` for distinct `strings`, from the memo where it can be."""
        if not strings:
            return []
        records = self._records
        fresh = [text for text in strings if text not in records]
        if len(records) + len(fresh) > self.limit:
            records.clear()
            fresh = list(strings)
        if fresh:
            self._add(fresh)
        rows = [records[text] for text in strings]
        active = self._always
        for row in rows:
            active |= row[0]
        candidates: list[Candidate] = []
        offset = 0
        for text, row in zip(strings, rows, strict=True):
            missing = active & ~row[1]
            if missing:
                self._fill(text, row, missing)
            if row[2] & active:
                for bit, priority, start, neg_len, end, detector, user in row[3]:
                    if bit & active:
                        if user is not _NO_USER:
                            self.plain += 1
                            return _find(policy, strings)
                        candidates.append(
                            (start + offset, neg_len, priority, end + offset, detector)
                        )
            offset += len(text) + 1
        if self._wide:
            blob = "\n".join(strings)
            home_users: set[str] = set()
            for (priority, detector), needs in zip(self._wide, self._wide_needs, strict=True):
                if needs is None or needs.search(blob) is not None:
                    _collect(policy, detector, priority, blob, candidates, home_users)
            if home_users:
                self.plain += 1
                return _find(policy, strings)
        if not candidates:
            return []
        return _resolve(candidates, strings, _offsets(strings))

    def _add(self, fresh: list[str]) -> None:
        """Scan new strings together: gates and detectors once over their own blob."""
        blob = "\n".join(fresh)
        starts = _offsets(fresh)
        rows: list[list[Any]] = [[0, 0, 0, []] for _ in fresh]
        done = 0
        for bit, (priority, detector) in enumerate(self._local):
            flag = 1 << bit
            gate = detector.gate
            if gate is not None:
                if gate.search(blob) is None:
                    continue  # run on these strings only if another string opens the gate
                for match in gate.finditer(blob):
                    rows[bisect.bisect_right(starts, match.start()) - 1][0] |= flag
            done |= flag
            needs = self._needs[bit]
            scan_blob, scan_starts, scan_rows = blob, starts, rows
            if needs is not None:
                if needs.search(blob) is None:
                    continue
                # A local detector's literals hold no newline: each hit is in one string.
                hit = sorted(
                    {bisect.bisect_right(starts, m.start()) - 1 for m in needs.finditer(blob)}
                )
                if len(hit) < len(fresh):
                    chosen = [fresh[i] for i in hit]
                    scan_blob, scan_starts = "\n".join(chosen), _offsets(chosen)
                    scan_rows = [rows[i] for i in hit]
            for start, end, user in _scan(self.policy, detector, scan_blob):
                index = bisect.bisect_right(scan_starts, start) - 1
                row, base = scan_rows[index], scan_starts[index]
                row[2] |= flag
                row[3].append(
                    (flag, priority, start - base, start - end, end - base, detector, user)
                )
        for text, row in zip(fresh, rows, strict=True):
            row[1] |= done
            self._records[text] = row

    def _fill(self, text: str, row: list[Any], missing: int) -> None:
        """Run the detectors in `missing` over one string (another string opened their gate)."""
        for bit, (priority, detector) in enumerate(self._local):
            flag = 1 << bit
            if not missing & flag:
                continue
            needs = self._needs[bit]
            if needs is not None and needs.search(text) is None:
                row[1] |= flag
                continue
            for start, end, user in _scan(self.policy, detector, text):
                row[2] |= flag
                row[3].append((flag, priority, start, start - end, end, detector, user))
            row[1] |= flag
