"""Helpers for the evaluation tests: a judge on a scripted LLM, and hand-made dataset files and run folders."""

import json
from pathlib import Path

from memgraft.config import GenerationSettings
from memgraft.eval.judges import Judge
from memgraft.models.llm.base import ChatRequest
from tests.doubles import ScriptedLLM


def judge_of(script, **kw) -> tuple[Judge, ScriptedLLM]:
    llm = ScriptedLLM(script)
    return Judge.from_llm(llm, GenerationSettings(json_retries=2), **kw), llm


def user(request: ChatRequest) -> str:
    return request.messages[-1]["content"]


def _nocha_rows():
    rows = []
    for pair, (t_reply, f_reply) in {"p1": ("True, she does.", "False."),
                                     "p2": ("True.", "True, I think."),
                                     "p3": ("Yes.", "Hard to say; it may hold.")}.items():
        for label, reply in ((True, t_reply), (False, f_reply)):
            rows.append({"id": f"{pair}/{'true' if label else 'false'}", "question": "Is it true?", "claim": f"claim {pair} {label}",
                         "label": label, "pair_id": pair, "method": "hgmem", "answer": reply, "error": None})
    return rows


def _jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _musique(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "mini_corpus.json"
    corpus.write_text(json.dumps([{"title": "A", "text": "first A"}, {"title": "B", "text": "only B"},
                                  {"title": "A", "text": "second A"}]))
    questions = tmp_path / "mini.json"
    questions.write_text(json.dumps([{
        "id": "2hop__1", "question": "Q?", "answer": "x", "answer_aliases": ["y"],
        "paragraphs": [{"title": "A", "paragraph_text": "second A", "is_supporting": True},
                       {"title": "B", "paragraph_text": "only B", "is_supporting": False}],
        "question_decomposition": [{}, {}]}]))
    return questions, corpus


def _write_run(run: Path, rows_and_traces: list[tuple[dict, dict | None]], absolute: bool = False) -> None:
    (run / "traces").mkdir(parents=True, exist_ok=True)
    lines = []
    for row, trace in rows_and_traces:
        if trace is not None:
            path = run / "traces" / f"{row['id']}.{row['method']}.json"
            path.write_text(json.dumps(trace))
            row = {**row, "trace": str(path) if absolute else f"some/old/cwd/traces/{path.name}"}
        else:
            row = {**row, "trace": None}
        lines.append(json.dumps(row))
    (run / "answers.jsonl").write_text("\n".join(lines) + "\n")
