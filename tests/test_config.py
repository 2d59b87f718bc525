"""params.yaml: sections, overrides, and refusals that name the field."""

from pathlib import Path

import pytest

from zero.config import ConfigError, load_params

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_defaults_are_9x9_go_b6c64():
    p = load_params(None)
    assert (p.game.name, p.game.size, p.network.size, p.network.blocks, p.network.filters) == ("go", 9, "b6c64", 6, 64)
    assert p.gate.games == 400 and p.gate.threshold == 0.55


def test_overrides_parse_yaml_values(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("selfplay:\n  visits: 50\ngame:\n  komi: 6.5\n")
    p = load_params(f, ["selfplay.visits=20", "train.lr_milestones=[10, 20]", "game.name=gomoku"])
    assert p.selfplay.visits == 20 and p.game.komi == 6.5 and p.train.lr_milestones == [10, 20]
    assert p.game.tag == "gomoku-15x15x5"


@pytest.mark.parametrize("text,field", [
    ("selfplay:\n  visitz: 3\n", "selfplay.visitz: unknown key"),
    ("game:\n  size: 4\n", "game.size"),
    ("game:\n  size: 21\n", "game.size"),
    ("network:\n  size: big\n", "network.size"),
    ("train:\n  momentum: 1.5\n", "train.momentum"),
    ("gate:\n  threshold: two\n", "gate.threshold"),
    ("colour: black\n", "colour: unknown key"),
    ("- a\n- b\n", "top level must be a mapping"),
    ("game: [\n", "not valid YAML"),
])
def test_bad_params_name_the_field(tmp_path, text, field):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_params(f)
    assert field in str(e.value) and "bad.yaml" in str(e.value)


def test_bad_override_is_named():
    with pytest.raises(ConfigError, match="selfplay.visits"):
        load_params(None, ["selfplay.visits=-3"])
    with pytest.raises(ConfigError, match="section.key=value"):
        load_params(None, ["visits"])


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="nope.yaml"):
        load_params(tmp_path / "nope.yaml")


def test_digest_changes_with_any_value():
    assert load_params(None).digest() == load_params(None).digest()
    assert load_params(None).digest() != load_params(None, ["mcts.c_puct=2.0"]).digest()


# The params hash of the defaults: a switch that is off must leave every earlier params file's hash (and so its
# recorded lineage) as it was. (Recorded again when ladder.anchor's default became the one Go scale, gnugo:1=0;
# a generation's params snapshot holds its anchor, so the hashes of recorded generations did not change.)
DEFAULTS_DIGEST = "d16878b9f6a5b814ac03c253d517f5c8122a9f6aefa3ec191d8e4092e048497b"


def test_switches_that_are_off_keep_the_params_hash():
    assert load_params(None).digest() == DEFAULTS_DIGEST
    explicit = ["selfplay.cpu_bf16=false", "gate.cpu_bf16=false", "network.global_pooling=false", "network.aux_heads=false", "train.holdout_share=0",
                "train.mixed_precision=false", "train.channels_last=false", "train.cpu_bf16=false", "train.cuda_graph=false", "train.max_samples_per_position=null", "train.ownership_weight=1.5",
                "pipeline.selfplay_actors=0", "ladder.every=1", "mcts.lcb_stdevs=0", "mcts.lcb_min_visit_share=0.1",
                "mcts.root_policy_temperature=1"]
    assert load_params(None, explicit).digest() == DEFAULTS_DIGEST


@pytest.mark.parametrize("override", [
    "network.global_pooling=true", "network.global_pooling_every=2", "network.aux_heads=true",
    "train.score_weight=0.1", "train.max_samples_per_position=4", "train.holdout_share=0.05",
    "train.mixed_precision=true", "train.channels_last=true", "train.cpu_bf16=true", "train.cuda_graph=true", "pipeline.selfplay_actors=2",
    "ladder.every=3", "mcts.lcb_stdevs=3", "mcts.root_policy_temperature=1.25",
    ["selfplay.fast_inference=true", "selfplay.cpu_bf16=true"], ["gate.fast_inference=true", "gate.cpu_bf16=true"],
])
def test_each_switch_enters_the_params_hash(override):
    overrides = override if isinstance(override, list) else [override]
    assert load_params(None, overrides).digest() != DEFAULTS_DIGEST
    if "selfplay.cpu_bf16=true" in overrides or "gate.cpu_bf16=true" in overrides:
        assert load_params(None, overrides).digest() != load_params(None, overrides[:1]).digest()


@pytest.mark.parametrize("override,field", [
    ("train.holdout_share=1", "train.holdout_share"),
    ("train.max_samples_per_position=0", "train.max_samples_per_position"),
    ("network.global_pooling=1", "network.global_pooling"),
    ("network.global_pooling_every=0", "network.global_pooling_every"),
    ("selfplay.cpu_bf16=true", "cpu_bf16 needs fast_inference"),
    ("gate.cpu_bf16=true", "cpu_bf16 needs fast_inference"),
    ("ladder.every=0", "ladder.every"),
    ("mcts.lcb_stdevs=-1", "mcts.lcb_stdevs"),
    ("mcts.lcb_min_visit_share=0", "mcts.lcb_min_visit_share"),
    (["mcts.lcb_stdevs=3", "mcts.root=gumbel"], "lcb_stdevs needs root: puct"),
    ("mcts.root_policy_temperature=0", "mcts.root_policy_temperature"),
    ("mcts.root_policy_temperature=10", "mcts.root_policy_temperature"),
    (["mcts.root_policy_temperature=1.25", "mcts.root=gumbel"], "root_policy_temperature needs root: puct"),
])
def test_bad_switch_values_name_the_field(override, field):
    with pytest.raises(ConfigError, match=field):
        load_params(None, override if isinstance(override, list) else [override])


def test_a_key_given_twice_is_refused_naming_the_key_and_both_lines(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text("game:\n  name: go\nselfplay:\n  visits: 10\ntrain:\n  steps: 5\nselfplay:\n  visits: 20\n")
    with pytest.raises(ConfigError, match=r"duplicate key 'selfplay': first on line 3, again on line 7"):
        load_params(path)
    path.write_text("selfplay:\n  visits: 10\n  visits: 20\n")
    with pytest.raises(ConfigError, match=r"duplicate key 'visits'"):
        load_params(path)


@pytest.mark.parametrize("name", sorted(
    [p.name for p in REPO_ROOT.glob("params*.yaml")] + [f"campaigns/{p.name}" for p in (REPO_ROOT / "campaigns").glob("*.yaml")]
))
def test_every_params_and_campaign_file_in_the_repository_is_valid(name):
    params = load_params(REPO_ROOT / name)
    assert params.digest()
