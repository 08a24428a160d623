"""The tables ``bench/build_graphs.py`` prints from its result: stages, efficiency, memory, CPU, recall."""

from __future__ import annotations

from typing import Any

from bench.sampling import NOISE_LIMIT, cpu_table


def print_tables(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(width=130)
    p, b, m, r = result["pipeline"], result["bare"], result["memory"], result["recall"]
    e2e = p["seconds"]

    t = Table(title=f"graph build on {result['corpus_name']}: {p['docs']} docs, {p['chunks']} chunks, "
                    f"{p['tokens']:,} tokens; {p['counts']['entities']:,} entities, {p['counts']['relations']:,} relations")
    for col in ("stage", "items", "seconds", "rate", "share of end-to-end", "noise"):
        t.add_column(col, justify="left" if col == "stage" else "right")
    t.add_row("[bold]pipeline end to end (Ray)", f"{p['chunks']} chunks", f"{e2e:.1f}",
              f"{p['chunks'] / e2e:.1f} chunks/s, {p['tokens'] / e2e:,.0f} tok/s", "1.00",
              f"{result['cpu']['pipeline']['other_cores']:.2f}")
    for k, v in p["phases"].items():
        t.add_row(f"  pipeline: {k}", "", f"{v:.1f}", "", f"{v / e2e:.2f}", "")
    t.add_section()
    for k, v in b["seconds"].items():
        n = b["items"][k]
        t.add_row(f"bare: {k}", f"{n} {b['units'][k]}", f"{v:.1f}", f"{n / v:.1f} {b['units'][k]}/s", f"{v / e2e:.2f}",
                  f"{b['other_cores'][k]:.2f}")
    t.add_row("[bold]bare: sum", "", f"{result['bare_sum_s']:.1f}",
              f"{p['chunks'] / result['bare_sum_s']:.1f} chunks/s, {p['tokens'] / result['bare_sum_s']:,.0f} tok/s",
              f"{result['bare_sum_s'] / e2e:.2f}", "")
    con.print(t)
    con.print("noise: cores that processes outside this run kept busy meanwhile (of "
              f"{result['pipeline']['cluster_cpus']:g}); figures taken under noise are not comparable")
    if result["noisy"]:
        con.print(f"[bold red]warning: other processes used over {NOISE_LIMIT} cores during: {', '.join(result['noisy'])}; "
                  "rerun on a quiet machine (--wait-quiet) before trusting the ratios")

    eff = result["efficiency"]
    et = Table(title="efficiency: bare seconds / pipeline seconds (1.00 = Ray costs nothing)")
    for col in ("ratio", "value"):
        et.add_column(col, justify="left" if col == "ratio" else "right")
    et.add_row("[bold]bare sum / end to end", f"[bold]{eff['overall']:.2f}")
    et.add_row("bare chunking+spaCy+embed chunks / pipeline chunk_extract_embed", f"{eff['chunk_extract_embed']:.2f}")
    et.add_row("bare embed entities+relations / pipeline embed_graph", f"{eff['embed_graph']:.2f}")
    et.add_row("bare sum / (end to end - the driver's read, merge, index, write)", f"{eff['ray_part']:.2f}")
    et.add_row(f"CPU-seconds: bare {sum(b['cpu_s'].values()):.0f} / pipeline's processes "
               f"{result['cpu']['pipeline']['own_cpu_s']:.0f}", f"{eff['cpu']:.2f}")
    con.print(et)

    loads = ", ".join(f"{k} {v:.1f} s" for k, v in b["loads_s"].items())
    con.print(f"Ray start-up (not in end to end): {result['ray_init_s']:.1f} s on {p['cluster_cpus']:g} CPUs; "
              f"bare model loads (not in bare sum): {loads}; torch threads in bare stages: {b['torch_threads']}; "
              f"settings: embedder {result['settings']['embedder_dtype']} (ran in: pipeline "
              + ", ".join(f"{k} {v}" for k, v in p.get("dtypes", {}).items()) + f"; bare {b.get('dtype')}), "
              f"actors extract/embed "
              f"{result['settings']['extract_actors']}/{result['settings']['embed_actors']}; bare chunks identical "
              f"to the pipeline's: {'yes' if result['same_chunks'] else 'NO'}")

    mt = Table(title="peak memory (MiB, RSS)")
    for col in ("phase", "driver+Ray total", "driver", "Ray workers (sum)", "largest worker", "Ray system"):
        mt.add_column(col, justify="left" if col == "phase" else "right")
    for phase, peak in m["sampled"].items():
        mt.add_row(phase, *(f"{peak.get(k, 0):,.0f}" for k in ("total", "driver", "workers", "largest_worker", "ray_system")))
    con.print(mt)
    con.print(f"driver peak RSS over the whole run (getrusage): {m['driver_peak_mb']:,.0f} MiB; sampled every "
              f"{m['interval_s']} s; peaks of each column are taken apart, so they need not add up")

    con.print(cpu_table(result["cpu"]))
    print_recall(result, con)


def print_recall(result: dict[str, Any], con: Any = None) -> None:
    """The recall table and the graph's entity counts (all that --recall-only prints, after the build's line)."""
    from rich.console import Console
    from rich.table import Table

    con = con or Console(width=130)
    p, r = result["pipeline"], result["recall"]
    if "cpu" not in result:  # --recall-only: the build's own line, which the stage table holds otherwise
        con.print(f"graph build on {result['corpus_name']}: {p['docs']} docs, {p['chunks']} chunks, "
                  f"{p['counts']['entities']:,} entities, {p['counts']['relations']:,} relations in {p['seconds']:.0f} s")
    left = f"; {r['questions_left_out']} left out, not all their passages in the slice" if r.get("questions_left_out") else ""
    rt = Table(title=f"MuSiQue supporting-passage recall, {r['questions']} questions, {r['gold_passages']} gold passages "
                     f"({r['gold_in_graph']} in the graph{left})")
    ks = [k for k in next(iter(r["retrievers"].values())) if k.startswith("recall@")]
    rt.add_column("retriever")
    for k in ks:
        rt.add_column(k, justify="right")
    rt.add_column("passages returned (mean)", justify="right")
    labels = {"dense": "dense chunks (NaiveRAG)", "graph": f"graph: top-{r['top_entities']} entities -> their chunks"}
    for name, scores in r["retrievers"].items():
        rt.add_row(labels.get(name, name), *(f"{scores[k]:.3f}" for k in ks), f"{scores['mean_passages']:.1f}")
    dense, graph = r["retrievers"]["dense"], r["retrievers"]["graph"]
    rt.add_row("graph / dense", *(f"{graph[k] / dense[k]:.2f}" if dense[k] else "-" for k in ks), "")
    con.print(rt)
    if r.get("entities"):
        e = r["entities"]
        con.print(f"entities (noun_chunk_filter: {r.get('noun_chunk_filter', '?')}): {e['all']:,} in all, "
                  f"{e['named']:,} named, {e['concepts']:,} concepts, of which {e['one_lower_case_word_concepts']:,} "
                  f"are one lower-case word", soft_wrap=True)
