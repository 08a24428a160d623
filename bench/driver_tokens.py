"""Tokens per question for ``bench/driver.py``: real prompts answered by the stand-in, or by the real bundled LLM."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any


def copy_settings(settings: Any, overrides: list[str]) -> Any:
    """A new Settings: ``settings`` with ``overrides`` (``section.field=value``) applied."""
    from memgraft.config import Settings, apply_overrides

    return Settings.model_validate(apply_overrides(json.loads(settings.model_dump_json()), overrides))


def _token_rows(run_dir: Path, seconds: float) -> dict[str, Any]:
    rows = [json.loads(line) for line in (run_dir / "answers.jsonl").read_text().splitlines() if line.strip()]
    ok = [r for r in rows if not r.get("error")]
    mean = (lambda xs: statistics.mean(xs)) if ok else (lambda xs: None)
    return {
        "seconds": seconds, "answered": len(ok), "failed": len(rows) - len(ok),
        "errors": [r["error"] for r in rows if r.get("error")][:3],
        "prompt_tokens_per_question": mean([r["prompt_tokens"] for r in ok]),
        "completion_tokens_per_question": mean([r["completion_tokens"] for r in ok]),
        "tokens_per_question": mean([r["prompt_tokens"] + r["completion_tokens"] for r in ok]),
        "calls_per_question": mean([r["llm_calls"] for r in ok]),
        "answers": [r.get("answer") for r in ok][:5],
    }


def _answer_each(settings: Any, graph: Path, questions: Path, out: Path, kind: str, methods: list[str],
                 n: int) -> dict[str, Any]:
    """``{method: token rows}``, each method's first ``n`` questions answered into ``out/<kind>_<method>``."""
    from pipelines.answer_queries import run_answers

    res: dict[str, Any] = {}
    for method in methods:
        run_dir = out / f"{kind}_{method}"
        t = time.perf_counter()
        run_answers(settings, str(graph), str(questions), str(run_dir), method, limit=n)
        res[method] = _token_rows(run_dir, time.perf_counter() - t)
    return res


def standin_tokens(settings: Any, graph: Path, questions: Path, out: Path, methods: list[str], n: int,
                   server_cls: Any) -> dict[str, Any]:
    """Real prompts (real retrieval and memory), the stand-in's answers, counted in the bundled LLM's tokens."""
    from memgraft.models.llm.transformers_backend import ensure_hf_folder

    folder = ensure_hf_folder(settings.models.llm, settings.cache_path)
    res: dict[str, Any] = {"tokenizer": Path(folder).name, "questions": n}
    with server_cls(0.0, process=True, tokenizer=str(folder)) as server:
        s = copy_settings(settings, ["hgmem.max_in_flight=16", "models.llm_batch_size=16", "models.llm_backend=openai",
                                     f"models.llm_base_url={server.base_url}"])
        res.update(_answer_each(s, graph, questions, out, "tokens", methods, n))
    return res


def real_llm_tokens(settings: Any, graph: Path, questions: Path, out: Path, methods: list[str], n: int,
                    overrides: list[str]) -> dict[str, Any]:
    """The real bundled LLM (the profile's backend, transformers by default), ``n`` questions batched together."""
    s = copy_settings(settings, [f"hgmem.max_in_flight={max(1, n)}", *overrides])
    res: dict[str, Any] = {"backend": s.models.llm_backend, "llm": s.models.llm, "questions": n, "overrides": overrides}
    res.update(_answer_each(s, graph, questions, out, "real", methods, n))
    return res
