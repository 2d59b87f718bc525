"""A training window carried from the workspace that trained a champion into a line resumed from it (flows.carry),
through the stage functions DVC runs, on real shards of the smoke line."""

import json
import shutil

import pytest
import yaml

from flows import stages
from flows.carry import MANIFEST, carry_window, read_window, ship_window, window_dir
from flows.layout import LineError, Workspace
from pipeline_support import REPO, SMOKE
from zero.config import ConfigError, load_params

SMALL = ["pipeline.selfplay_shards=1", "selfplay.games_per_shard=2", "train.steps=3"]


def _line(root, overrides, generations):
    ws = Workspace(root)
    params = load_params(REPO / SMOKE, overrides)
    gens = [ws.generation(params.game.tag, g) for g in range(generations)]
    for gen in gens:
        gen.dir.mkdir(parents=True)
        gen.params_file.write_text(yaml.safe_dump(params.model_dump(mode="json")))
    return params, gens


@pytest.fixture
def shipped(tmp_path):
    """A workspace whose line played generations 1-3 with a window of 3, and its window shipped beside a
    copy of its champion in models/: (workspace root, generations, the manifest, the champion's sha256)."""
    root = tmp_path / "a"
    params, gens = _line(root, [*SMALL, "train.window_generations=3"], 4)
    stages.init(gens[0])
    for gen in gens[1:]:
        gen.prev.champion.exists() or shutil.copyfile(gens[0].champion, gen.prev.champion)
        stages.selfplay_shard(gen, 0)
        stages.dataset(gen)
    shutil.copyfile(gens[0].champion, gens[3].champion)
    models = root / "models"
    models.mkdir()
    tag = params.game.tag
    shutil.copyfile(gens[3].champion, models / f"{tag}.pt")
    sha = stages.file_sha256(models / f"{tag}.pt")
    manifest = ship_window(root, gens[3], window_dir(models, tag), sha, 3)
    return root, gens, manifest, sha


def _resume(tmp_path, shipped, overrides=()):
    """A new workspace with the shipped champion and window copied into its models/, started from them."""
    root, gens, _, _ = shipped
    other = tmp_path / "b"
    (other / "models").mkdir(parents=True)
    tag = gens[0].tag
    shutil.copyfile(root / "models" / f"{tag}.pt", other / "models" / f"{tag}.pt")
    shutil.copytree(root / "models" / f"{tag}.window", other / "models" / f"{tag}.window")
    resume = [*SMALL, f"pipeline.init_from=models/{tag}.pt", f"pipeline.init_window=models/{tag}.window",
              *overrides]
    return other, resume


def test_shipping_writes_the_last_window_by_age_with_files_named_by_content(shipped):
    root, gens, manifest, sha = shipped
    window = json.loads(gens[3].window_file.read_text())
    assert manifest["champion_sha256"] == sha and manifest["line"] == gens[0].tag
    assert manifest["window_generations"] == 3 and manifest["generation"] == 3
    assert [s["age"] for s in manifest["shards"]] == [2, 1, 0]  # oldest first, as the window lists them
    assert [s["sha256"] for s in manifest["shards"]] == [s["sha256"] for s in window["shards"]]
    folder = root / "models" / f"{gens[0].tag}.window"
    assert sorted(p.name for p in folder.iterdir()) == sorted([MANIFEST] + [s["file"] for s in manifest["shards"]])
    for s in manifest["shards"]:
        assert s["file"] == s["sha256"][:16] + ".npz"
        assert stages.file_sha256(folder / s["file"]) == s["sha256"]
    assert sum(s["positions"] for s in manifest["shards"]) == sum(s["positions"] for s in window["shards"]) > 0


def test_shipping_again_keeps_shards_still_in_the_window_and_drops_the_others(shipped):
    root, gens, first, sha = shipped
    folder = root / "models" / f"{gens[0].tag}.window"
    kept = folder / first["shards"][-1]["file"]
    stamp = kept.stat().st_mtime_ns
    (folder / "stray.npz.tmp").write_bytes(b"torn")  # what an interrupted shipping left
    again = ship_window(root, gens[2], folder, sha, 3)  # a window of two generations, one age older
    assert [s["age"] for s in again["shards"]] == [1, 0]
    assert {s["file"] for s in again["shards"]} < {s["file"] for s in first["shards"]}
    assert sorted(p.name for p in folder.iterdir()) == sorted([MANIFEST] + [s["file"] for s in again["shards"]])
    assert not kept.exists() or kept.stat().st_mtime_ns == stamp


