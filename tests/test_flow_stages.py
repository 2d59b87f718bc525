"""The generation-level stage functions (what DVC runs and the flow's tasks call), without services."""

import json

import pytest
import yaml

from flows import stages
from flows.layout import Workspace, derive_seed
from pipeline_support import REPO, SMOKE, smoke_line
from zero.config import load_params
from zero.sgf import read_collection


@pytest.fixture
def line(tmp_path):
    """Generation 0 and 1 of the smoke line, with params snapshots and generation 0 initialised."""
    params, (g0, g1) = smoke_line(tmp_path, ["pipeline.selfplay_shards=2", "selfplay.games_per_shard=4",
                                             "train.steps=3", "gate.games=4", "gate.sequential=false"])
    return params, g0, g1


def test_init_makes_a_champion_and_an_empty_window(line):
    params, g0, _ = line
    assert json.loads(g0.window_file.read_text())["shards"] == []
    first = stages.file_sha256(g0.champion)
    stages.init(g0)  # done already: the same file stays
    assert stages.file_sha256(g0.champion) == first


def test_a_finished_shard_is_not_replayed_and_a_corrupt_one_is(line):
    params, _, g1 = line
    first = stages.selfplay_shard(g1, 0)
    assert first["replayed"] and first["games"] == 4
    assert first["seed"] == derive_seed(params.pipeline.seed, 1, "selfplay", 0)
    stamp = g1.shard(0).stat().st_mtime_ns
    again = stages.selfplay_shard(g1, 0)
    assert not again["replayed"] and g1.shard(0).stat().st_mtime_ns == stamp
    # the CPU time of the shard's play, measured in its process; a shard kept from disk cost nothing now,
    # and says what the run that played it spent (kept in the generation's spent/ file)
    assert 0 < first["cpu_s"] and "cpu_s" not in again
    assert again["earlier_cpu_s"] == first["cpu_s"] == json.loads(g1.spent_file("selfplay-000").read_text())["cpu_s"]
    played_here = ("replayed", "seconds", "nn_evals", "cpu_s", "earlier_cpu_s")
    assert {k: v for k, v in again.items() if k not in played_here} == \
        {k: v for k, v in first.items() if k not in played_here}
    g1.shard(0).write_bytes(g1.shard(0).read_bytes()[:100])  # a torn file
    redone = stages.selfplay_shard(g1, 0)
    assert redone["replayed"] and redone["sha256"] == first["sha256"]  # same seed, same bytes
    assert len(read_collection(g1.shard_sgf_dir(0) / "shard-000.sgf.gz")) == 4
    assert not list(g1.games_dir.rglob("*.tmp"))


def test_the_whole_generation_from_the_stage_functions(line):
    params, g0, g1 = line
    shards = stages.selfplay(g1, workers=1)
    window = stages.dataset(g1)
    assert [s["path"] for s in window["shards"]] == [f"{g1.rel}/games/shard-000.npz", f"{g1.rel}/games/shard-001.npz"]
    assert [s["sha256"] for s in window["shards"]] == [s["sha256"] for s in shards]
    summary = stages.train(g1)
    assert summary["trained"] and g1.candidate.is_file() and summary["cpu_s"] > 0
    kept = stages.train(g1)
    assert not kept["trained"] and "cpu_s" not in kept  # a candidate that loads is kept, at no cost
    assert kept["earlier_cpu_s"] == summary["cpu_s"]
    part = stages.gate_part(g1, 0)
    assert part["cpu_s"] > 0 and "cpu_s" not in json.loads(g1.gate_part(0).read_text())
    again = stages.gate_part(g1, 0)  # read back: played by the run before
    assert "cpu_s" not in again and again["earlier_cpu_s"] == part["cpu_s"]
    g1.spent_file("gate-000").write_text("{torn")  # a spent/ file that cannot be read only loses the figure
    assert "earlier_cpu_s" not in stages.gate_part(g1, 0)
    result = stages.gate(g1, workers=1)
    assert result["games"] == params.gate.games == result["wins"] + result["losses"] + result["draws"]
    assert result["champion_sha256"] == stages.file_sha256(g0.champion)
    parts = sorted((g1.gate_dir / "sgf").rglob("*.sgf.gz"))  # each part's games, one collection
    assert [p.name for p in parts] == ["match.sgf.gz"] * len(parts)
    assert sum(len(read_collection(p)) for p in parts) == params.gate.games
    chosen = stages.champion(g1)
    winner = g1.candidate if result["passed"] else g0.champion
    assert chosen["sha256"] == stages.file_sha256(winner) == stages.file_sha256(g1.champion)


