"""The cluster manifests parse, name their images and GPUs, and point at entry points this repo has.

Nothing here reaches a cluster: each manifest is read with ``yaml.safe_load_all``
and its references are checked against the repository (scripts and their options,
the Serve import path, the profile and the settings overrides it is started with).
"""

from __future__ import annotations

import importlib
import shlex
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

CLUSTER = REPO / "cluster"
IMAGE = "ghcr.io/memgraft/memgraft:0.1.0-ray2.60.0-cu128"


def docs(name: str) -> list[dict]:
    loaded = [d for d in yaml.safe_load_all((CLUSTER / name).read_text()) if d is not None]
    assert loaded, f"{name} holds no document"
    return loaded


def one(name: str, kind: str) -> dict:
    [doc] = [d for d in docs(name) if d.get("kind") == kind]
    assert doc["apiVersion"] == "ray.io/v1"
    return doc


def cluster_specs() -> list[tuple[str, dict]]:
    return [("raycluster.yaml", one("raycluster.yaml", "RayCluster")["spec"]),
            ("rayjob-build-graphs.yaml", one("rayjob-build-graphs.yaml", "RayJob")["spec"]["rayClusterSpec"]),
            ("rayservice.yaml", one("rayservice.yaml", "RayService")["spec"]["rayClusterConfig"])]


def containers(group: dict) -> list[dict]:
    return group["template"]["spec"]["containers"]


def test_every_manifest_parses():
    names = sorted(p.name for p in CLUSTER.glob("*.yaml"))
    assert names == ["a100-launcher.yaml", "raycluster.yaml", "rayjob-build-graphs.yaml", "rayservice.yaml",
                     "runtime_env.yaml"]
    for name in names:
        docs(name)


@pytest.mark.parametrize("name,spec", cluster_specs(), ids=[n for n, _ in cluster_specs()])
def test_ray_clusters_name_images_versions_and_a100_gpus(name, spec):
    import ray

    assert spec["rayVersion"] == ray.__version__  # the image's Ray must be the one the code is tested on
    head = spec["headGroupSpec"]
    assert head["rayStartParams"]["num-cpus"] == "0"  # nothing but Ray's own services on the head
    for c in containers(head):
        assert c["image"] == IMAGE and "nvidia.com/gpu" not in c["resources"]["limits"]
    [workers] = spec["workerGroupSpecs"]
    assert workers["minReplicas"] <= workers["replicas"] <= workers["maxReplicas"]
    assert "A100" in workers["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"]
    for c in containers(workers):
        assert c["image"] == IMAGE
        limits = c["resources"]["limits"]
        assert int(limits["nvidia.com/gpu"]) >= 4 and c["resources"]["requests"] == limits
        assert "/dev/shm" in [m["mountPath"] for m in c["volumeMounts"]]  # vLLM tensor parallel


def test_the_image_is_built_from_this_repo_with_the_runtime_envs_packages():
    dockerfile = (CLUSTER / "Dockerfile").read_text()
    assert "FROM rayproject/ray-llm:2.60.0-" in dockerfile and "cluster/runtime_env.yaml" in dockerfile
    for folder in ("memgraft", "pipelines", "serving", "configs"):
        assert f"COPY --chown=ray:users {folder} {folder}" in dockerfile and (REPO / folder).is_dir()


def test_rayjob_runs_build_graphs_with_options_it_accepts():
    import typer.main

    from pipelines import build_graphs

    job = one("rayjob-build-graphs.yaml", "RayJob")["spec"]
    argv = shlex.split(job["entrypoint"])
    assert argv[0] == "python" and argv[1] == "/app/pipelines/build_graphs.py"
    assert (REPO / argv[1].removeprefix("/app/")).is_file()
    accepted = {opt for p in typer.main.get_command(build_graphs.app).params for opt in p.opts}
    flags = [a for a in argv[2:] if a.startswith("--")]
    assert flags and set(flags) <= accepted
    profile = argv[argv.index("--profile") + 1]
    assert (REPO / "configs" / f"{profile}.yaml").is_file()
    assert yaml.safe_load(job["runtimeEnvYAML"])["env_vars"]["MEMGRAFT_PROFILE"] == profile
    assert job["shutdownAfterJobFinishes"] is True


