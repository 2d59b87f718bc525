"""The deployment files under infra/: they parse, publish nothing beyond 127.0.0.1, keep secrets out of the
manifests, and give the Ray cluster its GPU workers. (Syntax and shape only: no Docker or Kubernetes here.)"""

import re
from pathlib import Path

import pytest
import yaml

INFRA = Path(__file__).resolve().parents[1] / "infra"
YAML_FILES = sorted(p for p in INFRA.rglob("*") if p.suffix in (".yml", ".yaml"))
KUSTOMIZE = {"kustomization.yaml", "kustomizeconfig.yaml"}  # kustomize's own files, not Kubernetes objects
TEAM_SERVICES = {"postgres", "minio", "create-bucket", "prefect-server", "mlflow", "setup", "prefect-worker",
                 "ray-head", "ray-worker"}


def documents(path: Path) -> list:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def k8s_objects() -> list[dict]:
    return [d for p in sorted((INFRA / "k8s").glob("*.yaml")) if p.name not in KUSTOMIZE for d in documents(p)]


def walk(node, path=()):
    """Every (path, value) pair in a parsed YAML tree."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from walk(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, path + (i,))
    else:
        yield path, node


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(INFRA)))
def test_every_yaml_file_parses(path):
    assert documents(path), f"{path} holds no document"


def test_the_team_compose_file_has_its_services_and_publishes_on_loopback_only():
    compose = documents(INFRA / "docker-compose.yml")[0]
    assert set(compose["services"]) == TEAM_SERVICES
    for name in ("docker-compose.yml", "docker-compose.minio.yml"):
        for service, spec in documents(INFRA / name)[0]["services"].items():
            for port in spec.get("ports", []):
                assert isinstance(port, str) and port.startswith("127.0.0.1:"), (name, service, port)
    services = compose["services"]
    assert services["postgres"]["image"] == "postgres:15"
    assert "./postgres-init.sql:/docker-entrypoint-initdb.d/10-databases.sql:ro" in services["postgres"]["volumes"]
    init = (INFRA / "postgres-init.sql").read_text()
    assert "CREATE DATABASE prefect;" in init and "CREATE DATABASE mlflow;" in init
    assert "postgresql+asyncpg://" in services["prefect-server"]["environment"]["PREFECT_API_DATABASE_CONNECTION_URL"]
    mlflow = " ".join(services["mlflow"]["command"])
    assert "--artifacts-destination s3://zero-data/mlflow" in mlflow and "postgresql://" in mlflow
    assert services["mlflow"]["environment"]["MLFLOW_S3_ENDPOINT_URL"] == "http://minio:9000"
    assert services["prefect-worker"]["command"][:6] == ["prefect", "worker", "start", "--pool", "zero", "--type"]
    for name in ("prefect-worker", "ray-head", "ray-worker", "setup"):
        env = services[name]["environment"]
        assert {"PREFECT_API_URL", "MLFLOW_TRACKING_URI", "ZERO_WORKDIR", "ZERO_RAY_ADDRESS"} <= set(env), name
        assert "workspace:/workspace" in services[name]["volumes"][0], name


def test_no_password_is_written_into_the_compose_file():
    text = (INFRA / "docker-compose.yml").read_text()
    for path, value in walk(documents(INFRA / "docker-compose.yml")[0]):
        if isinstance(path[-1], str) and re.search(r"PASSWORD|SECRET", path[-1]):
            assert str(value).startswith("${"), path  # from infra/.env, never a literal
    assert "change-me" not in text


def test_the_ray_cluster_has_a_head_and_a_gpu_worker_group():
    (cluster,) = [o for o in k8s_objects() if o["kind"] == "RayCluster"]
    assert cluster["apiVersion"] == "ray.io/v1"
    spec = cluster["spec"]
    head = spec["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert head["image"] == "zero" and "rayStartParams" in spec["headGroupSpec"]
    gpu = [g for g in spec["workerGroupSpecs"]
           if g["template"]["spec"]["containers"][0]["resources"]["limits"].get("nvidia.com/gpu") == 1]
    assert gpu, "no worker group asks for nvidia.com/gpu"
    worker = gpu[0]["template"]["spec"]["containers"][0]
    assert worker["resources"]["requests"]["nvidia.com/gpu"] == 1 and worker["image"] == "zero"
    assert {"groupName", "replicas", "rayStartParams"} <= set(gpu[0])


def test_the_k8s_manifests_take_secrets_from_a_secret_and_list_every_file():
    objects = k8s_objects()
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert {("Deployment", "prefect-server"), ("Service", "prefect-server"), ("Deployment", "prefect-worker"),
            ("Deployment", "mlflow"), ("Service", "mlflow"), ("StatefulSet", "postgres"), ("Service", "postgres"),
            ("RayCluster", "zero-ray"), ("ConfigMap", "zero-config"), ("Job", "zero-setup")} <= kinds
    assert not any(o["kind"] == "Secret" for o in objects)  # created by hand, never committed
    refs = set()
    for obj in objects:
        for path, value in walk(obj):
            if path[-1] == "name" and len(path) > 2 and path[-2] == "secretKeyRef":
                refs.add(value)
            if len(path) > 2 and path[-1] == "value" and isinstance(path[-2], int):
                assert not re.search(r"://[^/@\s]+:[^/@\s]+@", str(value)), path  # no credentials in a URL
    assert refs == {"zero-secrets"}
    kustomization = documents(INFRA / "k8s" / "kustomization.yaml")[0]
    listed = set(kustomization["resources"])
    assert listed == {p.name for p in (INFRA / "k8s").glob("*.yaml")} - KUSTOMIZE
    assert kustomization["configurations"] == ["kustomizeconfig.yaml"]


def test_the_image_pins_the_project_torch():
    dockerfile = (INFRA / "Dockerfile").read_text()
    pyproject = (INFRA.parent / "pyproject.toml").read_text()
    torch = re.search(r'"(torch==[^"]+)"', pyproject).group(1)
    assert f'"{torch}"' in dockerfile
    assert 'pip install -e ".[pipeline,ray]"' in dockerfile
