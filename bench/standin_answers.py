"""The stand-in LLM server's canned answers: HGMem's output models from the prompt, else a minimal schema instance."""

from __future__ import annotations

import re
from typing import Any

ENTITY_LINE = re.compile(r"^- (.+?) \([^()]*\): ", re.M)
POINT_LINE = re.compile(r"^\[(p\d+)\] (.*) \(entities: (.*)\)$", re.M)
FALLBACK_NAMES = ("Stand-in Alpha", "Stand-in Beta")


def words(text: str) -> int:
    """The stand-in's token count: whitespace-separated words."""
    return len(text.split())


# -- reading the prompt ---------------------------------------------------------------------------


def _section(prompt: str, head: str) -> str:
    """The text after ``head`` up to the next blank line (HGMem's prompts separate sections so)."""
    at = prompt.find(head)
    if at < 0:
        return ""
    rest = prompt[at + len(head):]
    end = rest.find("\n\n")
    return rest if end < 0 else rest[:end]


def memory_points(prompt: str) -> list[tuple[str, str, list[str]]]:
    """(point id, description, entity names) of each memory point the prompt shows."""
    mem = _section(prompt, "Current memory:\n") or _section(prompt, "Memory:\n")
    return [(m.group(1), m.group(2), [n.strip() for n in m.group(3).split(",") if n.strip()])
            for m in POINT_LINE.finditer(mem)]


def evidence_entities(prompt: str) -> list[str]:
    return list(dict.fromkeys(ENTITY_LINE.findall(_section(prompt, "Entities:\n"))))


def question_of(prompt: str) -> str:
    first = prompt.split("\n", 1)[0]
    return first[len("Question: "):] if first.startswith("Question: ") else first


# -- answers --------------------------------------------------------------------------------------


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def offered_names(schema: dict[str, Any] | None) -> list[str] | None:
    """The entity names an evolve schema lets an insert name (HGMem's grounding enum), or None without one."""
    items = ((schema or {}).get("$defs", {}).get("PointInsert", {}).get("properties", {})
             .get("entities", {}).get("items", {}))
    return list(items["enum"]) if "enum" in items else ([items["const"]] if "const" in items else None)


def hgmem_answer(kind: str, prompt: str, offered: list[str] | None = None) -> dict[str, Any]:
    points = memory_points(prompt)
    if kind == "SufficiencyJudgement":
        if any(d.startswith("merged:") for _, d, _ in points):
            return {"sufficient": True, "concerns": []}
        return {"sufficient": False, "concerns": [
            {"kind": "global", "point_ids": [], "subquery": _clip(f"more about {question_of(prompt)}", 200)}]}
    if kind in ("Evolution", "InsertOnly"):
        in_memory = {n.casefold() for _, _, names in points for n in names}
        fresh = [n for n in evidence_entities(prompt) if n.casefold() not in in_memory]
        if offered is not None:  # a grounded schema: only the names it offers, fresh ones first
            names = [n for n in fresh if n in offered] + [n for n in offered if n not in fresh]
            names = list(dict.fromkeys(names))[:2]
        else:
            names = (fresh + [n for n in FALLBACK_NAMES if n.casefold() not in in_memory])[:2]
        if len(names) < 2 and offered is None:  # both fallbacks already in memory: tag them with the step
            names = [f"{n} {len(points)}" for n in FALLBACK_NAMES]
        out: dict[str, Any] = {"inserts": [
            {"description": _clip(f"{names[0]} is linked to {names[1]}.", 400), "entities": names}]}
        if kind == "Evolution":
            out = {"updates": [{"point_id": pid, "description": _clip(f"{desc} (confirmed)", 400), "entities": []}
                               for pid, desc, _ in points[:1] if not desc.startswith("merged:")], **out}
        return out
    if kind == "Merging":
        if len(points) < 2:
            return {"merges": []}
        (a, da, _), (b, db, _) = points[:2]
        return {"merges": [{"point_ids": [a, b], "description": _clip(f"merged: {da} {db}", 500)}]}
    if kind == "Answer":
        names = [n for _, _, ns in points for n in ns] or evidence_entities(prompt)
        return {"answer": _clip(names[0], 400) if names else "unknown"}
    raise KeyError(kind)


KINDS = {  # HGMem's output models, by their property sets (titles can be renamed; shapes cannot)
    frozenset({"sufficient", "concerns"}): "SufficiencyJudgement",
    frozenset({"updates", "inserts"}): "Evolution",
    frozenset({"inserts"}): "InsertOnly",
    frozenset({"merges"}): "Merging",
    frozenset({"answer"}): "Answer",
}


def schema_kind(schema: dict[str, Any] | None) -> str:
    if not schema:
        return "none"
    return KINDS.get(frozenset(schema.get("properties", {})), str(schema.get("title") or "other"))


def minimal_instance(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """A small instance of a JSON schema (objects: required properties; arrays: minItems)."""
    root = root or schema
    if "$ref" in schema:
        ref = schema["$ref"]
        node: Any = root
        for part in ref.lstrip("#/").split("/"):
            node = node[part]
        return minimal_instance(node, root)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return minimal_instance(schema[key][0], root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: minimal_instance(props[k], root) for k in schema.get("required", []) if k in props}
    if kind == "array":
        return [minimal_instance(schema.get("items", {}), root) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return "x" * max(1, schema.get("minLength", 1))
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


def answer_for(schema: dict[str, Any] | None, messages: list[dict[str, Any]]) -> tuple[str, Any]:
    kind = schema_kind(schema)
    prompt = str(messages[-1].get("content", "")) if messages else ""
    try:
        return kind, hgmem_answer(kind, prompt, offered_names(schema))
    except KeyError:
        if schema is None:
            return kind, "stand-in answer"
        return kind, minimal_instance(schema)
