"""What a memory states as a value, read off its words: shared by the updater's carry step and the judge.

Values end statements ("... is V.", "? V", "A: V", "= V", "as V"), so a value is the run of
words between what opens one ("?", ":", "=", "is", "as", ...) and what closes one (",", ".",
";", ...). That is all this module assumes of a memory's wording; it reads no template.
"""

from __future__ import annotations

import difflib
import re
from typing import Sequence

from memgraft.collab.maintain import rules

MIN_CONTENT_WORDS = 2  # a value without a name must have this many content words
MIN_CHARS = 4  # and its content words this many letters in all (not "St")

_TOKEN = re.compile(r"[^\W_]+|[^\w\s]", re.UNICODE)  # words, and each punctuation mark
_OPENS = frozenset('?:=—–,.;!()"') | {"is", "was", "are", "were", "as", "be", "been"}  # what a value follows
# how current the writer thinks a value is ("is still V", "— now V"), written lower-case: it stands
# between what opens a value and the value, so it opens one too; "Still Corners" is a name
_ADVERBS = frozenset({"still", "now", "currently", "already", "again"})
_CLOSES = frozenset(',.;!?()"')  # what ends a value
_EXACT = _OPENS - {","}  # what opens a whole value (a comma may part a list's items)


def _tokens(text: str) -> list[str]:
    """Tokens of the text as written, its kind tag and a trailing hedge dropped."""
    toks = _TOKEN.findall(rules.strip_label(text)[: rules.READ_CHARS])
    while toks and not _is_word(toks[-1]):
        toks.pop()
    comma = max((i for i, t in enumerate(toks) if t == ","), default=-1)
    if comma > 0 and not any(_is_word(t) and t != "I" and (t[:1].isupper() or any(c.isdigit() for c in t))
                             for t in toks[comma:]):
        toks = toks[:comma]  # ", as far as I know": how sure the writer is, not what is stated
    return toks


def _is_word(token: str) -> bool:
    return token[:1].isalnum()


def _opens(token: str) -> bool:
    """Whether a value may follow ``token`` (as written: an adverb opens only in lower case)."""
    return token.lower() in _OPENS or token in _ADVERBS


def _in_value(token: str) -> bool:
    """Words, and the marks that join a value's words ("Hans-Walter", "O'Neill", "Marks & Spencer")."""
    return _is_word(token) or token in "-'&"


def stated_value(note: str, by: str) -> tuple[str, ...]:
    """The value ``note`` states where ``by`` states another: the last stretch of words where they
    differ, widened back to what opens a value ("?", ":", "is", "as", ...) and forward to what
    closes one; lower-cased. Empty when there is none, or it is too weak to carry: a bare number,
    or only common words without a name; or the writer speaking ("last I looked, ..." against
    "Starting in 2001: ..."), which a differing stretch can be where the note states its value last."""
    a, b = _tokens(note), _tokens(by)
    la, lb = [t.lower() for t in a], [t.lower() for t in b]
    blocks = [op for op in difflib.SequenceMatcher(None, la, lb, autojunk=False).get_opcodes()
              if op[0] == "replace" and any(_is_word(t) for t in a[op[1]:op[2]])]
    if not blocks:
        return ()
    _, i1, i2, _, _ = blocks[-1]
    while i1 < i2 and _opens(a[i1]):  # "=" against "? A:", "still": the value starts after it
        i1 += 1
    while i1 > 0 and not _opens(a[i1 - 1]):
        i1 -= 1
    i2 = next((i for i in range(i1 + 1, len(a)) if la[i] in _CLOSES), len(a))  # ", as far as I know" is no value
    span = [t for t in a[i1:i2] if _in_value(t)]
    if any(t == "I" and (k == 0 or not span[k - 1][:1].isupper()) for k, t in enumerate(span)):
        return ()  # the writer speaking ("last I looked", "I think"), not a value; "World War I" is one
    content = [t for t in span if _is_word(t) and t.lower() not in rules.STOP_WORDS]
    if not any(t.isalpha() for t in content):
        return ()  # "2018", "5": values too common to tell subjects apart
    named = any(t[:1].isupper() and t.isalpha() for t in content)
    if not (named or len(content) >= MIN_CONTENT_WORDS) or sum(map(len, content)) < MIN_CHARS:
        return ()
    return tuple(t.lower() for t in span)


def states(text: str, value: Sequence[str]) -> bool:
    """Whether ``text`` states ``value`` as a whole value: the run, opened and closed as a value is."""
    written = _tokens(text)
    toks = [t.lower() for t in written]
    kept = [i for i, t in enumerate(toks) if _in_value(t)]
    words = [toks[i] for i in kept]
    n = len(value)
    for j in range(len(words) - n + 1):
        if tuple(words[j : j + n]) != tuple(value):
            continue
        first, last = kept[j], kept[j + n - 1]
        if (first == 0 or _opens(written[first - 1])) and (last + 1 == len(toks) or toks[last + 1] in _CLOSES):
            return True
    return False


def list_change(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` end on the same value, one of them as the last item of a longer list ("Lledoners
    Prison and Soto del Real" against "Soto del Real"): the list lost or gained an item, so the two disagree
    on the whole value although every word of the shorter one is in the longer."""
    ta, tb = _tokens(a), _tokens(b)
    wa = [i for i, t in enumerate(ta) if _is_word(t)]
    wb = [i for i, t in enumerate(tb) if _is_word(t)]
    k = 0
    while k < min(len(wa), len(wb)) and ta[wa[-1 - k]].lower() == tb[wb[-1 - k]].lower():
        k += 1
    if k == 0 or wa[-1] + 1 != len(ta) or wb[-1] + 1 != len(tb):
        return False
    shared = [ta[i].lower() for i in wa[len(wa) - k:]]
    if not any(w.isalpha() and w not in rules.STOP_WORDS for w in shared):
        return False
    before_a, before_b = wa[len(wa) - k] - 1, wb[len(wb) - k] - 1
    prev_a = ta[before_a].lower() if before_a >= 0 else ""
    prev_b = tb[before_b].lower() if before_b >= 0 else ""
    return "and" in (prev_a, prev_b) and (prev_a in _EXACT or prev_b in _EXACT)
