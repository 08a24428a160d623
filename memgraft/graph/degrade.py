"""A degraded copy of a graph: a seeded share of its entities and relations dropped (HGMem's Table 4).

    python -m memgraft.graph.degrade --graph G --output G_half [--drop 0.5] [--seed 0]

Why: the paper checks how much HGMem leans on graph quality by running the same
questions on a graph with half its entities and relations removed. Chunks stay (the
documents are the same); a relation whose endpoint was dropped goes too, as do the
mentions of what was dropped. Vectors are the original rows (nothing is re-embedded),
indexes are rebuilt, and the manifest says what was dropped, with which seed, from where.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import typer

from memgraft.config import IndexSettings
from memgraft.graph import vector_index
from memgraft.graph.folder import VECTOR_KINDS, GraphData, GraphFolder


def _keep(table: pa.Table, column: str, ids: set[str]) -> pa.Table:
    return table.filter(pc.is_in(table[column], value_set=pa.array(sorted(ids), pa.string())))


def degrade(data: GraphData, drop: float = 0.5, seed: int = 0) -> GraphData:
    """``data`` with ``drop`` of its entities and, independently, of its relations removed (seeded).

    Exactly ``round(drop * n)`` of the ``n`` entities go. Of the relations, a seeded ``drop`` share goes and so
    does every relation with a dropped endpoint, so at ``drop=0.5`` far fewer than half are left: a half of those
    whose two ends both survive (on a random graph about a quarter, so an eighth in all). The manifest's
    ``degraded.relations`` says how many.
    """
    if not 0.0 <= drop < 1.0:
        raise ValueError(f"drop must be in [0, 1), not {drop}")
    rng = np.random.default_rng(seed)
    t = data.tables

    def survivors(ids: list[str]) -> set[str]:
        n_keep = len(ids) - int(round(drop * len(ids)))
        return {ids[i] for i in rng.permutation(len(ids))[:n_keep]}

    entities = survivors(t["entities"].column("entity_id").to_pylist())
    rels = t["relations"]
    linked = pc.and_(pc.is_in(rels["source_id"], value_set=pa.array(sorted(entities), pa.string())),
                     pc.is_in(rels["target_id"], value_set=pa.array(sorted(entities), pa.string())))
    relations = survivors(rels.column("relation_id").to_pylist()) & set(rels.filter(linked).column("relation_id").to_pylist())
    tables = dict(t)
    tables["entities"] = _keep(t["entities"], "entity_id", entities)
    tables["relations"] = _keep(rels, "relation_id", relations)
    tables["entity_mentions"] = _keep(t["entity_mentions"], "entity_id", entities)
    tables["relation_mentions"] = _keep(t["relation_mentions"], "relation_id", relations)
    vectors = dict(data.vectors)
    for kind, key in (("entities", "entity_id"), ("relations", "relation_id")):  # each kept row's own vector
        row = {i: n for n, i in enumerate(t[kind].column(key).to_pylist())}
        vectors[kind] = data.vectors[kind][[row[i] for i in tables[kind].column(key).to_pylist()]]
    manifest: dict[str, Any] = {**data.manifest, "degraded": {
        "drop": drop, "seed": seed, "from": data.manifest.get("output", ""),
        "entities": [len(entities), t["entities"].num_rows], "relations": [len(relations), rels.num_rows]}}
    manifest["counts"] = {**manifest.get("counts", {}), "entities": len(entities), "relations": len(relations)}
    return replace(data, tables=tables, vectors=vectors, manifest=manifest)


def write_degraded(graph: str, output: str, drop: float = 0.5, seed: int = 0,
                   index: IndexSettings | None = None) -> dict[str, Any]:
    data = GraphFolder(graph).read()
    data.manifest.setdefault("output", graph)
    out = degrade(data, drop, seed)
    settings = index or IndexSettings()
    indexes = {k: vector_index.to_bytes(vector_index.build_index(out.vectors[k], settings)) for k in VECTOR_KINDS}
    GraphFolder(output).write(out, indexes)
    return out.manifest["degraded"]


app = typer.Typer(add_completion=False)


@app.command()
def main(graph: str = typer.Option(..., help="the graph folder to copy"),
         output: str = typer.Option(..., help="the degraded copy's folder"),
         drop: float = typer.Option(0.5, help="share of entities, and of relations, to drop"),
         seed: int = typer.Option(0, help="which ones: the same seed drops the same ones")) -> None:
    info = write_degraded(graph, output, drop, seed)
    typer.echo(f"kept {info['entities'][0]} of {info['entities'][1]} entities and {info['relations'][0]} of "
               f"{info['relations'][1]} relations in {output}")


if __name__ == "__main__":
    app()
