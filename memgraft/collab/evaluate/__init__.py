"""Evaluate: HiCoMER and its baselines on one dataset, updaters x metrics and methods x metrics.

In: a dataset folder (stream, questions, gold decisions, memories). Out: an
:class:`~memgraft.collab.evaluate.harness.EvalReport` and the tables
``python -m memgraft.eval collab`` prints.

* :mod:`.harness` builds one bank per updater and scores every method;
* :mod:`.methods` the table's rows; :mod:`.baselines` and :mod:`.peer_baselines` the rival methods;
* :mod:`.metrics` the pure metric functions; :mod:`.report` the printed tables.
"""
