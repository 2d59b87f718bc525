"""The same flow on a real Ray cluster writes the same bytes as on the default process pool.

The cluster is two Ray nodes on 127.0.0.1, started with `ray start` in a
temporary directory: a head and a second node that joins it, one CPU each, so
the shards and gate parts are spread over both. Self-play runs once as a task
per shard and once on two long-lived actors (pipeline.selfplay_actors), one a
node, each loading the network once, one of them killed with `kill -9` in the
middle of its shard. Needs the `ray` extra, which
`make install` (and so CI) installs.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
import yaml

from pipeline_support import SMOKE, TAG, free_port, isolate_env, make_workspace

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
    from flows.capacity import ClusterResourceError
    from flows.cluster import on_ray
    from flows.generation import zero_generation

    root = make_workspace(tmp_path / "gpu")
    isolate_env(monkeypatch, root)
    started = time.time()
    with pytest.raises(ClusterResourceError, match=r"pipeline.num_gpus=1.*GPU.*0"):
        on_ray(zero_generation, ray_cluster)(params_file=SMOKE, overrides=["pipeline.num_gpus=1"],
                                              workdir=str(root))
    print(f"refused after {time.time() - started:.0f}s")


class ActorKiller(threading.Thread):
    """kill -9 the process of self-play actor 0 once its shard is under way (its SGF temp dir exists).

    Runs beside the flow in the flow's process, so it uses the flow's own Ray connection.
    """

    def __init__(self, root, timeout: float = 600):
        super().__init__(daemon=True)
        self.playing = root / "gens" / TAG / "g0001" / "games" / "sgf" / ".shard-000.tmp"
        self.deadline = time.time() + timeout
        self.pid = None
        self.error = None

    def run(self) -> None:
        import ray

        try:
            actor = None
            while actor is None:
                if time.time() > self.deadline:
                    raise TimeoutError("self-play actor 0 never started")
                try:
                    if ray.is_initialized():
                        actor = ray.get_actor(f"zero-selfplay-{TAG}-0", namespace="prefect")
                except ValueError:  # not started yet
                    pass
                time.sleep(0.01)
            pid = ray.get(actor.pid.remote(), timeout=60)  # answers while a shard is played
            while not self.playing.is_dir():
                if time.time() > self.deadline:
                    raise TimeoutError(f"{self.playing} never appeared")
                time.sleep(0.005)
            os.kill(pid, signal.SIGKILL)
            self.pid = pid
        except (TimeoutError, OSError, ray.exceptions.RayError) as e:  # reported by the test
            self.error = e


def test_selfplay_actors_load_once_survive_a_kill_and_agree_with_the_process_pool(tmp_path, monkeypatch,
                                                                                  ray_cluster, pool_generation):
    """Two actors, one a node; actor 0 is killed in the middle of shard 0, restarted by Ray, and the
    shard's task retries on it. Each actor process read the champion once; the bytes are the pool's."""
    from flows.cluster import on_ray
    from flows.generation import zero_generation

    root = make_workspace(tmp_path / "actors")
    isolate_env(monkeypatch, root)
    killer = ActorKiller(root)
    killer.start()
    record = on_ray(zero_generation, ray_cluster)(params_file=SMOKE, overrides=["pipeline.selfplay_actors=2"],
                                                  workdir=str(root))
    killer.join(timeout=60)
    assert killer.error is None and killer.pid is not None, killer.error
    assert record["generation"] == 1
    assert outs(pool_generation) == outs(root)

    champion = record["champion_before"]["sha256"]
    actors = {a["name"]: a for a in record["selfplay"]["actors"]}
    assert sorted(actors) == [f"zero-selfplay-{TAG}-{i}" for i in range(2)]
    for i in range(2):
        a = actors[f"zero-selfplay-{TAG}-{i}"]
        assert a["loads"] == {champion: 1}, a
        assert a["shards"] == [f"gens/{TAG}/g0001/{i}"], a  # shard 0 played to the end only after the restart
        assert a["restarted"] == (i == 0), a
    assert len({killer.pid} | {a["pid"] for a in actors.values()}) == 3
