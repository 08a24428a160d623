"""``python -m serving``: start Serve on ``serving.host:serving.port`` and run the application until Ctrl-C.

``serve run serving:app`` does the same on Serve's own HTTP defaults (127.0.0.1:8000).
"""

from __future__ import annotations

import argparse

import ray
from ray import serve

from serving import proxy_guard
from serving.application import compose, settings_from


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m serving", description=__doc__.split("\n")[0])
    p.add_argument("--profile", help="a profile name or YAML path (default: $MEMGRAFT_PROFILE or local)")
    p.add_argument("--set", action="append", default=[], help="section.field=value (serving.* included)")
    p.add_argument("--tokens", help="the tokens file (default: serving.tokens_file or $MEMGRAFT_TOKENS)")
    p.add_argument("--address", help="a running Ray cluster (default: start a local one)")
    a = p.parse_args(argv)
    settings, serving = settings_from({"profile": a.profile, "set": ";".join(a.set), "tokens": a.tokens})
    ray.init(address=a.address)
    serve.start(http_options={"host": serving.host, "port": serving.port}, **proxy_guard.start_options())
    serve.run(compose(settings, serving), name="memgraft", route_prefix="/", blocking=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
