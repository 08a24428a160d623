"""Resolve and answer: from ranked evidence to a grounded answer.

In: a question's ranked memories. Out: the memories that survive conflict resolution
(the lower-priority side of each contradiction dropped, with why) and the answer the
LLM gives from them alone.

* :mod:`.conflicts` which pieces of evidence contradict (judged by an updater policy);
* :mod:`.resolve` the priority P(m) = α·[team] + β·[valid] + γ·NormTime and the drop rule;
* :mod:`.grounded` the answer prompt over the kept memories.
"""
