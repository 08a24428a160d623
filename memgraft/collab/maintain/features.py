"""The pair judge's input: word-level comparisons of two memory texts, beside their embedding vectors.

Apart from the model and the policy (:mod:`.judge`) because they are the judge's contract with its
trained weights: a saved judge records how many of these it reads (``N_LEXICAL``), and the training
side (:mod:`memgraft.collab.train.judge_train`) computes the same ones. Each costs bounded time per
pair, however long or repetitive the texts (``ALIGN_WORK``, the capped name comparisons).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from functools import lru_cache
from typing import Sequence

import numpy as np
import torch

from memgraft.collab.maintain import rules

N_LEXICAL = 33
TAIL = 3  # content words read as a text's tail (tail_features)
ALIGN_WORK = 4096  # equal word pairs the alignment reads before it cuts both texts (_aligned_prefixes)
NEAR_NAMES, NAME_CHARS = 64, 64  # names a side, and letters a name, that _near_names compares
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_TOKEN = re.compile(r"[^\W_](?:[\w'-]|[.:,](?=\w))*|[^\w\s'-]", re.UNICODE)  # words, and punctuation on its own
_NAME_JOINERS = frozenset({"of", "de", "the", "and", "von", "van", "du", "la", "le", "da", "al", "bin"})


@lru_cache(maxsize=65536)
def _sequence(text: str) -> tuple[str, ...]:
    """The text's words in order, lower-cased (a leading "Log:"-style tag dropped); function
    words stay, since "of" and "is" are what separate a subject from its value."""
    return tuple(w.lower() for w in _WORD.findall(rules.strip_label(text)[:rules.READ_CHARS]))


@lru_cache(maxsize=65536)
def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in _sequence(text) if w not in rules.STOP_WORDS)


def _aligned_prefixes(sa: tuple[str, ...], sb: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The two word sequences, or, when they share more than ALIGN_WORK equal word pairs, the prefixes
    (grown a word a side at a time) that share at most that many. Why: difflib's matcher visits every equal (i, j) pair once per level of its
    recursion, so repetitive texts cost it cubic time ("the a is " * 450 against "the b is " * 450
    took seconds per pair); ordinary notes share a few hundred pairs at most and are read whole."""
    ca, cb = Counter(sa), Counter(sb)
    if sum(n * cb[w] for w, n in ca.items()) <= ALIGN_WORK:
        return sa, sb
    seen_a: Counter[str] = Counter()
    seen_b: Counter[str] = Counter()
    work = i = j = 0
    while i < len(sa) or j < len(sb):  # grow the prefixes a word at a time (both while both last), counting pairs
        x = sa[i] if i < len(sa) else None
        y = sb[j] if j < len(sb) else None
        work += (seen_b[x] if x is not None else 0) + (seen_a[y] if y is not None else 0) + (x is not None and x == y)
        if work > ALIGN_WORK:
            break
        if x is not None:
            seen_a[x] += 1
            i += 1
        if y is not None:
            seen_b[y] += 1
            j += 1
    return sa[:i], sb[:j]


