"""HGMem's hypergraph memory: the three operations keep the invariants, bad
operations are refused with clear errors, and exports round-trip."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html import escape

import networkx as nx
import pytest

from memgraft.hgmem.export import to_graphml, to_html, to_html_steps, to_networkx
from memgraft.hgmem.memory import (
    HypergraphMemory,
    InvalidMemoryOperation,
    MemoryInvariantError,
)


def _memory(n_vertices: int = 6) -> HypergraphMemory:
    mem = HypergraphMemory()
    for i in range(n_vertices):
        mem.add_vertex(f"e{i}", f"Entity {i}", in_graph=i != 5, chunk_ids=[f"c{i}"])
    return mem


def _evolved() -> HypergraphMemory:
    """Insert, update, merge, then merge a merged point again."""
    mem = _memory()
    mem.insert("A relates to B", ["e0", "e1"], ["c10"], step=0)              # p1
    mem.insert("B and C co-occur", ["e1", "e2"], ["c11"], step=0)            # p2
    mem.insert("D, E and F", ["e3", "e4", "e5"], [], step=0)                 # p3
    mem.update("p1", "A founded B", step=1, add_chunk_ids=["c12"])
    mem.merge(["p1", "p2"], "A founded B, which works with C", step=1)       # p4
    mem.merge(["p4", "p3"], "Everything together", step=2)                   # p5
    return mem


def test_sequence_keeps_invariants_and_ids():
    mem = _memory()
    p1 = mem.insert("A relates to B", ["e0", "e1"], ["c10"], step=0)
    p2 = mem.insert("B and C", ["e2", "e1", "e2"], ["c11", "c11"], step=0)
    assert (p1.point_id, p2.point_id) == ("p1", "p2")
    assert p2.vertex_ids == ["e2", "e1"] and p2.chunk_ids == ["c11"]   # repeats dropped, order kept
    mem.check_invariants()

    mem.update("p1", "A founded B", step=1, add_vertex_ids=["e3"], add_chunk_ids=["c12", "c10"])
    assert p1.description == "A founded B" and p1.history == ["A relates to B"]
    assert p1.vertex_ids == ["e0", "e1", "e3"] and p1.chunk_ids == ["c10", "c12"]
    assert p1.updated_steps == [1]
    mem.check_invariants()

    merged = mem.merge(["p2", "p1"], "C works with B, founded by A", step=2)
    assert merged.point_id == "p3" and merged.merged_from == ["p2", "p1"]
    assert merged.vertex_ids == ["e2", "e1", "e0", "e3"]        # union, first appearance
    assert merged.chunk_ids == ["c11", "c10", "c12"]
    assert p1.merged_into == p2.merged_into == "p3"
    assert [p.point_id for p in mem.active_points()] == ["p3"]
    assert mem.point("p1").description == "A founded B"           # parents stay stored
    mem.check_invariants()


def test_merge_of_merged_points():
    mem = _evolved()
    mem.check_invariants()
    top = mem.point("p5")
    assert top.merged_from == ["p4", "p3"]
    assert set(top.vertex_ids) == {f"e{i}" for i in range(6)}
    assert top.chunk_ids == ["c10", "c12", "c11"]
    assert [p.point_id for p in mem.active_points()] == ["p5"]
    assert mem.point("p4").merged_into == "p5" and mem.point("p1").merged_into == "p4"
    assert [p.point_id for p in mem.points_of_vertex("e1")] == ["p5"]


def test_queries():
    mem = _memory()
    mem.add_vertex("e9", "Loner", in_graph=True, chunk_ids=["c9"])
    mem.insert("A and B", ["e0", "e1"], ["c10"], step=0)
    mem.insert("B and C", ["e1", "e2"], ["c11"], step=0)
    assert [v.name for v in mem.vertices_of("p2")] == ["Entity 1", "Entity 2"]
    assert [p.point_id for p in mem.points_of_vertex("e1")] == ["p1", "p2"]
    assert mem.entity_ids() == ["e0", "e1", "e2", "e3", "e4", "e5", "e9"]
    assert mem.entity_ids(active_only=True) == ["e0", "e1", "e2"]
    assert mem.chunk_ids() == ["c10", "c0", "c1", "c11", "c2"]     # c9: not in any point
    assert not mem.is_empty() and len(mem) == 2
    assert mem.size == {"vertices": 7, "active_points": 2, "all_points": 2, "merged_points": 0, "chunks": 5}
    assert HypergraphMemory().is_empty()


def test_add_vertex_is_idempotent():
    mem = HypergraphMemory()
    mem.add_vertex("x", "X", in_graph=False, chunk_ids=["c1"])
    v = mem.add_vertex("x", "X", in_graph=True, chunk_ids=["c2", "c1"], description="an x")
    assert v.in_graph and v.chunk_ids == ["c1", "c2"] and v.description == "an x"
    assert mem.add_vertex("x", "X", in_graph=False).in_graph       # True sticks
    assert len(mem.vertices()) == 1


def test_same_vertex_set_insert_becomes_update():
    mem = _memory()
    first = mem.insert("A and B", ["e0", "e1"], ["c10"], step=0)
    again = mem.insert("B, then A", ["e1", "e0"], ["c11"], step=1)
    assert again is first and len(mem.all_points()) == 1
    assert first.description == "B, then A" and first.history == ["A and B"]
    assert first.chunk_ids == ["c10", "c11"] and first.updated_steps == [1]
    assert first.vertex_ids == ["e0", "e1"]
    # a merged-away point with that set does not absorb a new insert
    mem.insert("B and C", ["e1", "e2"], [], step=1)
    mem.merge(["p1", "p2"], "A, B, C", step=2)
    fresh = mem.insert("A and B again", ["e0", "e1"], [], step=2)
    assert fresh.point_id == "p4"
    mem.check_invariants()


@pytest.mark.parametrize("vertex_ids, message", [
    (["e0"], "at least 2"),
    (["e0", "e0"], "at least 2"),
    (["e0", "nope"], "unknown vertices"),
])
def test_bad_insert(vertex_ids, message):
    with pytest.raises(InvalidMemoryOperation, match=message):
        _memory().insert("x", vertex_ids, [], step=0)


def test_bad_operations():
    mem = _evolved()
    assert issubclass(InvalidMemoryOperation, ValueError)
    with pytest.raises(InvalidMemoryOperation, match="merged into p4"):
        mem.update("p1", "new text", step=3)
    with pytest.raises(InvalidMemoryOperation, match="no longer active"):
        mem.merge(["p5", "p2"], "x", step=3)
    with pytest.raises(InvalidMemoryOperation, match="at least 2"):
        mem.merge(["p5", "p5"], "x", step=3)
    with pytest.raises(InvalidMemoryOperation, match="no memory point"):
        mem.update("p99", "x", step=3)
    with pytest.raises(InvalidMemoryOperation, match="unknown vertices"):
        mem.update("p5", "x", step=3, add_vertex_ids=["nope"])
    with pytest.raises(InvalidMemoryOperation, match="non-empty"):
        mem.insert("  ", ["e0", "e1"], [], step=3)
    before = mem.to_dict()
    with pytest.raises(InvalidMemoryOperation):
        mem.merge(["p5", "p1"], "x", step=3)
    assert mem.to_dict() == before                                  # refused ops change nothing


def test_check_invariants_catches_corruption():
    mem = _evolved()
    mem.point("p4").merged_into = None                              # parent of p5 active again
    with pytest.raises(MemoryInvariantError, match="parent"):
        mem.check_invariants()
    mem = _evolved()
    mem.point("p5").vertex_ids.remove("e0")
    with pytest.raises(MemoryInvariantError, match="lost vertices"):
        mem.check_invariants()
    mem = _evolved()
    mem.point("p5").vertex_ids[:] = ["e0"]
    with pytest.raises(MemoryInvariantError, match="fewer than 2"):
        mem.check_invariants()


def test_json_round_trip():
    mem = _evolved()
    data = json.loads(json.dumps(mem.to_dict()))
    again = HypergraphMemory.from_dict(data)
    assert again.to_dict() == mem.to_dict()
    again.check_invariants()
    assert again.insert("new", ["e0", "e2"], [], step=3).point_id == "p6"   # id counter survives
    snap = mem.snapshot()
    mem.update("p5", "changed", step=3)
    assert snap["points"][-1]["description"] == "Everything together"     # a snapshot is a copy
    with pytest.raises(ValueError, match="version"):
        HypergraphMemory.from_dict({**data, "version": 99})


def test_render():
    mem = _memory()
    assert mem.render() == ""
    mem.insert("A and B", ["e0", "e1"], [], step=0)
    mem.insert("B, C and D", ["e1", "e2", "e3"], [], step=0)
    assert mem.render() == ("[p1] A and B (entities: Entity 0, Entity 1)\n"
                            "[p2] B, C and D (entities: Entity 1, Entity 2, Entity 3)")
    short = mem.render(max_chars=80)
    assert len(short) <= 80 and short.startswith("[p1] A and B") and "1 more memory points" in short
    assert len(mem.render(max_chars=10)) <= 10


def test_graphml_round_trip(tmp_path):
    mem = _evolved()
    path = to_graphml(mem, tmp_path / "m.graphml")
    g = nx.read_graphml(path)
    assert g.number_of_nodes() == 6 + 1 and g.number_of_edges() == 6
    node = g.nodes["point:p5"]
    assert node["kind"] == "memory_point" and node["merged_from"] == "p4,p3"
    assert g.nodes["entity:e5"]["in_graph"] is False

    full = nx.read_graphml(to_graphml(mem, tmp_path / "h.graphml", include_history=True))
    joins = sum(len(p.vertex_ids) for p in mem.all_points())
    assert full.number_of_nodes() == 6 + 5
    assert full.number_of_edges() == joins + 4                       # 4 merged_into edges
    assert full.edges["point:p1", "point:p4"]["kind"] == "merged_into"
    # snapshots draw the same as the memory itself
    assert nx.utils.graphs_equal(to_networkx(mem.snapshot()), to_networkx(mem))


NASTY = 'Tom & Jerry <script>alert("x")</script>'


def _nasty_memory() -> HypergraphMemory:
    mem = _memory()
    mem.add_vertex("q", "Q <b>&</b>", in_graph=False)
    mem.insert(NASTY, ["e0", "q"], ["c1"], step=0)
    mem.insert("A > B & C", ["e1", "e2"], [], step=0)
    return mem


def _assert_standalone(text: str) -> None:
    assert "<script" not in text.lower()
    assert not re.search(r'(src|href)\s*=\s*["\']?\s*(https?:)?//', text, re.I)
    assert "http" not in text


def test_html_escapes_and_is_standalone(tmp_path):
    mem = _nasty_memory()
    text = to_html(mem, tmp_path / "m.html", title="Memory <1> & co").read_text(encoding="utf-8")
    assert escape(NASTY) in text and escape("A > B & C") in text
    assert escape("Q <b>&</b>") in text and "<b>&</b>" not in text
    assert "<title>Memory &lt;1&gt; &amp; co</title>" in text
    assert 'stroke-dasharray' in text                                    # the entity not in the graph
    assert text.count("<polygon") == 2 and text.count("<circle") == 7
    _assert_standalone(text)
    assert to_html(mem, tmp_path / "again.html", title="Memory <1> & co").read_text(encoding="utf-8") == text


def test_html_steps(tmp_path):
    mem = _memory()
    snaps = [HypergraphMemory().snapshot(), mem.snapshot()]           # empty, then entities only
    mem.insert("A and B", ["e0", "e1"], [], step=0)
    mem.insert(NASTY, ["e1", "e2"], [], step=0)
    snaps.append(mem.snapshot())
    mem.merge(["p1", "p2"], "merged view", step=1)
    snaps.append(mem.snapshot())
    text = to_html_steps(snaps, tmp_path / "trace.html").read_text(encoding="utf-8")
    assert re.findall(r"<h2>(.*?)</h2>", text) == ["Step 0", "Step 1", "Step 2", "Step 3"]
    assert "(memory is empty)" in text and "merged into p3" in text
    assert text.count("<svg") == 3
    assert text.count(escape(NASTY)) >= 2
    _assert_standalone(text)
    # one layout for the whole trace: an entity stays where it was from step to step
    places = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', text.split("<h2>Step 2</h2>")[1].split("<h2>")[0])
    later = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', text.split("<h2>Step 3</h2>")[1])
    assert places and places == later
    with pytest.raises(ValueError):
        to_html_steps(snaps, tmp_path / "x.html", labels=["only one"])


def test_no_ray():
    code = "import sys, memgraft.hgmem.memory, memgraft.hgmem.export; assert 'ray' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
