"""Stop decoding a row once its request's deadline has passed: no generation outlives its caller.

A batch decodes several callers' requests together. Each carries a ``deadline`` (wall-clock
seconds, :attr:`ChatRequest.deadline`): the ingress sets its call timeout there, and the LLM
deployment moves it to "now" when its caller is cancelled (a client that disconnected). The
criterion reads each request's deadline at every step, so a row stops within one token of
its caller giving up, and the others in the batch go on.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from memgraft.models.llm.base import ChatRequest


def any_deadline(requests: Sequence[ChatRequest]) -> bool:
    return any(r.deadline is not None for r in requests)


def deadline_criteria(requests: Sequence[ChatRequest], width: int, eos_ids: Sequence[int]) -> Any:
    """A transformers ``StoppingCriteria`` over the batch's rows; its ``cut`` holds the rows it stopped before
    they ended (their finish_reason is "timeout"). ``width``: the padded prompt length."""
    import torch
    from transformers import StoppingCriteria

    class DeadlineCriteria(StoppingCriteria):
        def __init__(self) -> None:
            self.requests, self.cut = list(requests), set()
            self.eos = torch.tensor(sorted(eos_ids), dtype=torch.long)

        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            now = time.time()
            done = [r.deadline is not None and now >= r.deadline for r in self.requests]
            for i, d in enumerate(done):
                if d and i not in self.cut and not torch.isin(input_ids[i, width:].cpu(), self.eos).any():
                    self.cut.add(i)
            return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

    return DeadlineCriteria()
