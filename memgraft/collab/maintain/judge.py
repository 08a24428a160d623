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

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np
import torch
from torch import nn

from memgraft.collab.maintain import change, marks, restated, spelled, subject, topic, values
from memgraft.collab.maintain.features import N_LEXICAL, pair_features
from memgraft.collab.maintain.judgement import LABELS, Judgement, Target, may_revise, normalise
from memgraft.collab.types import Action, Memory, Relation
from memgraft.collab.maintain.weights import read_weights, save_weights, weights_path

if TYPE_CHECKING:
    from memgraft.collab.maintain.pair_encoder import PairEncoder
    from memgraft.config import HiCoMERSettings
    from memgraft.models.embedder import Embedder

FORMAT = "memgraft.pair-judge/1"
BUNDLED = Path(__file__).parent.parent / "assets" / "judge-all-MiniLM-L6-v2.pt"
# in its own group, a note that names the team memory's subject (or asks its lower-case question) and reads more
# contradicting than agreeing is overruled from this P(contradiction) on: the judge's "neutral" there is its doubt
# about the subject, which the names settle ("G. Whittingham" / "Guy Whittingham")
INTRA_FLOOR = 0.3
# a team decision that changes a measure ("cut to 7 days", "moving stand-up to 10:00") changes an earlier memory of
# that measure when it has at least this share of the memory's other words; in the decision's own group, any
# ("Updated the onboarding email to say the trial is 14 days" in the group that cuts the trial)
MEASURE_SHARE = 0.5


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
    second_max: int = 0  # at most this many pairs per call go to the second opinion, the most doubtful first (0: all)
    coexisting: bool = True  # a note its own group states again: the group's other team memories do not overrule it
    one_subject: bool = True  # a memory supersedes one subject's memories (the one it contradicts most surely)
    subject_first: bool = True  # read who each memory is about before judging (memgraft.collab.maintain.subject)
    topic_from: int = 50  # team memories from which unsure-subject pairs are read for their topics (0: never)

    @classmethod
    def from_settings(cls, model: PairJudge, hicomer: "HiCoMERSettings", embedder: "Embedder | None" = None,
                      second: "PairEncoder | None" = None) -> "JudgePolicy":
        """The policy over ``model`` with ``hicomer``'s threshold and second-opinion blend (``second``: its encoder)."""
        return cls(model, embedder=embedder, threshold=hicomer.judge_threshold, second=second,
                   second_from=hicomer.judge_encoder_from, second_weight=hicomer.judge_encoder_weight,
                   second_max=hicomer.judge_encoder_max_pairs,
                   coexisting=hicomer.judge_coexisting, one_subject=hicomer.judge_one_subject,
                   subject_first=hicomer.judge_subject_first, topic_from=hicomer.judge_topic_from)

    def judge_pairs(self, a: Sequence[Memory], b: Sequence[Memory]) -> np.ndarray:
        """P(neutral, compatible, contradiction) per pair, [n, 3]."""
        if not a:
            return np.zeros((0, len(LABELS)), np.float32)
        # an acronym one memory spells out is read in its words ("the MPIA": "the Max Planck Institute for ...")
        texts_a, texts_b = map(list, zip(*(spelled.spell_out(x.maintained, y.maintained) for x, y in zip(a, b))))
        u, v = self._vectors(a, texts_a), self._vectors(b, texts_b)
        return self.blend(texts_a, texts_b, self.model.probabilities(pair_features(texts_a, texts_b, u, v)))

    def blend(self, texts_a: Sequence[str], texts_b: Sequence[str], probs: np.ndarray) -> np.ndarray:
        """The judge's probabilities with the second opinion averaged in where the pair is in doubt."""
        if self.second is None or not len(probs):
            return probs
        doubt = np.flatnonzero(probs[:, 2] >= self.second_from)
        if 0 < self.second_max < len(doubt):  # the most doubtful: P(contradiction) nearest the threshold
            nearest = np.argsort(np.abs(probs[doubt, 2] - self.threshold), kind="stable")[: self.second_max]
            doubt = np.sort(doubt[nearest])
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
            sure = [max((p for p, r in self._contradictions(targets[i], by_target[id(targets[i])])[0]
                         if r.memory_id == ref), default=0.0) for i in idx]
            anchor = idx[int(np.argmax(sure))]
            # one that the reference says in words is replaced ("Airflow is out") is not judged again
            others = [i for i in idx if i != anchor and change.replaces(
                next(r.maintained for _, r in by_target[id(targets[i])] if r.memory_id == ref),
                targets[i].memory.maintained) is None]
            if not others:
                continue
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
        elsewhere_ids = {r.memory_id for _, r in elsewhere}
        agree = [(float(p[1]), r) for p, r in scored if p[1] > p[0] and r.memory_id not in elsewhere_ids]
        if agree:
            p, ref = max(agree, key=lambda x: x[0])
            return Judgement(Relation.compatible, Action.keep, keep, f"agrees with {ref.memory_id} (p={p:.2f})")
        if elsewhere:
            p, ref = max(elsewhere, key=lambda x: x[0])
            return Judgement(Relation.neutral, Action.keep, keep,
                             f"read as conflicting with {ref.memory_id} (p={p:.2f}), which is about another subject")
        return Judgement(Relation.neutral, Action.keep, keep, "no memory on the same subject and attribute")

    def _contradictions(self, target: Target, scored: list[tuple[np.ndarray, Memory]]
                        ) -> tuple[list[tuple[float, Memory]], list[tuple[float, Memory]]]:
        """The references that contradict the target, and those the judge read so but that name another subject.

        Subject first (:mod:`memgraft.collab.maintain.subject`): a reference naming another subject never contradicts,
        unless both answer one lower-case question, asked or stated word for word (:func:`~memgraft.collab.maintain.
        topic.same_question`, :func:`~memgraft.collab.maintain.topic.same_phrase`), whose answers the names are;
        one stating the target's own value, or naming the same things and numbers, no more and no fewer
        (:func:`~memgraft.collab.maintain.marks.same_marks`), agrees, whatever the judge read; one saying in words that the
        target's value is replaced ("... instead of Tuesdays") contradicts, when it is on the target's topic (or the
        target's whole value is what it replaces and they share a word: "(was Monday mornings)"),
        and one that names another value it replaces contradicts only memories stating that one.
        A pair the judge reads as agreeing, whose value lists differ by an item, disagrees on the whole value; a note
        naming its own group's team memory's subject is read as contradicting from ``INTRA_FLOOR``."""
        a = target.memory.maintained
        contra, elsewhere = [], []
        for p, r in scored:
            b = r.maintained
            judged = p[2] >= self.threshold or (p[1] > p[0] and self._list_change(a, b)) or (
                target.level == "intra" and p[2] > p[1] and p[2] >= INTRA_FLOOR
                and (subject.same_subject(a, b) or (self.topic_from and topic.same_question(a, b))))
            if not self.subject_first:
                if judged:
                    contra.append((float(p[2]), r))
                continue
            if self._overruled_in_group(target, r, a, b):
                contra.append((max(float(p[2]), INTRA_FLOOR), r))
                continue
            if subject.another_subject(a, b) and not (self.topic_from and (topic.same_question(a, b)
                                                                           or topic.same_phrase(a, b))):
                if judged:
                    elsewhere.append((float(p[2]), r))
                continue
            old = change.replaces(b, a)
            if old is None and change.names_another_target(b, a):
                continue
            if old is not None and (target.level == "intra" or change.shared_topic(b, a, old) >= 0.5
                                    or change.names_only(a, old)
                                    or (change.states_only(a, old) and change.shared_topic(b, a, old) > 0)):
                contra.append((max(float(p[2]), 0.99), r))
            elif r.type == "team" and self._decision_changed(target, a, b):
                contra.append((max(float(p[2]), 0.9), r))  # a decision changed: "Lab meeting moves to Thursdays"
            elif r.type == "team" and self.topic_from and topic.same_question(a, b) and topic.asked_alike(a, b) \
                    and (marks.other_marks(a, b) or marks.other_answer(a, b)):
                # a team record answers the target's own question with another name: "Starting in 2018: France, if
                # you ask who won the world cup soccer 4 years ago" (the judge read "... Germany, ..." as agreeing)
                contra.append((max(float(p[2]), self.threshold), r))
            elif judged and not marks.same_value(a, b) and not subject.restates(a, b) and (
                    self._list_change(a, b) or not (marks.same_marks(a, b) or restated.names_again(a, b))):
                if self._other_topic(target, a, b):
                    elsewhere.append((float(p[2]), r))
                else:
                    contra.append((float(p[2]), r))
        return contra, elsewhere

    def _overruled_in_group(self, target: Target, r: Memory, a: str, b: str) -> bool:
        """Note ``a`` and its own group's team memory ``b`` are on one topic (:func:`~memgraft.collab.maintain.topic.
        same_topic`: a word they share is rarer in the team than each word only one has) and the note names a value
        the record does not: the team's record overrules it ("my money's on 2002 re the last time the raiders made
        the playoffs" beside "From 2016, 'when was the last time the raiders made the playoffs' gets 2016"), whatever
        names the subject reader takes for subjects."""
        return (target.level == "intra" and r.type == "team" and target.words is not None and self.topic_from > 0
                and marks.names_more(a, b) and topic.same_topic(a, b, target.words, self.topic_from))

    def _decision_changed(self, target: Target, a: str, b: str) -> bool:
        """Team record ``b`` says a decision on ``a``'s topic changed: it states a change ("moves to", "cut to"),
        shares most of ``a``'s words or changes its measure (``MEASURE_SHARE`` of its words; in ``a``'s own group,
        any), states a value ``a`` does not, and is not on another topic."""
        if not change.changes(b):
            return False
        measured = change.measure_change(b, a)
        on_topic = change.shared_topic(b, a, subject.read(a).value) >= 0.6 or (
            measured >= MEASURE_SHARE if target.level == "inter" else measured > 0)
        return on_topic and change.new_value(b, a) and not self._other_topic(target, a, b)

    @staticmethod
    def _list_change(a: str, b: str) -> bool:
        """The two values are lists that lost, gained or replaced an item."""
        return values.list_change(a, b) or change.item_change(a, b)

    def _other_topic(self, target: Target, a: str, b: str) -> bool:
        """The two answer two lower-case questions (:func:`~memgraft.collab.maintain.topic.other_question` and
        :func:`~memgraft.collab.maintain.topic.asked_otherwise`, read from the pair alone), or neither names a
        subject and the team's words say two topics (:func:`~memgraft.collab.maintain.topic.other_topic`): "most
        points in a nba game" is not "most assists".
        Also where ``b`` states a change: "Starting in 2020, the records give ..." dates a record on its own
        question. ``topic_from`` 0 reads neither."""
        if not self.topic_from:
            return False
        # a change stated on another question changes that one ("The answer to 'who won ...' changed in 2008 to
        # ..."), and a question narrowed by a word is another question ("... a partial solar eclipse")
        if topic.other_question(a, b) or topic.asked_otherwise(a, b):
            return True
        # one question asked in both is one topic, whatever the team's counts say of the words around it
        return target.words is not None and subject.same_subject(a, b) is None and not topic.same_question(a, b) \
            and topic.other_topic(a, b, target.words, self.topic_from)

    def _vectors(self, memories: Sequence[Memory], texts: Sequence[str]) -> np.ndarray:
        """The vectors of ``texts``: a memory's own where the text is its maintained text (or nothing can embed
        another), else embedded."""
        out = [m.embedding if t == m.maintained or self.embedder is None else None for m, t in zip(memories, texts)]
        missing = sorted({t for t, e in zip(texts, out) if e is None})
        if missing:
            if self.embedder is None:
                raise ValueError("the pair judge needs memory vectors; give the policy an embedder")
            found = dict(zip(missing, np.asarray(self.embedder.encode(missing), np.float32)))
            out = [e if e is not None else found[t] for t, e in zip(texts, out)]
        return np.stack([np.asarray(e, np.float32) for e in out])
