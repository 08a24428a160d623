"""One caller's bad input fails that caller alone, never the batch it shared with others.

``@serve.batch`` gives every caller of a batch the batch's exception. When a joint
call fails, :func:`per_caller` runs each caller's part on its own and hands back,
per caller, either its result or a :class:`Failed` holding its own error, which
the caller's method re-raises with :func:`unwrap`. Boundary validation keeps
known poison (unencodable text) out; this is for whatever else slips through.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Sequence


@dataclass
class Failed:
    error: BaseException


async def per_caller(run: Callable[[list[Any]], Awaitable[list[Any]]], calls: Sequence[Any]) -> list[Any]:
    """``run(calls)``; if it raises and more than one caller shares the batch, ``run([call])`` for each."""
    try:
        return await run(list(calls))
    except Exception as err:
        if len(calls) == 1:
            return [Failed(err)]
    out: list[Any] = []
    for call in calls:
        try:
            [one] = await run([call])
            out.append(one)
        except Exception as err:
            out.append(Failed(err))
    return out


def unwrap(result: Any) -> Any:
    if isinstance(result, Failed):
        raise result.error
    return result
