"""The command line of the pipeline: params checks and the flow's parameter model."""

import pytest
from pydantic import ValidationError

from flows.generation import GenerationRequest
from flows.serve import main
from pipeline_support import REPO, SMOKE


def test_check_accepts_the_shipped_params_files(capsys):
    for name in ("params.yaml", SMOKE):
        assert main(["--root", str(REPO), "check", name]) == 0
    out = capsys.readouterr().out
    assert "params.yaml: ok (go-9" in out and f"{SMOKE}: ok (gomoku-6x6x4" in out


@pytest.mark.parametrize("text,field", [
    ("selfplay:\n  visitz: 3\n", "selfplay.visitz: unknown key"),
    ("train:\n  steps: 0\n", "train.steps"),
    ("pipeline:\n  selfplay_shards: many\n", "pipeline.selfplay_shards"),
    ("gamez: {}\n", "gamez: unknown key"),
])
def test_check_names_the_bad_field(tmp_path, capsys, text, field):
    (tmp_path / "bad.yaml").write_text(text)
    assert main(["--root", str(tmp_path), "check", "bad.yaml"]) == 2
    assert field in capsys.readouterr().err


def test_an_override_is_checked_like_the_file(capsys):
    assert main(["--root", str(REPO), "check", SMOKE, "--set", "gate.threshold=2"]) == 2
    assert "gate.threshold" in capsys.readouterr().err


def test_the_flow_parameters_are_validated(tmp_path):
    with pytest.raises(ValidationError, match="generation"):
        GenerationRequest(generation=0)
    with pytest.raises(ValidationError, match="extra"):
        GenerationRequest(params="x.yaml")
    req = GenerationRequest(params_file=SMOKE, overrides=["train.steps=3"], workdir=str(REPO))
    assert req.load().train.steps == 3 and req.root() == REPO
