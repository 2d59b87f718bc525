"""The shipped player plays as it was measured: without --params, `zero gtp`, `zero play` and `zero match` take
the search settings from the network's lineage (<model>.json beside it), and the visits from its ladder."""

import json
import shutil
from pathlib import Path

import pytest

from zero.cli import _match_params, build_parser
from zero.cli_args import lineage_of, model_or_shipped, params_of, player_params
from zero.config import load_params
from zero.pairings import read_pairings

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """A working directory without a params.yaml, as a user's would be."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def resolved(argv):
    args = build_parser().parse_args(argv)
    params = params_of(args)
    model = model_or_shipped(params, args.model)
    return args, player_params(args, params, model), model


def test_the_default_gtp_resolves_the_search_its_committed_ladder_measured(elsewhere, capsys):
    args, params, model = resolved(["gtp"])
    lineage = json.loads((REPO / "models" / "go-9.json").read_text())
    assert Path(model) == REPO / "models" / "go-9.pt"
    measured = [r for r in read_pairings(REPO / lineage["ladder"]["source"]) if r.get("a_sha256") == lineage["sha256"]]
    assert measured, "the shipped champion's ladder holds none of its pairings"
    search = params.mcts.model_dump(mode="json")
    for pairing in measured:
        assert {k: search[k] for k in pairing["search"]} == pairing["search"], pairing["b"]
        assert args.visits == pairing["visits"]
    said = capsys.readouterr().err
    assert "search settings go-9.pt was trained and measured with" in said and f"{args.visits} visits" in said


def test_params_and_set_override_the_lineage(elsewhere):
    paper = load_params(REPO / "params.yaml")
    _, params, _ = resolved(["gtp", "--params", str(REPO / "params.yaml")])
    assert params.mcts == paper.mcts
    args, params, _ = resolved(["play", "--set", "mcts.c_puct=2.5", "--visits", "50"])
    lineage = json.loads((REPO / "models" / "go-9.json").read_text())
    assert params.mcts.c_puct == 2.5 and args.visits == 50
    assert params.mcts.score_utility == lineage["params"]["mcts"]["score_utility"]


def test_a_lineage_of_another_network_or_none_is_not_used(elsewhere):
    model = elsewhere / "net.pt"
    shutil.copy(REPO / "models" / "go-9.pt", model)
    assert lineage_of(model) is None  # no lineage beside it
    lineage = json.loads((REPO / "models" / "go-9.json").read_text())
    (elsewhere / "net.json").write_text(json.dumps({**lineage, "sha256": "0" * 64}))
    assert lineage_of(model) is None  # a lineage of another network
    (elsewhere / "net.json").write_text("{torn")
    assert lineage_of(model) is None
    (elsewhere / "net.json").write_text(json.dumps(lineage))
    assert lineage_of(model)[1]["sha256"] == lineage["sha256"]
    args = build_parser().parse_args(["match", "--a", "random", "--b", str(model)])
    params = _match_params(args)
    assert params.mcts.model_dump() == load_params(None, []).mcts.model_copy(
        update=lineage["params"]["mcts"]).model_dump()
    assert args.visits is None  # a match plays at its gate's visits unless told
    args = build_parser().parse_args(["match", "--a", "shipped", "--b", "mcts:20"])
    assert _match_params(args).mcts.score_utility == lineage["params"]["mcts"]["score_utility"]
    assert args.a == str(REPO / "models" / "go-9.pt")