def test_a_resumed_line_trains_its_first_generation_on_the_carried_window(tmp_path, shipped):
    root, gens, manifest, sha = shipped
    other, resume = _resume(tmp_path, shipped, ["train.window_generations=3"])
    params, (n0, n1, n2) = _line(other, resume, 3)
    summary = stages.init(n0)
    assert stages.file_sha256(n0.champion) == sha
    assert summary["carried_shards"] == 3
    assert summary["carried_positions"] == sum(s["positions"] for s in manifest["shards"])
    window0 = json.loads(n0.window_file.read_text())
    assert [s["generation"] for s in window0["shards"]] == [-2, -1, 0]
    assert [s["sha256"] for s in window0["shards"]] == [s["sha256"] for s in manifest["shards"]]
    assert all(s["path"].startswith(f"{n0.rel}/carried/") for s in window0["shards"])
    # generation 1 keeps the two newest carried generations beside its own games: a window of 3
    stages.selfplay_shard(n1, 0)
    window1 = stages.dataset(n1)
    assert [s["generation"] for s in window1["shards"]] == [-1, 0, 1]
    assert [s["sha256"] for s in window1["shards"][:2]] == [s["sha256"] for s in manifest["shards"][1:]]
    assert stages.train(n1)["trained"]
    # generation 2: the oldest carried one ages out
    shutil.copyfile(n0.champion, n1.champion)
    stages.selfplay_shard(n2, 0)
    assert [s["generation"] for s in stages.dataset(n2)["shards"]] == [0, 1, 2]


def test_generation_zero_keeps_its_carried_window_when_the_source_moves_on(tmp_path, shipped):
    other, resume = _resume(tmp_path, shipped)
    _, (n0,) = _line(other, resume, 1)
    stages.init(n0)
    first = n0.window_file.read_bytes()
    shutil.rmtree(other / "models" / f"{n0.tag}.window")  # the next shipping replaces the source
    stages.init(n0)
    assert n0.window_file.read_bytes() == first
    (n0.dir / "carried" / MANIFEST).write_text("{torn")  # a carried copy that cannot be read is made again
    with pytest.raises(LineError, match="has no window.json"):
        stages.init(n0)


def test_a_line_without_a_carried_window_starts_empty_as_before(tmp_path):
    params, (g0,) = _line(tmp_path, SMALL, 1)
    summary = stages.init(g0)
    assert g0.window_file.read_text() == json.dumps({"generation": 0, "shards": [], "window_generations": 0},
                                                   indent=1) + "\n"
    assert summary["carried_shards"] == 0
    assert json.loads((g0.dir / "carried" / MANIFEST).read_text())["shards"] == []
    # the switch off is not in the params hash: a campaign's recorded params keep the hash they were made with
    lineage = json.loads((REPO / "docs" / "strength" / "go-9-campaign-g83" / "go-9.json").read_text())
    recorded = tmp_path / "recorded.yaml"
    recorded.write_text(yaml.safe_dump(lineage["params"]))
    assert load_params(recorded).digest() == lineage["params_hash"]
    on = load_params(recorded, ["pipeline.init_window=models/go-9.window"])
    assert on.digest() != lineage["params_hash"] and on.model_dump()["pipeline"]["init_window"]


def test_a_window_of_another_champion_or_line_or_with_a_changed_shard_is_refused(tmp_path, shipped):
    root, gens, manifest, sha = shipped
    folder = root / "models" / f"{gens[0].tag}.window"
    read_window(folder, gens[0].tag, sha)  # as shipped: accepted
    with pytest.raises(LineError, match=f"not pipeline.init_from's \\({'0' * 12}\\)"):
        read_window(folder, gens[0].tag, "0" * 64)
    with pytest.raises(LineError, match=f"the window of line {gens[0].tag}, not go-9"):
        read_window(folder, "go-9", sha)
    shard = folder / manifest["shards"][1]["file"]
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(LineError, match=f"{shard.name}: shard of the carried window is missing or changed"):
        read_window(folder, gens[0].tag, sha)
    shard.unlink()
    with pytest.raises(LineError, match="missing or changed"):
        read_window(folder, gens[0].tag, sha)
    (folder / MANIFEST).write_text('{"line": "x"}')
    with pytest.raises(LineError, match="not a carried window's manifest"):
        read_window(folder, gens[0].tag, sha)
    with pytest.raises(LineError, match="has no window.json"):
        read_window(tmp_path / "nowhere", gens[0].tag, sha)


def test_a_refused_window_leaves_generation_zero_without_a_window(tmp_path, shipped):
    other, resume = _resume(tmp_path, shipped)
    manifest_file = other / "models" / f"{shipped[1][0].tag}.window" / MANIFEST
    manifest = json.loads(manifest_file.read_text())
    manifest_file.write_text(json.dumps({**manifest, "champion_sha256": "f" * 64}))
    _, (n0,) = _line(other, resume, 1)
    with pytest.raises(LineError, match="the window that trained the champion with sha256 ffffffffffff"):
        stages.init(n0)
    assert not n0.window_file.exists() and not (n0.dir / "carried").exists()
    assert stages.main(["init", n0.rel, "--root", str(other)]) == 1  # as DVC runs it: a named error


def test_init_window_needs_init_from():
    with pytest.raises(ConfigError, match="init_window: a carried window needs the champion it trained"):
        load_params(REPO / SMOKE, ["pipeline.init_window=models/x.window"])


def test_carry_with_no_source_writes_an_empty_manifest(tmp_path):
    _, (g0,) = _line(tmp_path, SMALL, 1)
    assert carry_window(g0, None, "a" * 64) == []
    assert json.loads((g0.dir / "carried" / MANIFEST).read_text()) == {
        "champion_sha256": "a" * 64, "line": g0.tag, "shards": []}