def _check_serving_env(env: dict[str, str]) -> None:
    """The profile exists and every override applies to the library's or the serving settings."""
    from serving.settings import load_profile, split_overrides

    assert (REPO / "configs" / f"{env['MEMGRAFT_PROFILE']}.yaml").is_file()
    settings, serving = load_profile(env["MEMGRAFT_PROFILE"], split_overrides(env.get("MEMGRAFT_SET")))
    assert settings.models.llm_backend == "vllm" and settings.models.llm_tensor_parallel == 4
    assert serving.deployments.embedder.num_gpus == 1 and serving.vllm_accelerator_type == "A100"
    assert serving.banks_dir == "/data/banks" and serving.graphs_dir == "/data/graphs"
    # the team banks: one PostgreSQL database, its URL from DATABASE_URL where a bank is opened, two writers
    assert serving.banks_url == "$DATABASE_URL" and serving.deployments.ingress.replicas == 2
    assert env["MEMGRAFT_TOKENS"].startswith("/etc/memgraft/")


def test_rayservice_serves_serving_app_with_the_cluster_profile():
    spec = one("rayservice.yaml", "RayService")["spec"]
    config = yaml.safe_load(spec["serveConfigV2"])
    [app] = config["applications"]
    module, attr = app["import_path"].split(":")
    assert (module, attr) == ("serving", "app")
    package = importlib.import_module(module)
    assert Path(package.__file__).parent == REPO / "serving"  # the package, not a namespace of its folder
    assert callable(package.build_app) and "app" in package.__all__
    assert config["http_options"]["port"] == 8000
    _check_serving_env(app["runtime_env"]["env_vars"])
    # tokens reach the ingress, wherever Serve places it, as the mounted Secret
    for name, cluster in cluster_specs():
        if name == "rayjob-build-graphs.yaml":  # builds graphs: no tokens
            continue
        for group in [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]:
            mounts = {m["mountPath"] for c in containers(group) for m in c["volumeMounts"]}
            assert "/etc/memgraft" in mounts and "/data" in mounts
            # and DATABASE_URL, the banks' database, from the Secret memgraft-db in every pod
            envs = [e for c in containers(group) for e in c.get("env", []) if e["name"] == "DATABASE_URL"]
            assert envs and all(e["valueFrom"]["secretKeyRef"] == {"name": "memgraft-db", "key": "url"}
                                for e in envs)


def test_runtime_env_carries_the_repo_and_the_cluster_profile():
    env = docs("runtime_env.yaml")[0]
    assert env["working_dir"] == "." and {".venv", ".git", "out"} <= set(env["excludes"])
    packages = env["pip"]["packages"]
    assert any(p.startswith("sentence-transformers==") for p in packages)
    assert not any(p.split("==")[0] in ("torch", "ray", "vllm") for p in packages)  # the image's own
    _check_serving_env(env["env_vars"])


def test_launcher_runs_ray_llm_on_aws_a100_nodes():
    launcher = docs("a100-launcher.yaml")[0]
    assert launcher["provider"]["type"] == "aws"
    assert launcher["docker"]["image"].startswith("rayproject/ray-llm:2.60.0-")
    nodes = launcher["available_node_types"]
    assert launcher["head_node_type"] in nodes
    gpu = [n for n in nodes.values() if n["node_config"]["InstanceType"].startswith("p4d.")]  # 8x A100
    assert gpu and all(n["max_workers"] <= launcher["max_workers"] for n in gpu)
    assert any("ray start --head" in c for c in launcher["head_start_ray_commands"])
