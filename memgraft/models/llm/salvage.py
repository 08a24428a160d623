"""The complete part of a schema-constrained reply that the token limit cut off.

Decoding under a JSON schema means a cut reply is a valid *prefix*: every item
it closed is what the model meant to say. A small model that runs on (repeating
points until the limit) would otherwise fail a whole HGMem step or an updater
decision after its retries, although most of its answer was there. pydantic's
partial JSON parser reads the prefix; an item the cut left incomplete is the
last of its list, and is dropped. What still does not validate (a required
field the cut never reached) is not guessed at.
"""

from __future__ import annotations

from typing import Any, TypeVar

import pydantic_core
from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)

MAX_DROPS = 16  # cut items are dropped one list at a time; a reply needing more is not worth saving


def salvage(model: type[T], text: str) -> T | None:
    """``model`` from the closed part of a cut ``text``, or None when that part is not a valid ``model``.

    An incomplete trailing string is left out (never kept half-written); the last item of a list that fails
    validation is dropped, unless it is the list's only item, and a list the cut left open with nothing in it is
    not read as empty (either would claim the model said nothing).
    """
    try:
        data = pydantic_core.from_json(text.strip(), allow_partial=True)
    except ValueError:
        return None
    opened = _open_path(data)
    if isinstance(opened[-1], list) and not opened[-1]:
        # cut right after a list opened: what it was to hold is unknown, so it is not read as empty
        outer = next((node for node in opened if isinstance(node, list) and len(node) > 1), None)
        if outer is None:
            return None
        del outer[-1]
    for _ in range(MAX_DROPS + 1):
        try:
            return model.model_validate(data)
        except ValidationError as err:
            if not _drop_cut_items(data, err):
                return None
    return None


def _drop_cut_items(data: Any, err: ValidationError) -> bool:
    """Drop, for each error, the list item the cut left incomplete; False when an error is anywhere else."""
    drops: dict[int, tuple[list[Any], int]] = {}
    for e in err.errors():
        found = _last_item_on_path(data, e["loc"])
        if found is None:
            return False
        items, index = found
        drops[id(items)] = (items, index)
    for items, index in drops.values():
        del items[index]
    return bool(drops)


def _last_item_on_path(data: Any, loc: tuple[Any, ...]) -> tuple[list[Any], int] | None:
    """The outermost list on ``loc`` whose last item ``loc`` enters (the one the cut was inside), if it has others."""
    node = data
    for key in loc:
        if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            if key == len(node) - 1 and key > 0:
                return node, key
            node = node[key]
        elif isinstance(node, dict) and key in node:
            node = node[key]
        else:
            return None
    return None


def _open_path(data: Any) -> list[Any]:
    """The containers the cut was inside, outermost first: each one's last value leads to the next."""
    path = [data]
    while isinstance(path[-1], (dict, list)) and path[-1]:
        node = path[-1]
        nxt = node[-1] if isinstance(node, list) else node[next(reversed(node))]
        if not isinstance(nxt, (dict, list)):
            break
        path.append(nxt)
    return path
