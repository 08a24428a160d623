"""What the served-application tests share: the scripted model the LLM deployment runs, and a free port."""

from __future__ import annotations

import json
import socket

from tests.doubles import HGMemScript, ScriptedLLM
from tests.waiting import find_gate, pass_gate

SLOW_GATE = "serving-slow-requests"


class ServingScript(HGMemScript):
    """HGMem's scripted path, plus a team answer and a plain chat reply."""

    def __call__(self, request):
        if "slow:" in request.messages[-1]["content"]:
            pass_gate(find_gate(SLOW_GATE))  # held inside the replica until the test has killed it
        title = (request.json_schema or {}).get("title")
        if title == "CollabAnswer":
            return json.dumps({"answer": "We use qPCR."})
        if title is None:
            return "hello from the scripted model"
        return super().__call__(request)


def scripted_llm(_settings):
    return ScriptedLLM(ServingScript())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
