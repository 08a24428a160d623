"""Text rules for the rule-based updater: is a newer memory about the same thing, and does it say otherwise?

No model, no training: a baseline in the spirit of the paper's rule-based updater.
Three signals, each a plain reading of a short note:

* **Topic overlap.** Content words (stop words and a leading ``"Label:"`` tag such as
  ``"Log:"`` dropped) shared by both texts, as an overlap coefficient; or, when both
  texts come with vectors, their cosine.
* **Attribute-value claims.** A few English patterns that state "attribute takes
  value": ``the A is V``, ``V as the A``, ``set/switch the A to V``, with trailing
  qualifiers (``from now on``, ``until further notice``) cut off and ``instead of
  V``/``no longer V`` kept as a *negated* value. Two claims on one attribute with
  different values conflict.
* **Cues.** Change cues (``now``, ``instead``, ``from now on``, ``switch``...) and
  prohibition cues (``banned``, ``stop``, ``no longer``...) in the newer text, and
  "specific" tokens (numbers, mid-sentence capitals, quoted text) that differ.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

STOP_WORDS = frozenset("""
a an the and or but nor of to in on at for with by from as into onto over under up down out off about after before
is are was were be been being am do does did has have had having will would shall should can could may might must
it its this that these those there here i we you he she they me us him her them my our your his their mine ours
not no so than then too very just also only own same such each every all any some both either neither other
which who whom whose what when where why how while if until unless because though although since again ever
today now yesterday tomorrow instead further notice immediately
""".split())  # time words are cues, not topics: two notes sharing "today" are not about the same thing

# a tag of up to four words, not a sentence ("The meeting moved: ..."): "Log: ", "Instruction from the lead: "
_LABEL = re.compile(r"^\s{0,64}(?!(?:the|a|an|our|we|i|it|this)\b)[A-Za-z][\w'/-]{0,63}(?: [\w'/-]{1,64}){0,3}:\s+",
                    re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+(?:[.,/][^\W_]+)*", re.UNICODE)
_SPECIFIC = re.compile(
    r"\"[^\"]+\"|'[^']+'"  # quoted
    r"|\b[^\W_]*\d(?:[\w%:/-]|[.,](?=\w))*"  # with a digit: 3.12, 4,000, eu-west-1, 10%
    r"|\b[a-z]+[A-Z][\w-]*"  # an inner capital: qPCR
    r"|(?<![.!?:]\s)(?<!^)\b[A-Z][\w-]*", re.UNICODE)  # capitalised, not starting a sentence

CHANGE_CUES = re.compile(
    r"\b(now|instead|from now on|from today|going forward|henceforth|switch(?:ed|es|ing)?|chang(?:e|ed|es|ing)|"
    r"replac(?:e|ed|es|ing)|mov(?:e|ed|es|ing) to|revis(?:e|ed)|anymore|any more)\b", re.IGNORECASE)
PROHIBITION_CUES = re.compile(
    r"\b(no longer|banned|ban|forbidden|prohibited|not allowed|must not|do not|don't|stop(?:ped)?|halt(?:ed)?|"
    r"cancel(?:l?ed)?|discontinu(?:e|ed)|withdrawn|revoked|suspended|deprecated|retired|closed)\b", re.IGNORECASE)

_ARTICLE = r"(?:the|our|its|their|this|a|an)"
# "2.4" and "4,000" stay inside a span; ". " and ", " end it. Bounded, as is the text the rules read: an
# unbounded lazy span tried from every article is quadratic ("the x " * 8000 took seconds, holding the GIL),
# and even linear scans of a megabyte cost seconds. A note states its topic and claims up front.
SPAN_CHARS = 120
READ_CHARS = 4096
MAX_CLAIMS = 16  # distinct claims a text's verdict compares (ordinary notes state one or two)
_SPAN = rf"(?:[^.;,!?]|[.,](?=\w)){{1,{SPAN_CHARS}}}?"
_TAIL = r"(?=[.;,!?](?:\s|$)|[;!?]|$)"
_CLAIMS = (
    # "V as the A": "with qPCR as the primary assay", "uses 37 °C as the incubation temperature"
    re.compile(rf"\b(?:with|uses?|used|using|chose|choose|picked|takes?|took|runs?|ran|keeps?|kept)\s+"
               rf"(?P<val>{_SPAN})\s+as\s+{_ARTICLE}\s+(?P<attr>{_SPAN}){_TAIL}", re.IGNORECASE),
    # "set/switch the A to V", "move the A from X to V"
    re.compile(rf"\b(?:set|sets|switch|switched|change|changed|move|moved|update|updated|raise|raised|lower|lowered)"
               rf"\s+{_ARTICLE}\s+(?P<attr>{_SPAN})\s+(?:from\s+(?P<old>{_SPAN})\s+)?to\s+(?P<val>{_SPAN}){_TAIL}",
               re.IGNORECASE),
    # "the A is (now|no longer) V"
    re.compile(rf"\b{_ARTICLE}\s+(?P<attr>{_SPAN})\s+(?:is|are|will be|becomes|has become|stays|remains)\s+"
               rf"(?P<neg>no longer\s+|not\s+)?(?:now\s+|still\s+)?(?P<val>{_SPAN}){_TAIL}", re.IGNORECASE),
)
_QUALIFIER = re.compile(
    r"\s+(?:from now on|from today(?: on)?|until further notice|immediately|for now|for the time being|"
    r"going forward|effective immediately|again|from here on)\s*$", re.IGNORECASE)
_INSTEAD = re.compile(r"\s+(?:instead of|rather than|in place of|replacing)\s+(?P<old>.+)$", re.IGNORECASE)


def strip_label(text: str) -> str:
    """Drop a leading kind tag ("Log: ", "Team decision: "): it says what the note is, not what it is about."""
    m = _LABEL.match(text)
    return text[m.end():] if m else text


def _head(text: str) -> str:
    """The part of a note the rules read (the caches below are keyed by it, so they hold no long texts)."""
    return text[:READ_CHARS]


def content_words(text: str) -> frozenset[str]:
    """The words that say what a note is about (lower-cased; a lone lower-case letter says nothing)."""
    return _content_words(_head(text))


@lru_cache(maxsize=65536)
def _content_words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(strip_label(text))
                     if _keep(w) and (len(w) > 1 or not w.isalpha() or w.isupper()))


def overlap(a: str, b: str) -> tuple[float, int]:
    """Overlap coefficient of the two texts' content words, and how many they share."""
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return 0.0, 0
    shared = len(wa & wb)
    return shared / min(len(wa), len(wb)), shared


def specific_tokens(text: str) -> frozenset[str]:
    """Numbers, quoted text and mid-sentence capitalised words: where notes usually carry their values."""
    return _specific_tokens(_head(text))


@lru_cache(maxsize=65536)
def _specific_tokens(text: str) -> frozenset[str]:
    body = strip_label(text)
    return frozenset(t.strip("\"'").lower() for t in _SPECIFIC.findall(body) if t.strip("\"'") != "I")


@dataclass(frozen=True)
class Claim:
    """``attribute`` takes ``value`` (content words of each); ``negated``: the text says it no longer does."""

    attribute: frozenset[str]
    value: frozenset[str]
    negated: bool = False


def _keep(raw: str) -> bool:
    """A word that carries meaning: not a stop word, a number, or an upper-case label ("room B", "scale A")."""
    return raw.lower() not in STOP_WORDS or raw.isdigit() or (raw.isupper() and raw != "I")


def _value_words(span: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(span) if _keep(w))


def claims(text: str) -> tuple[Claim, ...]:
    """The attribute-value claims a text states, with values it replaces as negated claims."""
    return _claims(_head(text))


@lru_cache(maxsize=65536)
def _claims(text: str) -> tuple[Claim, ...]:
    body = strip_label(text)
    out: list[Claim] = []
    for pattern in _CLAIMS:
        for m in pattern.finditer(body):
            attr = _value_words(m.group("attr"))
            value = m.group("val").strip()
            olds = [m.group("old")] if "old" in pattern.groupindex and m.group("old") else []
            for _ in range(3):  # "V instead of X from now on": peel qualifiers and replaced values
                value = _QUALIFIER.sub("", value)
                inst = _INSTEAD.search(value)
                if inst:
                    olds.append(inst.group("old"))
                    value = value[:inst.start()]
            val = _value_words(value)
            if not attr or not val:
                continue
            negated = "neg" in pattern.groupindex and bool(m.group("neg"))
            out.append(Claim(attr, val, negated))
            out.extend(Claim(attr, _value_words(_QUALIFIER.sub("", o)), True) for o in olds if _value_words(o))
    return tuple(out)


def _same_attribute(a: frozenset[str], b: frozenset[str]) -> bool:
    return bool(a and b) and len(a & b) / min(len(a), len(b)) >= 0.5


def _same_value(a: frozenset[str], b: frozenset[str]) -> bool:
    return a <= b or b <= a


def _compared(cs: tuple[Claim, ...]) -> tuple[Claim, ...]:
    """A text's distinct claims, the first MAX_CLAIMS of them: the verdict compares every pair and, for a
    negated one, every third claim, so a text of hundreds of claims ("the a is " * 450) cost seconds."""
    return tuple(dict.fromkeys(cs))[:MAX_CLAIMS]


def claim_verdict(target: str, reference: str) -> str | None:
    """"conflict", "agree", "unrelated" (claims on different attributes) or None (no claims to compare)."""
    ct, cr = _compared(claims(target)), _compared(claims(reference))
    if not ct or not cr:
        return None
    verdict = "unrelated"
    for t in ct:
        if t.negated:
            continue
        for r in cr:
            if not _same_attribute(t.attribute, r.attribute):
                continue
            same = _same_value(t.value, r.value)
            if same == r.negated:  # asserts what the reference negates, or differs from what it asserts
                if not (r.negated and any(not x.negated and _same_attribute(x.attribute, r.attribute)
                                          and _same_value(t.value, x.value) for x in cr)):
                    return "conflict"
            elif not r.negated:
                verdict = "agree"
    return verdict


def has_change_cue(text: str) -> bool:
    return bool(CHANGE_CUES.search(strip_label(_head(text))))


def has_prohibition_cue(text: str) -> bool:
    return bool(PROHIBITION_CUES.search(strip_label(_head(text))))


def negated_specifics(text: str) -> frozenset[str]:
    """Specific tokens the text says are replaced ("instead of X", "no longer X")."""
    out: set[str] = set()
    for c in claims(text):
        if c.negated:
            out |= c.value
    return frozenset(out)