def alignment_features(a: str, b: str) -> list[float]:
    """Where the two texts differ, not only how much. A new value for the same subject and
    attribute differs in one stretch, usually late ("... is V", "? V"); a record about
    another subject differs in two (the subject, then the value), the first one early."""
    sa, sb = _aligned_prefixes(_sequence(a), _sequence(b))
    blocks = [op for op in difflib.SequenceMatcher(None, sa, sb, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not blocks:
        return [0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    first_a = blocks[0][1] / max(1, len(sa))
    first_b = blocks[0][3] / max(1, len(sb))
    changed_a = sum(i2 - i1 for _, i1, i2, _, _ in blocks)
    changed_b = sum(j2 - j1 for _, _, _, j1, j2 in blocks)
    late_a = sum(max(0, i2 - max(i1, int(len(sa) * 2 / 3))) for _, i1, i2, _, _ in blocks) / max(1, changed_a)
    late_b = sum(max(0, j2 - max(j1, int(len(sb) * 2 / 3))) for _, _, _, j1, j2 in blocks) / max(1, changed_b)
    return [min(len(blocks), 4) / 4, first_a, first_b, float(len(blocks) == 1), late_a, late_b]


@lru_cache(maxsize=65536)
def last_name(text: str) -> frozenset[str]:
    """The text's last run of capitalised words or numbers (lower-cased; "of", "de" may join it, punctuation
    ends it), sentence-initial words included: a stated value usually ends a statement ("... is Hideyo
    Hanazumi, as far as I know", "Who governed Niigata? Hideyo Hanazumi.")."""
    run: list[str] = []
    last: list[str] = []
    for t in _TOKEN.findall(rules.strip_label(text)[:rules.READ_CHARS]):
        if t[0].isalnum() and (t[0].isupper() or any(c.isdigit() for c in t)) and t != "I":
            run.append(t.lower())
        elif not (run and t.lower() in _NAME_JOINERS):
            last, run = (run or last), []
    return frozenset(run or last)


def _near_names(xs: frozenset[str], ys: frozenset[str]) -> float:
    """Share of the names only one text has that the other spells almost alike (Plube / Plumbe)."""
    xs_, ys_ = [x for x in xs if len(x) >= 4 and x.isalpha()], [y for y in ys if len(y) >= 4 and y.isalpha()]
    if not xs_ or not ys_:
        return 0.0
    # Bounded: at most NEAR_NAMES names a side of at most NAME_CHARS letters (ordinary notes have a few
    # dozen, all short); the quick ratios are upper bounds of ratio(), so they only skip certain misses.
    xs_, ys_ = sorted(xs_)[:NEAR_NAMES], [y[:NAME_CHARS] for y in sorted(ys_)[:NEAR_NAMES]]

    def near(x: str, y: str) -> bool:
        m = difflib.SequenceMatcher(None, x, y)
        return m.real_quick_ratio() >= 0.8 and m.quick_ratio() >= 0.8 and m.ratio() >= 0.8

    return sum(any(near(x[:NAME_CHARS], y) for y in ys_) for x in xs_) / len(xs_)


def name_features(a: str, b: str) -> list[float]:
    """Where the two texts' names sit: the subject side (names before the last run) and the value side
    (the last run). A contradiction needs the same subject and another value: two notes that both end
    "... HMS Cochrane" agree however differently they name the ship; "the branch of Mosby Monroe
    Parsons" and "the branch of John James Conyers Jr" share no subject name, so their values do not
    compete; a name spelt almost alike (Plube / Plumbe) is still the same subject."""
    ta, tb = last_name(a), last_name(b)
    sa, sb = rules.specific_tokens(a) | ta, rules.specific_tokens(b) | tb
    in_b = len(ta & sb) / len(ta) if ta else 0.0
    in_a = len(tb & sa) / len(tb) if tb else 0.0
    subject_a, subject_b = rules.specific_tokens(a) - ta, rules.specific_tokens(b) - tb
    shared = len(subject_a & subject_b)
    return [float(bool(ta) and ta == tb), min(in_a, in_b), max(in_a, in_b),
            max(_near_names(sa - sb, sb - sa), _near_names(sb - sa, sa - sb)),
            shared / max(1, len(subject_a | subject_b)), float(bool(subject_a and subject_b) and not shared),
            float(bool(ta and tb) and not ta & tb)]


@lru_cache(maxsize=65536)
def _tail(text: str) -> tuple[str, ...]:
    return tuple(w for w in _sequence(text) if w not in rules.STOP_WORDS)[-TAIL:]


def tail_features(a: str, b: str) -> list[float]:
    """Whether each text's last content words occur in the other: a value usually ends a statement, named
    or not ("... as amateur wrestler." against "... is amateur wrestler."; "? professional wrestler.").
    The name features see only capitalised values; these see every value, in any wording before it."""
    ta, tb = _tail(a), _tail(b)
    wa, wb = _words(a), _words(b)
    in_b = sum(w in wb for w in ta) / len(ta) if ta else 0.0
    in_a = sum(w in wa for w in tb) / len(tb) if tb else 0.0
    return [min(in_a, in_b), max(in_a, in_b), float(bool(ta) and ta[-2:] == tb[-2:]),
            float(bool(ta) and bool(tb) and ta[-1] == tb[-1])]


def lexical_features(a: str, b: str) -> list[float]:
    """Word-level comparisons the embedding blurs: how much is shared, what differs, whether
    the names and numbers differ (where values usually sit), and the text rules' readings
    (attribute-value claims, change and prohibition cues) for the model to trust where they hold."""
    wa, wb = _words(a), _words(b)
    sa, sb = rules.specific_tokens(a), rules.specific_tokens(b)
    shared = len(wa & wb)
    only_a, only_b = len(wa - wb), len(wb - wa)
    verdict = rules.claim_verdict(a, b)
    return [shared / max(1, len(wa | wb)), shared / max(1, min(len(wa), len(wb))),
            only_a / max(1, len(wa)), only_b / max(1, len(wb)), min(only_a, 5) / 5, min(only_b, 5) / 5,
            len(sa - sb) / max(1, len(sa)), len(sb - sa) / max(1, len(sb)),
            float(not sa - sb), float(not sb - sa), float(bool(sa & sb)),
            float(verdict == "conflict"), float(verdict == "agree"), float(verdict == "unrelated"),
            float(rules.has_prohibition_cue(b) != rules.has_prohibition_cue(a)),
            float(rules.has_change_cue(a) or rules.has_change_cue(b)), *alignment_features(a, b),
            *name_features(a, b), *tail_features(a, b)]


def pair_features(texts_a: Sequence[str], texts_b: Sequence[str], u: np.ndarray, v: np.ndarray) -> torch.Tensor:
    """The judge's input for a batch of pairs: ``u``, ``v`` are the unit vectors of the two texts."""
    u = np.asarray(u, np.float32).reshape(len(texts_a), -1)
    v = np.asarray(v, np.float32).reshape(len(texts_b), -1)
    lex = np.asarray([lexical_features(a, b) for a, b in zip(texts_a, texts_b)], np.float32).reshape(len(texts_a),
                                                                                                     N_LEXICAL)
    cos = (u * v).sum(axis=1, keepdims=True)
    return torch.from_numpy(np.hstack([u * v, np.abs(u - v), cos, lex]).astype(np.float32))
