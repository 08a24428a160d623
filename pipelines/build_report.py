"""What a build reports: the summary it prints and the manifest it writes beside the graph."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memgraft.config import Settings
from memgraft.graph import vector_index
from memgraft.models.registry import display_name


@dataclass
class BuildReport:
    output: str
    counts: dict[str, int]
    processed_docs: int
    new_chunks: int
    new_tokens: int
    rejected: list[dict[str, str]]
    extract_failures: list[dict[str, str]]
    plan: dict[str, list[str]]
    timings: dict[str, float] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)  # per embedding stage: the dtype its model ran in

    @property
    def seconds(self) -> float:
        return self.timings.get("total", 0.0)

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.seconds if self.seconds else 0.0


def manifest(settings: Settings, report: BuildReport, indexes: dict[str, Any], dim: int) -> dict[str, Any]:
    m = settings.models
    return {
        "format": "memgraft-graph/1",
        "counts": report.counts,
        "built": {"processed_docs": report.processed_docs, "new_chunks": report.new_chunks, "new_tokens": report.new_tokens,
                  "plan": report.plan},
        "models": {"embedder": display_name(m.embedder), "dim": dim,
                   "extractor": settings.extraction.method if settings.extraction.method != "llm" else f"llm:{display_name(m.llm)}",
                   "spacy_model": display_name(m.spacy_model)},
        "indexes": {k: {"kind": vector_index.index_kind(v), "vectors": int(v.ntotal)} for k, v in indexes.items()},
        "settings": settings.model_dump(mode="json"),
        "timings_s": report.timings,
        "rejected": report.rejected,
        "extract_failures": report.extract_failures,
    }


def print_summary(report: BuildReport) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"graph built: {report.output}", show_header=False)
    c = report.counts
    rows = [
        ("documents", f"{c['documents']} ({report.processed_docs} processed this run)"),
        ("chunks", f"{c['chunks']} ({report.new_chunks} new)"),
        ("entities", str(c["entities"])), ("relations", str(c["relations"])),
        ("rejected", str(len(report.rejected))), ("extraction failures", str(len(report.extract_failures))),
        ("seconds", f"{report.seconds:.1f}"),
        ("tokens/s", f"{report.tokens_per_s:,.0f} ({report.new_tokens:,} tokens chunked, extracted, embedded)"),
        ("stage seconds", ", ".join(f"{k} {v:.1f}" for k, v in report.timings.items() if k != "total")),
    ]
    for k, v in rows:
        table.add_row(k, v)
    Console().print(table)
    for r in report.rejected[:20]:
        Console().print(f"  [yellow]rejected[/] {r['source']}: {r['reason']}")
