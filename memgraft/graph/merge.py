"""Merge per-chunk mentions into one graph.

Entities are keyed by their normalised name: the commonest surface name and
type win, descriptions are merged (distinct, in chunk order, capped), chunk
links unioned. Relations are undirected pairs of entities: weights summed,
descriptions merged, chunk links unioned. The merge is a pure function of the
mention tables, which is what makes rebuilds identical and appends/deletes cheap.
"""

from __future__ import annotations

from typing import Any, Iterable

import polars as pl
import pyarrow as pa

from memgraft.ids import entity_id, normalise_name, relation_id

DESCRIPTION_SEPARATOR = " | "

ENTITY_MENTION_SCHEMA = pa.schema([
    ("chunk_id", pa.string()), ("doc_id", pa.string()), ("position", pa.int32()),
    ("entity_id", pa.string()), ("name", pa.string()), ("type", pa.string()), ("description", pa.string()),
])
RELATION_MENTION_SCHEMA = pa.schema([
    ("chunk_id", pa.string()), ("doc_id", pa.string()), ("position", pa.int32()),
    ("relation_id", pa.string()), ("source_id", pa.string()), ("target_id", pa.string()),
    ("description", pa.string()), ("strength", pa.float64()),
])
ENTITY_SCHEMA = pa.schema([
    ("entity_id", pa.string()), ("name", pa.string()), ("type", pa.string()),
    ("description", pa.string()), ("chunk_ids", pa.list_(pa.string())),
])
RELATION_SCHEMA = pa.schema([
    ("relation_id", pa.string()), ("source_id", pa.string()), ("target_id", pa.string()),
    ("description", pa.string()), ("weight", pa.float64()), ("chunk_ids", pa.list_(pa.string())),
])


def mention_tables(
    chunk_ids: Iterable[str], doc_ids: Iterable[str],
    entities: Iterable[list[dict[str, Any]]], relations: Iterable[list[dict[str, Any]]],
) -> tuple[pa.Table, pa.Table]:
    """Flatten the extractor's nested per-chunk lists into two mention tables with ids."""
    ents: dict[str, list] = {f.name: [] for f in ENTITY_MENTION_SCHEMA}
    rels: dict[str, list] = {f.name: [] for f in RELATION_MENTION_SCHEMA}
    for cid, did, elist, rlist in zip(chunk_ids, doc_ids, entities, relations):
        for pos, e in enumerate(elist or []):
            if not normalise_name(e["name"]):
                continue
            for key, value in (("chunk_id", cid), ("doc_id", did), ("position", pos), ("entity_id", entity_id(e["name"])),
                               ("name", e["name"].strip()), ("type", e["type"]), ("description", e["description"] or "")):
                ents[key].append(value)
        for pos, r in enumerate(rlist or []):
            src, tgt = entity_id(r["source"]), entity_id(r["target"])
            if src == tgt or not normalise_name(r["source"]) or not normalise_name(r["target"]):
                continue
            src, tgt = sorted((src, tgt))
            for key, value in (("chunk_id", cid), ("doc_id", did), ("position", pos), ("relation_id", relation_id(src, tgt)),
                               ("source_id", src), ("target_id", tgt), ("description", r["description"] or ""),
                               ("strength", float(r.get("strength", 1.0)))):
                rels[key].append(value)
    return pa.table(ents, schema=ENTITY_MENTION_SCHEMA), pa.table(rels, schema=RELATION_MENTION_SCHEMA)


def _merged_description(col: str, max_parts: int) -> pl.Expr:
    return pl.col(col).filter(pl.col(col) != "").unique(maintain_order=True).head(max_parts).str.join(DESCRIPTION_SEPARATOR)


def _mode_first(col: str) -> pl.Expr:
    """The commonest value, ties broken by first appearance (deterministic)."""
    return pl.col(col).mode(maintain_order=True).first()


def merge_entities(mentions: pa.Table, max_parts: int = 5) -> pa.Table:
    if mentions.num_rows == 0:
        return ENTITY_SCHEMA.empty_table()
    df = pl.from_arrow(mentions).sort(["chunk_id", "position"])
    out = (
        df.group_by("entity_id", maintain_order=True)
        .agg(
            _mode_first("name").alias("name"),
            _mode_first("type").alias("type"),
            _merged_description("description", max_parts).alias("description"),
            pl.col("chunk_id").unique().sort().alias("chunk_ids"),
        )
        .sort("entity_id")
    )
    return out.to_arrow().cast(ENTITY_SCHEMA)


def merge_relations(mentions: pa.Table, entity_ids: Iterable[str], max_parts: int = 5) -> pa.Table:
    """Relations whose two ends are both known entities, merged per undirected pair."""
    if mentions.num_rows == 0:
        return RELATION_SCHEMA.empty_table()
    known = pl.Series(list(entity_ids), dtype=pl.String)
    df = (
        pl.from_arrow(mentions)
        .filter(pl.col("source_id").is_in(known) & pl.col("target_id").is_in(known))
        .sort(["chunk_id", "position"])
    )
    out = (
        df.group_by("relation_id", maintain_order=True)
        .agg(
            pl.col("source_id").first(),
            pl.col("target_id").first(),
            _merged_description("description", max_parts).alias("description"),
            pl.col("strength").sum().alias("weight"),
            pl.col("chunk_id").unique().sort().alias("chunk_ids"),
        )
        .sort("relation_id")
    )
    return out.to_arrow().cast(RELATION_SCHEMA)


def merge_graph(entity_mentions: pa.Table, relation_mentions: pa.Table, max_parts: int = 5) -> tuple[pa.Table, pa.Table]:
    entities = merge_entities(entity_mentions, max_parts)
    relations = merge_relations(relation_mentions, entities.column("entity_id").to_pylist(), max_parts)
    return entities, relations


EMBED_DESCRIPTION_CHARS = 300


def entity_text(name: str, description: str) -> str:
    """What an entity is embedded as: its name and the start of its description.

    The cap keeps an entity seen in many chunks from costing a full
    model window to embed; the name carries most of what search matches on.
    """
    first = description.split(DESCRIPTION_SEPARATOR, 1)[0][:EMBED_DESCRIPTION_CHARS]
    return f"{name}: {first}" if first else name


def relation_text(source: str, target: str, description: str) -> str:
    """What a relation is embedded as.

    A description that already names both ends (as a shared sentence does) is
    embedded alone, so the many pairs drawn from one sentence share one text
    and one embedding; otherwise the ends are prefixed.
    """
    text = description[: EMBED_DESCRIPTION_CHARS * 2]
    low = text.casefold()
    if source.casefold() in low and target.casefold() in low:
        return text
    return f"{source} -- {target}: {text}"
