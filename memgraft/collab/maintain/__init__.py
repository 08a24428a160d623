"""Maintain: the updater and everything that judges (the paper's first stage).

In: a time-aligned group of new memories (:class:`~memgraft.collab.types.MemoryGroup`)
and the team's bank. Out: the group written to the bank with one logged decision per
judged memory (relation, action, maintained text, validity).

* :mod:`.updater` gathers the targets (intra- and inter-group) and commits the decisions;
* :mod:`.judgement` is what a judgement is (``Target``, ``Judgement``, the one normalising
  rule, authority), which every policy shares;
* :mod:`.policies` the rules and LLM policies and the factory ``make_policy``;
  :mod:`.judge` the default trained pair judge, :mod:`.pair_encoder` its second opinion,
  :mod:`.weights` their shipped files;
* :mod:`.rules`, :mod:`.values`, :mod:`.carry` the text rules; :mod:`.prompts` the LLM's prompt.
"""
