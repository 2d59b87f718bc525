"""Self-play actors (flows.actors) without a cluster: the player they wrap, and the resource check."""

import pytest

from flows import stages
from pipeline_support import smoke_line
from zero.network import init_checkpoint

pytest.importorskip("ray")


@pytest.fixture
def line(tmp_path):
    """Generation 0 (initialised) and 1 of the smoke line, small shards."""
    params, (g0, g1) = smoke_line(tmp_path, ["pipeline.selfplay_shards=2", "selfplay.games_per_shard=4"])
    return params, g0, g1


def test_a_long_lived_player_loads_the_network_once_and_plays_the_same_bytes(line, tmp_path):
    from flows.actors import SelfPlayer

    params, g0, g1 = line
    alone = [stages.selfplay_shard(g1, k)["sha256"] for k in range(2)]
    sgf = {p.relative_to(g1.games_dir): p.read_bytes() for p in g1.games_dir.rglob("*.sgf.gz")}
    assert len(sgf) == 2  # one collection a shard
    for k in range(2):
        g1.shard(k).unlink()
    player = SelfPlayer()
    assert [player.play(str(g1.root), g1.rel, k)["sha256"] for k in range(2)] == alone
    assert {p.relative_to(g1.games_dir): p.read_bytes() for p in g1.games_dir.rglob("*.sgf.gz")} == sgf
    first = stages.file_sha256(g0.champion)
    assert player.loads == {first: 1} and player.shards == [f"{g1.rel}/0", f"{g1.rel}/1"]
    init_checkpoint(params, g0.champion, seed=12345)  # a new network under the same name is read again
    g1.shard(0).unlink()
    player.play(str(g1.root), g1.rel, 0)
    assert player.loads == {first: 1, stages.file_sha256(g0.champion): 1}


@pytest.mark.parametrize("nodes,n,gpus,fits", [
    ([{"CPU": 1.0}, {"CPU": 1.0}], 2, 0, True),
    ([{"CPU": 1.0}, {"CPU": 1.0}], 3, 0, False),
    ([{"CPU": 8.0, "GPU": 2.0}, {"CPU": 8.0, "GPU": 1.0}], 3, 1, True),
    ([{"CPU": 8.0, "GPU": 2.0}, {"CPU": 8.0, "GPU": 1.0}], 2, 1.5, False),
    ([{"CPU": 8.0, "GPU": 4.0}], 8, 0.5, True),
    ([{"CPU": 1.0, "GPU": 4.0}], 2, 1, False),
])
def test_actors_the_cluster_cannot_hold_are_refused_naming_the_field(monkeypatch, nodes, n, gpus, fits):
    import ray

    from flows import actors, capacity

    monkeypatch.setattr(capacity, "node_resources", lambda: nodes)
    monkeypatch.setattr(actors, "node_resources", lambda: nodes)
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"GPU": sum(r.get("GPU", 0.0) for r in nodes)})
    if fits:
        actors.require_actor_resources(n, gpus)
    else:
        with pytest.raises(capacity.ClusterResourceError, match=r"pipeline\.(selfplay_actors|num_gpus)="):
            actors.require_actor_resources(n, gpus)
