"""Retrieve: HiCoMER's validity-aware ranking (S_final = S_sem + λ·log σ(S_val)).

In: a team, a question and a time, over a maintained bank. Out: ranked
:class:`~memgraft.collab.retrieve.retriever.Hit` s (memory plus dense, semantic and
validity scores).

* :mod:`.retriever` dense candidates, semantic rerank, the validity term;
* :mod:`.validity` the validity score S_val: the trained scorer or the maintained state's.
"""
