"""The arithmetic a line runs in: bfloat16 asked of a CPU without bfloat16 instructions is refused before any
work, naming the switches and the fix; each generation records the CPU and the number formats it used."""

import pytest

import zero.inference as inference
from flows.request import GenerationRequest
from zero.config import ConfigError, load_params

REPO = inference.Path(__file__).resolve().parent.parent
BF16 = ["selfplay.fast_inference=true", "selfplay.cpu_bf16=true", "train.cpu_bf16=true"]


@pytest.fixture
def no_bf16(monkeypatch):
    """This machine's CPU, as one without bfloat16 instructions (an AMD EPYC with AVX2 alone)."""
    monkeypatch.setattr(inference, "cpu_has_bfloat16", lambda: False)
    monkeypatch.setattr(inference.torch.cuda, "is_available", lambda: False)


def test_bf16_on_a_cpu_without_its_instructions_is_refused_naming_the_switches_and_the_fix(no_bf16):
    why = inference.bf16_refusal(load_params(None, BF16))
    assert why.startswith("selfplay.cpu_bf16, train.cpu_bf16: this CPU (")
    assert "no bfloat16 instructions" in why and "selfplay.cpu_bf16=false train.cpu_bf16=false" in why
    assert inference.bf16_refusal(load_params(None, [])) is None  # float32 runs anywhere
    gpu = load_params(None, BF16 + ["selfplay.device=cuda", "train.device=cuda"])
    assert inference.bf16_refusal(gpu) is None  # on a GPU the CPU's switch does not apply


def test_bf16_on_a_cpu_with_its_instructions_runs(monkeypatch):
    monkeypatch.setattr(inference, "cpu_has_bfloat16", lambda: True)
    assert inference.bf16_refusal(load_params(None, BF16)) is None
    monkeypatch.setattr(inference, "cpu_has_bfloat16", lambda: None)  # no /proc/cpuinfo: nothing to tell by
    assert inference.bf16_refusal(load_params(None, BF16)) is None


def test_the_flow_and_the_check_refuse_before_any_work(no_bf16, tmp_path, capsys):
    from flows import serve, standalone

    (tmp_path / "bf16.yaml").write_text("selfplay:\n  fast_inference: true\n  cpu_bf16: true\n")
    with pytest.raises(ConfigError, match=r"selfplay.cpu_bf16: this CPU .* no bfloat16 instructions"):
        GenerationRequest(params_file="bf16.yaml", workdir=str(tmp_path)).load()
    assert serve.main(["--root", str(tmp_path), "check", "bf16.yaml"]) == 2
    assert "selfplay.cpu_bf16=false" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="selfplay.cpu_bf16"):
        standalone.run(tmp_path, load_params(tmp_path / "bf16.yaml"), generations=1, say=lambda *a: None)
    assert not (tmp_path / "gens").exists()
    override = GenerationRequest(params_file="bf16.yaml", overrides=["selfplay.cpu_bf16=false"], workdir=str(tmp_path))
    assert override.load().selfplay.cpu_bf16 is False


def test_the_record_names_the_cpu_and_each_stages_format(monkeypatch):
    monkeypatch.setattr(inference.torch.cuda, "is_available", lambda: False)
    math = inference.arithmetic(load_params(REPO / "campaigns" / "go-9.yaml"))
    assert math["cpu"] == inference.cpu_model() and math["cpu"]
    assert math["bf16_instructions"] == inference.cpu_has_bfloat16()
    assert (math["selfplay"], math["train"], math["gate"]) == (
        "bfloat16, channels-last", "bfloat16, channels-last", "float32, channels-last")
    assert inference.arithmetic(load_params(None, []))["selfplay"] == "float32"
