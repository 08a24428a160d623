"""Train, the library side: the data, rewards and trainers the jobs in ``training/`` run.

In: HiCoMER datasets (generated streams, the real conversions). Out: labelled pairs and
a trained pair judge (:mod:`.judge_data`, :mod:`.judge_train`), SFT / GRPO records of gold
decisions (:mod:`.training_data`) and the GRPO reward (:mod:`.rewards`). Nothing here
starts Ray: ``training/`` does.
"""
