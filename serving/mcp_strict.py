"""MCP tools that validate their arguments as the REST bodies do: unknown arguments refused, inputs never echoed.

The SDK builds each tool's argument model from the function's signature with pydantic's
defaults: an argument the tool does not take is dropped silently (REST answers 422 for an
unknown field), and a refusal's text is pydantic's own, which quotes the refused value
(``input_value='...'``, possibly a megabyte or another team's text pasted by mistake).
Here the argument model is the SDK's with ``extra="forbid"`` and ``hide_input_in_errors``.
"""

from __future__ import annotations

from typing import Any, Callable

from mcp.server.mcpserver.tools import Tool
from pydantic import ConfigDict


def strict_tool(fn: Callable[..., Any], **options: Any) -> Tool:
    """``Tool.from_function(fn, **options)``, its arguments validated strictly (see the module's docstring)."""
    tool = Tool.from_function(fn, **options)
    loose = tool.fn_metadata.arg_model
    config = ConfigDict(**{**loose.model_config, "extra": "forbid", "hide_input_in_errors": True})
    strict = type(loose.__name__, (loose,), {"model_config": config, "__module__": loose.__module__})
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool
