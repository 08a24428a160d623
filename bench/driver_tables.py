"""The tables ``bench/driver.py`` prints from its result: the sweep, the worker's path, py-spy, tokens, CPU."""

from __future__ import annotations

import statistics
from typing import Any

from bench.sampling import cpu_table

PAPER_TOKENS_PER_QUESTION = 4436  # HGMem paper, NarrativeQA


def print_tables(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    con = Console(width=150)
    d = result["delay_s"]
    t = Table(title=f"run_answers against the stand-in (delay {d:g} s per call; {result['graph_counts']}); "
                    "ideal q/s = in flight / (calls per question x delay)")
    cols = ("method", "in flight", "workers", "questions", "calls/q", "ideal q/s", "measured q/s", "efficiency",
            "p50 latency (ideal)", "server peak in flight", "start-up s", "errors", "note")
    for c in cols:
        t.add_column(c, justify="left" if c in ("method", "note") else "right")
    for r in result["levels"]:
        note = "as configured: llm_batch_size=" + str(r["settings"]["llm_batch_size"]) if r["settings"]["extra"] else ""
        t.add_row(r["method"], str(r["in_flight"]), str(r["workers"]), str(r["questions"]),
                  f"{r['calls_per_question']:.1f}", f"{r['ideal_qps']:.2f}", f"{r['measured_qps']:.2f}",
                  f"[bold]{r['efficiency']:.2f}", f"{r['latency_p50_s']:.2f} ({r['latency_ideal_s']:.1f})",
                  str(r["server_peak_in_flight"]), f"{r['startup_s']:.1f}", str(r["errors"]), note)
    if result["levels"]:
        con.print(t)
    for r in result["levels"]:
        if r.get("first_error"):
            con.print(f"first error ({r['method']}, {r['in_flight']} in flight): {r['first_error']}")

    w = result.get("worker_path") or {}
    wt = Table(title="where a question's time goes on a worker, one thread, no delay, in this process "
                     "(the CPU-bound ceiling of one worker process = 1 / its seconds per question)")
    for c in ("method", "part", "ms per question", "share"):
        wt.add_column(c, justify="left" if c in ("method", "part") else "right")
    for m in result["methods"]:
        if m not in w:
            continue
        total = w[m]["seconds_per_question"]
        for part, s in w[m]["parts"].items():
            wt.add_row(m, part, f"{s * 1000:.1f}", f"{s / total:.2f}")
        wt.add_row(m, "total in this process", f"{total * 1000:.1f}", "1.00")
        wt.add_row(m, "[bold]on a worker: total - stand-in + calls x HTTP round trip",
                   f"[bold]{w[m]['worker_seconds_per_question'] * 1000:.1f}", f"ceiling {w[m]['ceiling_qps']:.0f} q/s")
        wt.add_section()
    if w:
        wt.add_row("", "one HTTP round trip to a zero-delay stand-in", f"{w['http_round_trip_s'] * 1000:.1f}", "")
        wt.add_row("", f"embedder warm-up, {w['embedder_dtype']}: one query per length 1-64 words (once per worker; "
                       "not in the rows above)", f"{w['embedder_warm_up_s'] * 1000:.0f}", "")
        con.print(wt)

    for r in result["levels"]:
        if r.get("py_spy", {}).get("shares"):
            st = Table(title=f"py-spy: the worker's active samples during {r['method']} at {r['in_flight']} in flight "
                             f"({r['py_spy']['samples']} samples, 100 Hz, 5 s, threads waiting on I/O not counted)")
            st.add_column("part")
            st.add_column("share", justify="right")
            for k, v in r["py_spy"]["shares"].items():
                st.add_row(k, f"{v:.2f}")
            con.print(st)

    tt = Table(title=f"tokens per question (prompt + completion) on MuSiQue; HGMem paper: "
                     f"{PAPER_TOKENS_PER_QUESTION:,} per NarrativeQA question")
    for c in ("method", "LLM answers / counted as", "questions", "calls/q", "prompt/q", "completion/q", "total/q",
              "vs paper"):
        tt.add_column(c, justify="left" if c in ("method", "LLM answers / counted as") else "right")

    def token_row(m: str, label: str, x: dict[str, Any]) -> None:
        if x["tokens_per_question"] is None:
            tt.add_row(m, label, "0", "", "", "", "failed", "; ".join(x["errors"])[:60])
            return
        tt.add_row(m, label, str(x["answered"]) + (f" (+{x['failed']} failed)" if x["failed"] else ""),
                   f"{x['calls_per_question']:.1f}", f"{x['prompt_tokens_per_question']:,.0f}",
                   f"{x['completion_tokens_per_question']:,.0f}", f"[bold]{x['tokens_per_question']:,.0f}",
                   f"{x['tokens_per_question'] / PAPER_TOKENS_PER_QUESTION:.2f}")

    st, real = result.get("standin_tokens") or {}, result.get("real_llm") or {}
    for m in result["methods"]:
        if m in st:
            token_row(m, f"stand-in / {st['tokenizer']} tokens", st[m])
        if m in real:
            extra = escape(f" [{' '.join(real['overrides'])}]") if real["overrides"] else ""
            token_row(m, f"{real['llm']} ({real['backend']}){extra} / its tokens", real[m])
        sr = [r for r in result["levels"] if r["method"] == m and not r["settings"]["extra"] and r["questions"]]
        if sr:
            tt.add_row(m, "stand-in / whitespace words (the sweep)", str(sum(r["questions"] for r in sr)),
                       f"{sr[0]['calls_per_question']:.1f}", "", "",
                       f"{statistics.mean(r['tokens_per_question'] for r in sr):,.0f}", "")
    con.print(tt)
    if real:
        con.print("real-LLM seconds: " + ", ".join(f"{m} {real[m]['seconds']:.0f} s" for m in result["methods"] if m in real))

    con.print(cpu_table(result["cpu"]))
