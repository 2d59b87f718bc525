"""The same flow on a real Ray cluster writes the same bytes as on the default process pool.

The cluster is two Ray nodes on 127.0.0.1, started with `ray start` in a
temporary directory: a head and a second node that joins it, one CPU each, so
the shards and gate parts are spread over both. Needs the `ray` extra, which
`make install` (and so CI) installs.
"""

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from pipeline_support import SMOKE, free_port, isolate_env, make_workspace

pytest.importorskip("prefect_ray")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

RAY = str(Path(os.sys.executable).parent / "ray")


def outs(root):
    lock = yaml.safe_load((root / "dvc.lock").read_text())["stages"]
    return {stage: [(o["path"], o["md5"]) for o in entry.get("outs", [])] for stage, entry in lock.items()}


def ray_start(*args, temp: str) -> None:
    subprocess.run([RAY, "start", *args, "--num-cpus", "1", "--object-store-memory", str(100 * 2**20),
                    "--disable-usage-stats"], check=True, capture_output=True, text=True, timeout=180,
                   env={**os.environ, "RAY_TMPDIR": temp})


@pytest.fixture(scope="module")
def ray_cluster():
    """A head and a second node on 127.0.0.1 (GCS address); stopped and removed afterwards."""
    temp = tempfile.mkdtemp(prefix="zray")  # short: Ray's socket paths must fit in 107 bytes
    port = free_port()
    try:
        ray_start("--head", "--port", str(port), "--node-ip-address", "127.0.0.1", "--temp-dir", temp,
                  "--include-dashboard", "false", temp=temp)
        ray_start("--address", f"127.0.0.1:{port}", "--node-ip-address", "127.0.0.1", temp=temp)
        address = f"127.0.0.1:{port}"
        import ray

        ray.init(address=address)
        deadline = time.time() + 120
        while len([n for n in ray.nodes() if n["Alive"]]) < 2 and time.time() < deadline:
            time.sleep(1)
        assert len([n for n in ray.nodes() if n["Alive"]]) == 2
        ray.shutdown()
        yield address
    finally:
        subprocess.run([RAY, "stop", "--force"], capture_output=True, timeout=120,
                       env={**os.environ, "RAY_TMPDIR": temp})
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="module")
def pool_generation(tmp_path_factory, harness):
    from flows.generation import zero_generation

    root = make_workspace(tmp_path_factory.mktemp("pool") / "ws")
    with pytest.MonkeyPatch.context() as mp:
        isolate_env(mp, root)
        assert zero_generation(params_file=SMOKE, workdir=str(root))["generation"] == 1
    return root


def test_ray_cluster_and_process_pool_agree(tmp_path, monkeypatch, ray_cluster, pool_generation):
    from flows.cluster import on_ray
    from flows.generation import zero_generation

    root = make_workspace(tmp_path / "ray")
    isolate_env(monkeypatch, root)
    record = on_ray(zero_generation, ray_cluster)(params_file=SMOKE, workdir=str(root))
    assert record["generation"] == 1
    assert outs(pool_generation) == outs(root)


def test_a_gpu_the_cluster_lacks_is_a_clear_error_not_a_hang(tmp_path, monkeypatch, ray_cluster, harness):
    from flows.cluster import ClusterResourceError, on_ray
    from flows.generation import zero_generation

    root = make_workspace(tmp_path / "gpu")
    isolate_env(monkeypatch, root)
    started = time.time()
    with pytest.raises(ClusterResourceError, match=r"pipeline.num_gpus=1.*GPU.*0"):
        on_ray(zero_generation, ray_cluster)(params_file=SMOKE, overrides=["pipeline.num_gpus=1"],
                                              workdir=str(root))
    print(f"refused after {time.time() - started:.0f}s")