def test_training_twice_gives_the_same_file(line, tmp_path):
    _, _, g1 = line
    stages.selfplay(g1, workers=1)
    stages.dataset(g1)
    first = stages.train(g1)["sha256"]
    g1.candidate.unlink()
    assert stages.train(g1)["sha256"] == first


def test_a_window_keeps_the_last_w_generations(tmp_path):
    ws = Workspace(tmp_path)
    params = load_params(REPO / SMOKE, ["train.window_generations=2", "pipeline.selfplay_shards=1",
                                        "selfplay.games_per_shard=2"])
    gens = [ws.generation(params.game.tag, g) for g in range(4)]
    for gen in gens:
        gen.dir.mkdir(parents=True)
        gen.params_file.write_text(yaml.safe_dump(params.model_dump(mode="json")))
    stages.init(gens[0])
    for gen in gens[1:]:
        gen.prev.champion.exists() or gen.prev.champion.write_bytes(gens[0].champion.read_bytes())
        stages.selfplay_shard(gen, 0)
        window = stages.dataset(gen)
    assert [s["generation"] for s in window["shards"]] == [2, 3]
    assert [p.name for p in stages.window_paths(gens[3])] == ["shard-000.npz", "shard-000.npz"]


def test_a_stage_command_reports_one_line(tmp_path, capsys):
    assert stages.main(["train", "gens/nope", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "not a generation directory" in err and "Traceback" not in err  # a named input error: one line


def test_a_defect_in_a_stage_shows_its_whole_traceback(line, capsys, monkeypatch):
    """Not a named input error: DVC's log must show where it happened, not one line."""
    params, g0, g1 = line

    def broken(gen, args):
        return {"mean": sum([]) / len([])}

    monkeypatch.setitem(stages.STAGES, "train", broken)
    assert stages.main(["train", g1.rel, "--root", str(g1.root)]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "in broken" in err
    assert err.rstrip().splitlines()[-1].endswith("ZeroDivisionError: division by zero")


def test_a_resumed_generation_counts_what_its_earlier_attempt_finished():
    """generation_compute: shards, training and gate parts reused from an earlier attempt add their CPU time
    (a cached task's own cpu_s, or the earlier_cpu_s read from spent/) to the CPU time and the core-hours."""
    from flows.generation import generation_compute

    selfplay = [{"cpu_s": 100.0, "reused": False}, {"earlier_cpu_s": 90.0, "reused": True},
                {"cpu_s": 80.0, "reused": True}, {"reused": True}]  # the last: no figure kept
    trained = {"earlier_cpu_s": 50.0, "reused": True}
    gate = {"cpu_s": 30.0, "earlier_cpu_s": 20.0}
    record = generation_compute(1000.0, None, 5.0, selfplay, trained, gate)
    assert record["cpu_s_by_stage"] == {"selfplay": 100.0, "train": 0.0, "gate": 30.0, "flow": 5.0,
                                        "earlier_attempts": 240.0}
    assert record["cpu_s"] == 375.0
    assert record["core_hours"] == round((1000.0 * record["cores"] + 240.0) / 3600, 4)
    fresh = generation_compute(1000.0, None, 5.0, selfplay[:1], {"cpu_s": 7.0, "reused": False}, {"cpu_s": 1.0})
    assert "earlier_attempts" not in fresh["cpu_s_by_stage"]
    assert fresh["core_hours"] == round(1000.0 * fresh["cores"] / 3600, 4)


def _worker_facts(gen, i):
    """What a stage worker finds as it starts its task: where it is, its environment, what it has imported."""
    import os
    import sys

    return {"cwd": os.getcwd(), "mark": os.environ.get("ZERO_WORKER_MARK"), "torch": "torch" in sys.modules,
            "server": os.getppid(), "pid": os.getpid()}


def test_stage_workers_fork_from_a_server_with_torch_imported_in_their_pool_s_directory_and_environment(
        tmp_path, monkeypatch):
    import os

    seen = []
    for mark in ("first", "second"):  # two pools, as self-play then the gate
        here = tmp_path / mark
        here.mkdir()
        monkeypatch.chdir(here)
        monkeypatch.setenv("ZERO_WORKER_MARK", mark)
        facts = stages._fan_out(_worker_facts, None, 2, 2)
        assert [(f["cwd"], f["mark"], f["torch"]) for f in facts] == [(str(here), mark, True)] * 2
        seen += facts
    servers = {f["server"] for f in seen}
    assert len(servers) == 1 and servers != {os.getpid()}  # one fork server for the process's pools
    assert len({f["pid"] for f in seen}) >= 2 and os.getpid() not in {f["pid"] for f in seen}


def _wait_long(gen, i):
    import os
    import time

    os.write(1, f"worker {os.getpid()}\n".encode())  # one write: the two workers' lines cannot interleave
    time.sleep(600)


def test_stage_workers_and_their_server_end_when_the_process_that_made_the_pool_is_killed(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    script = ("import sys; sys.path.insert(0, 'tests'); from flows import stages; "
              "from test_flow_stages import _wait_long; stages._fan_out(_wait_long, None, 2, 2)")
    maker = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True)
    def stat(pid):  # (state, parent) from /proc, None once the process is gone
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return fields[0], int(fields[1])

    pids = {int(maker.stdout.readline().split()[1]) for _ in range(2)}
    server = {stat(p)[1] for p in pids}  # the workers' parent: the fork server, not the pool's maker
    assert len(server) == 1 and maker.pid not in pids | server
    os.kill(maker.pid, signal.SIGKILL)
    maker.wait()
    deadline, alive = time.time() + 20, pids | server
    while alive and time.time() < deadline:
        time.sleep(0.1)
        alive = {p for p in alive if stat(p) and stat(p)[0] != "Z"}
    assert not alive, f"still running after the pool's maker was killed: {alive}"


def _pool_size_pinned(cores: set[int], env: dict | None = None, fan_out: bool = True) -> list[int]:
    """The flow's default runner's workers, and (fan_out) the processes stages' self-play shards ran in, in a
    process pinned to `cores`."""
    import os
    import subprocess
    import sys

    script = ("import os, flows.generation as g, flows.stages as s; print(g.LOCAL_RUNNER._max_workers, "
              + ("len(set(s._fan_out(lambda gen, i: os.getpid(), None, 4, None))))" if fan_out else "0)"))
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True,
                         env={**os.environ, **(env or {})}, preexec_fn=lambda: os.sched_setaffinity(0, cores))
    return [int(x) for x in out.stdout.split()]


def test_a_process_pinned_to_one_core_runs_its_tasks_one_at_a_time_not_time_sliced_on_it():
    """`taskset -c 1 make campaign`: one worker for the flow's tasks, and `dvc repro`'s four self-play shards
    played in turn in the process itself. Prefect's own setting still rules where it is set."""
    import os

    one = {sorted(os.sched_getaffinity(0))[0]}
    assert _pool_size_pinned(one) == [1, 1]
    assert _pool_size_pinned(one, {"PREFECT_TASKS_RUNNER_PROCESS_POOL_MAX_WORKERS": "3"}, fan_out=False)[0] == 3
    if os.cpu_count() >= 2:
        assert _pool_size_pinned(set(range(2)), fan_out=False)[0] == 2
