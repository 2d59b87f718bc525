"""Workspace layout, seeds and the line lock of the pipeline (no services needed)."""

import os
import signal
import subprocess
import sys
import time

import pytest

from flows.layout import (LineBusy, LineError, Workspace, derive_seed, read_json, replacing_dir, split_counts,
                          write_json)


def test_seeds_are_deterministic_distinct_and_31_bit():
    seeds = {(g, stage, k): derive_seed(7, g, stage, k) for g in range(5) for stage in ("selfplay", "gate")
             for k in range(8)}
    assert len(set(seeds.values())) == len(seeds)
    assert all(0 <= s < 2**31 for s in seeds.values())
    assert derive_seed(7, 3, "selfplay", 2) == seeds[(3, "selfplay", 2)]
    assert derive_seed(8, 3, "selfplay", 2) != seeds[(3, "selfplay", 2)]


@pytest.mark.parametrize("total,parts,unit,expected", [
    (400, 4, 2, [100, 100, 100, 100]),
    (10, 4, 2, [4, 2, 2, 2]),
    (9, 2, 2, [4, 5]),
    (8, 3, 1, [3, 3, 2]),
])
def test_split_counts(total, parts, unit, expected):
    assert split_counts(total, parts, unit) == expected
    assert sum(split_counts(total, parts, unit)) == total


def test_generations_list_and_next_generation(tmp_path):
    ws = Workspace(tmp_path)
    assert ws.generations("go-9") == [] and ws.next_generation("go-9") == 1
    ws.register(ws.generation("go-9", 0))
    ws.register(ws.generation("go-9", 1))
    ws.register(ws.generation("go-9", 1))  # idempotent
    ws.register(ws.generation("gomoku-6x6x4", 0))
    assert ws.generations("go-9") == [0, 1]
    data = ws.read_generations()
    assert data["generations"]["go-9-g0001"] == {"dir": "gens/go-9/g0001", "prev": "gens/go-9/g0000",
                                                 "tag": "go-9", "g": 1}
    assert set(data["lines"]) == {"go-9", "gomoku-6x6x4"}
    assert ws.next_generation("go-9") == 1  # generation 1 has not finished: resume it
    gen = ws.generation("go-9", 1)
    gen.dir.mkdir(parents=True)
    gen.champion.write_bytes(b"x")
    gen.record_file.write_text("{}")
    assert ws.next_generation("go-9") == 2
    assert gen.stage("selfplay") == "selfplay@go-9-g0001"
    assert ws.generation("go-9", 0).stage("selfplay") == "init@go-9"


def test_second_lock_on_a_line_is_refused_with_the_holder_named(tmp_path):
    ws = Workspace(tmp_path)
    with ws.lock("go-9", 3, owner="run-abc"):
        with pytest.raises(LineBusy, match=r"generation 3 of go-9 is already running \(flow run run-abc, pid"):
            ws.lock("go-9", 3, owner="run-def").acquire()
        ws.lock("gomoku-6x6x4", 1).acquire().release()  # other lines are independent
    ws.lock("go-9", 4).acquire().release()  # released on exit


def test_lock_of_a_killed_holder_is_released(tmp_path):
    code = (
        "import sys, time; sys.path.insert(0, %r)\n"
        "from flows.layout import Workspace\n"
        "Workspace(%r).lock('go-9', 1, owner='doomed').acquire()\n"
        "print('locked', flush=True); time.sleep(60)\n"
    ) % (os.getcwd(), str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        with pytest.raises(LineBusy, match="doomed"):
            Workspace(tmp_path).lock("go-9", 1).acquire()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        time.sleep(0.1)
        Workspace(tmp_path).lock("go-9", 1).acquire().release()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_torn_json_record_is_refused_with_its_path(tmp_path):
    path = tmp_path / "gens" / "generation.json"
    path.parent.mkdir()
    write_json(path, {"gate": {"wins": 11}, "train": {"steps": 1000}})
    assert read_json(path) == {"gate": {"wins": 11}, "train": {"steps": 1000}}
    path.write_text(path.read_text()[:17])  # what a copy cut short leaves
    with pytest.raises(LineError, match=rf"{path}: torn or not JSON \(Unterminated string.*line 3"):
        read_json(path)
    path.write_text("")
    with pytest.raises(LineError, match="torn or not JSON"):
        read_json(path)


def test_a_folder_is_replaced_whole_or_not_at_all(tmp_path):
    target = tmp_path / "go-9.reproduce"
    target.mkdir()
    (target / "recipe.json").write_text("old")
    (target / "stale.yaml").write_text("old")
    with pytest.raises(LineError, match="no entry"):
        with replacing_dir(target) as tmp:
            (tmp / "recipe.json").write_text("half")
            raise LineError("dvc.lock: no entry for train@go-9-g0003")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["go-9.reproduce"]
    assert {p.name: p.read_text() for p in target.iterdir()} == {"recipe.json": "old", "stale.yaml": "old"}
    with replacing_dir(target) as tmp:
        (tmp / "recipe.json").write_text("new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["go-9.reproduce"]
    assert {p.name: p.read_text() for p in target.iterdir()} == {"recipe.json": "new"}
    with replacing_dir(tmp_path / "fresh") as tmp:
        (tmp / "a").write_text("a")
    assert (tmp_path / "fresh" / "a").read_text() == "a"
