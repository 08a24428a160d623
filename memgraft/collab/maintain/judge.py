"""HiCoMER's default updater judge: a small trained pair classifier over the bank's own embeddings.

Why a trained judge and not rules: on real data the text rules compared an attribute
and a value but not whose attribute it was, so "the owner of The Fifer is Durand-Ruel"
retired "the owner of Arnolfini Portrait is National Gallery" (issue 11). A contradiction
needs the same subject and attribute with a different value; which words carry the
subject and which the value depends on the phrasing, so it is learned, on generated
streams and on two real conversions of different phrasing (TimeQA, SituatedQA).

Why this model: the paper's updater is a trained LLM; on a 2-core CPU a 135M LLM judged
worse than chance and a fine-tuned cross-encoder ran at tens of pairs per second. This
judge reads what the updater already has: the two memories' embedding vectors (stored
in the bank, so judging costs no encoder pass) and a few word-level comparisons (shared
and differing content words, differing names and numbers, and which side of the text the
names differ on: the subject's or the value's; whether each text's last content words occur in
the other, for values that are not names). An MLP over
``[u ⊙ v; |u − v|; cos; lexical]`` gives P(neutral), P(compatible), P(contradiction) for a
pair; it is symmetric by construction of its training data (both orders).

The action follows authority, not the model (the paper's rule, as the rules policy
applies it): a contradiction is revised when the reference is a team memory, or both are
individual notes and the newer one states a change; an individual note never outdates a
team memory. Over several references the most probable contradiction wins.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np
import torch
from torch import nn

from memgraft.collab.maintain import rules, subject, values
from memgraft.collab.maintain.judgement import LABELS, Judgement, Target, may_revise, normalise
from memgraft.collab.types import Action, Memory, Relation
from memgraft.collab.maintain.weights import read_weights, save_weights, weights_path

if TYPE_CHECKING:
    from memgraft.collab.maintain.pair_encoder import PairEncoder
    from memgraft.config import HiCoMERSettings
    from memgraft.models.embedder import Embedder

FORMAT = "memgraft.pair-judge/1"
BUNDLED = Path(__file__).parent.parent / "assets" / "judge-all-MiniLM-L6-v2.pt"
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


@dataclass(frozen=True)
class JudgeConfig:
    dim: int
    hidden: int = 128
    dropout: float = 0.2
    embedder: str = ""  # the embedder whose vectors it was trained on
    lexical: int = N_LEXICAL  # word-level features it reads (lexical_features)


class PairJudge(nn.Module):
    """MLP over pair features -> logits for (neutral, compatible, contradiction)."""

    def __init__(self, dim: int, *, hidden: int = 128, dropout: float = 0.2, embedder: str = ""):
        super().__init__()
        self.config = JudgeConfig(dim=dim, hidden=hidden, dropout=dropout, embedder=embedder, lexical=N_LEXICAL)
        self.mlp = nn.Sequential(nn.Linear(2 * dim + 1 + N_LEXICAL, hidden), nn.GELU(), nn.Dropout(dropout),
                                 nn.Linear(hidden, len(LABELS)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x)

    @torch.no_grad()
    def probabilities(self, x: torch.Tensor) -> np.ndarray:
        was = self.training
        self.eval()
        try:
            return torch.softmax(self(x), dim=-1).numpy()
        finally:
            self.train(was)


def save_judge(judge: PairJudge, path: str | Path, metrics: dict | None = None) -> Path:
    return save_weights(path, FORMAT, asdict(judge.config), judge.state_dict(), metrics)


def load_judge(path: str | Path = "bundled") -> PairJudge:
    """A saved judge (``"bundled"``: the one shipped for all-MiniLM-L6-v2); weights only, no pickled code."""
    file = weights_path(path, BUNDLED, "pair judge")
    blob = read_weights(file, FORMAT)
    config = dict(blob["config"])
    lexical = config.pop("lexical", None)
    if lexical is None:  # saved before the count was recorded: read it off the first layer
        lexical = int(blob["state"]["mlp.0.weight"].shape[1]) - 2 * int(config["dim"]) - 1
    if lexical != N_LEXICAL:
        raise ValueError(f"{file}: this pair judge reads {lexical} word-level features, this memgraft computes "
                         f"{N_LEXICAL}; retrain it with `make train-updater`")
    judge = PairJudge(**config)
    judge.load_state_dict(blob["state"])
    return judge.eval()


@dataclass
class JudgePolicy:
    """The updater policy over a :class:`PairJudge`: every (target, reference) pair of a batch in one forward."""

    model: PairJudge
    embedder: "Embedder | None" = None  # for memories that come without vectors
    threshold: float = 0.5  # P(contradiction) at or above which a pair contradicts
    name: str = "judge"
    second: "PairEncoder | None" = None  # a cross-encoder for the pairs in doubt (memgraft.collab.maintain.pair_encoder)
    second_from: float = 0.05  # P(contradiction) from which a pair is in doubt
    second_weight: float = 0.5  # the second opinion's share of the averaged probabilities
    coexisting: bool = True  # a note its own group states again: the group's other team memories do not overrule it
    one_subject: bool = True  # a memory supersedes one subject's memories (the one it contradicts most surely)
    subject_first: bool = True  # read who each memory is about before judging (memgraft.collab.maintain.subject)

    @classmethod
    def from_settings(cls, model: PairJudge, hicomer: "HiCoMERSettings", embedder: "Embedder | None" = None,
                      second: "PairEncoder | None" = None) -> "JudgePolicy":
        """The policy over ``model`` with ``hicomer``'s threshold and second-opinion blend (``second``: its encoder)."""
        return cls(model, embedder=embedder, threshold=hicomer.judge_threshold, second=second,
                   second_from=hicomer.judge_encoder_from, second_weight=hicomer.judge_encoder_weight,
                   coexisting=hicomer.judge_coexisting, one_subject=hicomer.judge_one_subject,
                   subject_first=hicomer.judge_subject_first)

    def judge_pairs(self, a: Sequence[Memory], b: Sequence[Memory]) -> np.ndarray:
        """P(neutral, compatible, contradiction) per pair, [n, 3]."""
        if not a:
            return np.zeros((0, len(LABELS)), np.float32)
        u, v = self._vectors(a), self._vectors(b)
        texts_a, texts_b = [m.maintained for m in a], [m.maintained for m in b]
        return self.blend(texts_a, texts_b, self.model.probabilities(pair_features(texts_a, texts_b, u, v)))

    def blend(self, texts_a: Sequence[str], texts_b: Sequence[str], probs: np.ndarray) -> np.ndarray:
        """The judge's probabilities with the second opinion averaged in where the pair is in doubt."""
        if self.second is None or not len(probs):
            return probs
        doubt = np.flatnonzero(probs[:, 2] >= self.second_from)
        if len(doubt):
            probs = probs.copy()
            second = self.second.probabilities([texts_a[i] for i in doubt], [texts_b[i] for i in doubt])
            probs[doubt] = (1.0 - self.second_weight) * probs[doubt] + self.second_weight * second
        return probs

    def judge(self, targets: Sequence[Target]) -> list[Judgement]:
        pairs = [(t, r) for t in targets for r in t.against]
        probs = self.judge_pairs([t.memory for t, _ in pairs], [r for _, r in pairs])
        by_target: dict[int, list[tuple[np.ndarray, Memory]]] = {}
        for (t, r), p in zip(pairs, probs):
            by_target.setdefault(id(t), []).append((p, r))
        out = [self._decide(t, by_target.get(id(t), [])) for t in targets]
        return self._one_subject(targets, out, by_target) if self.one_subject else out

    def _one_subject(self, targets: Sequence[Target], out: list[Judgement],
                     by_target: dict[int, list[tuple[np.ndarray, Memory]]]) -> list[Judgement]:
        """A memory states one subject's attribute, so what it supersedes is about one subject: the subject
        of the memory it contradicts most surely. Of the others it would revise, one the judge reads as
        about another subject than that memory (neutral to it) is judged again without it. Siemens's new
        CEO retires Siemens's last CEO (1.00), not the Swedish Air Staff's chief (0.51)."""
        by_ref: dict[str, list[int]] = {}
        for i, j in enumerate(out):
            if j.action is Action.revise and j.reference:
                by_ref.setdefault(j.reference, []).append(i)
        dropped: dict[int, set[str]] = {}
        for ref, idx in by_ref.items():
            if len(idx) < 2:
                continue
            sure = [max((float(p[2]) for p, r in by_target[id(targets[i])] if r.memory_id == ref), default=0.0)
                    for i in idx]
            anchor = idx[int(np.argmax(sure))]
            others = [i for i in idx if i != anchor]
            probs = self.judge_pairs([targets[i].memory for i in others], [targets[anchor].memory] * len(others))
            for i, p in zip(others, probs):
                if p[0] >= max(p[1], p[2]):  # another subject than the anchor's
                    dropped.setdefault(i, set()).add(ref)
        for i, refs in dropped.items():
            t = targets[i]
            out[i] = self._decide(t, [(p, r) for p, r in by_target[id(t)] if r.memory_id not in refs])
        return out

    @staticmethod
    def _beside(target: Memory, scored: list[tuple[np.ndarray, Memory]], conflicting: set[str]) -> Memory | None:
        """A team memory written in the target's own group (the intra step) that the judge reads as stating
        it again. One group's memories are written at one time and its team memories hold together, so
        the group's other team memories cannot have replaced the target: a conflict read with one of them
        is with another subject (a note on Cospaia's neighbour, "Grand Duchy of Tuscany", restated by
        Cospaia's record and read as conflicting with Florence's "Grand Dukes of Tuscany" beside it)."""
        agreeing = [(float(p[1]), r) for p, r in scored if r.type == "team" and r.group_id == target.group_id
                    and r.memory_id not in conflicting and p[1] > max(p[0], p[2])]
        return max(agreeing, key=lambda x: x[0])[1] if agreeing else None

    def _decide(self, target: Target, scored: list[tuple[np.ndarray, Memory]]) -> Judgement:
        keep = target.memory.maintained
        if not scored:
            return Judgement(Relation.neutral, Action.keep, keep, "nothing to judge against")
        contra, elsewhere = self._contradictions(target, scored)
        beside = self._beside(target.memory, scored, {r.memory_id for _, r in contra}) \
            if contra and self.coexisting else None
        if beside is not None:  # its own group states it again: the conflicts read there are with other subjects
            contra = [(p, r) for p, r in contra if r.group_id != target.memory.group_id]
        if contra:
            # a reference with the authority to settle it first, then the most probable
            p, ref = max(contra, key=lambda x: (may_revise(target.memory, x[1]), x[0]))
            if may_revise(target.memory, ref):
                return normalise(target, Relation.contradiction, Action.revise, "",
                                 f"superseded by {ref.memory_id} (p={p:.2f})", reference=ref)
            return Judgement(Relation.contradiction, Action.keep, keep,
                             f"conflicts with {ref.memory_id} (p={p:.2f}), which cannot overrule it")
        if elsewhere:
            p, ref = max(elsewhere, key=lambda x: x[0])
            return Judgement(Relation.neutral, Action.keep, keep,
                             f"read as conflicting with {ref.memory_id} (p={p:.2f}), which names another subject")
        agree = [(float(p[1]), r) for p, r in scored if p[1] > p[0]]
        if agree:
            p, ref = max(agree, key=lambda x: x[0])
            return Judgement(Relation.compatible, Action.keep, keep, f"agrees with {ref.memory_id} (p={p:.2f})")
        return Judgement(Relation.neutral, Action.keep, keep, "no memory on the same subject and attribute")

    def _contradictions(self, target: Target, scored: list[tuple[np.ndarray, Memory]]
                        ) -> tuple[list[tuple[float, Memory]], list[tuple[float, Memory]]]:
        """The references that contradict the target, and those the judge read so but that name another subject.

        Subject first (:mod:`memgraft.collab.maintain.subject`): a reference naming another subject never contradicts;
        one stating the target's own value agrees, whatever the judge read; one saying in words that the
        target's value is replaced ("... instead of Tuesdays") contradicts, when it is on the target's topic,
        and one that names another value it replaces contradicts only memories stating that one.
        A pair the judge reads as agreeing, whose value lists differ by an item, disagrees on the whole value."""
        a = target.memory.maintained
        contra, elsewhere = [], []
        for p, r in scored:
            b = r.maintained
            judged = p[2] >= self.threshold or (p[1] > p[0] and values.list_change(a, b))
            if not self.subject_first:
                if judged:
                    contra.append((float(p[2]), r))
                continue
            if subject.another_subject(a, b):
                if judged:
                    elsewhere.append((float(p[2]), r))
                continue
            old = subject.replaces(b, a)
            if old is None and subject.names_another_target(b, a):
                continue
            if old is not None and (target.level == "intra" or subject.shared_topic(b, a, old) >= 0.5
                                    or subject.names_only(a, old)):
                contra.append((max(float(p[2]), 0.99), r))
            elif r.type == "team" and subject.changes(b) and subject.shared_topic(b, a, subject.read(a).value) >= 0.6 \
                    and subject.new_value(b, a):
                contra.append((max(float(p[2]), 0.9), r))  # a decision changed: "Lab meeting moves to Thursdays"
            elif judged and not subject.same_value(a, b):
                contra.append((float(p[2]), r))
        return contra, elsewhere

    def _vectors(self, memories: Sequence[Memory]) -> np.ndarray:
        out = [m.embedding for m in memories]
        missing = sorted({m.maintained for m, e in zip(memories, out) if e is None})
        if missing:
            if self.embedder is None:
                raise ValueError("the pair judge needs memory vectors; give the policy an embedder")
            found = dict(zip(missing, np.asarray(self.embedder.encode(missing), np.float32)))
            out = [e if e is not None else found[m.maintained] for m, e in zip(memories, out)]
        return np.stack([np.asarray(e, np.float32) for e in out])
