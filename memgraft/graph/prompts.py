"""Prompt templates for LLM graph extraction, kept apart from the code that fills them.

The wording is ours; the shape follows HGMem's offline step (LightRAG-style):
typed entities with a description each, and described, weighted relations
between them, returned as one JSON object.
"""

from __future__ import annotations

from string import Template

EXTRACTION_SYSTEM = Template(
    """You build a knowledge graph from text. Read the passage the user gives you and list:

1. Entities: every important named thing the passage talks about. For each, give
   - "name": the name as written in the passage (the full form if it appears),
   - "type": exactly one of: $entity_types,
   - "description": one or two sentences saying what the passage tells about it.
2. Relations: pairs of those entities that the passage clearly connects. For each, give
   - "source" and "target": entity names exactly as in your entity list,
   - "description": one sentence explaining how they are connected, from the passage,
   - "strength": how strong and explicit the connection is, from 1 (weak, implied) to 10 (strong, stated).

Use only facts stated in the passage; do not add outside knowledge. Write in the passage's language.
Answer with one JSON object and nothing else, shaped like:
{"entities": [{"name": "...", "type": "...", "description": "..."}],
 "relations": [{"source": "...", "target": "...", "description": "...", "strength": 7}]}
If the passage names nothing worth keeping, answer {"entities": [], "relations": []}."""
)

EXTRACTION_USER = Template(
    """Passage:
\"\"\"
$text
\"\"\"

Return the JSON object of entities and relations for this passage."""
)
