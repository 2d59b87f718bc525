"""Bad input: every one gets `zero: error: ...`, exit status 2, no traceback and nothing half-written.

Checkpoints for another game or board, bad counts and player specs, corrupt or
non-finite checkpoints, params without bounds or with the wrong types, Ctrl-C
in `zero play` and `zero train`, and progress kept off stdout. Two
property-based tests feed random params files and random arguments to the CLI.
"""

import glob
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TINY, run_with_terminal_stderr
from zero.cli import main
from zero.config import ConfigError, load_params
from zero.games import make_game
from zero.network import (CHECKSUM_KEY, CheckpointError, init_checkpoint, init_network, load_checkpoint,
                          net_from_parts, save_checkpoint)

ROOT = Path(__file__).parents[1]
SETS = [x for o in TINY for x in ("--set", o)]
GO = ["--set", "network.size=b1c8"]  # 9x9 Go with a tiny network


def cli(capsys, *args):
    """Run `zero ARGS` in this process: (exit status, stdout, stderr)."""
    try:
        rc = main([str(a) for a in args])
    except SystemExit as e:  # argparse refusals
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def refused(rc, err, *needles):
    assert rc == 2, err
    assert "zero: error:" in err and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A working directory without params.yaml, with a 9x9 and a 7x7 Go checkpoint."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    init_checkpoint(load_params(None, ["network.size=b1c8"]), tmp_path / "go9.pt", 0)
    init_checkpoint(load_params(None, ["network.size=b1c8", "game.size=7"]), tmp_path / "go7.pt", 0)
    return tmp_path


# --- checkpoints for another game or board -------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["selfplay", "--model", "go9.pt", "--out", "s.npz"],
    ["match", "--a", "go9.pt", "--b", "random", "--games", "2"],
    ["play", "--model", "go9.pt"],
])
def test_go_checkpoint_with_gomoku_params_is_refused(work, capsys, args):
    rc, out, err = cli(capsys, *args, *SETS)
    refused(rc, err, "go9.pt", "9x9", "gomoku-6x6x4", "6x6")
    assert not (work / "s.npz").exists() and out == ""


def test_checkpoint_of_another_board_size_is_refused_in_match(work, capsys):
    rc, _, err = cli(capsys, "match", "--a", "random", "--b", "go7.pt", "--games", "2", *GO)
    refused(rc, err, "go7.pt", "7x7", "go-9", "9x9")


# --- counts and player specs ---------------------------------------------------------------------------------


@pytest.mark.parametrize("args,needle", [
    (["match", "--a", "random", "--b", "mcts:abc"], "mcts:abc"),
    (["match", "--a", "random", "--b", "mcts:0"], "mcts:0"),
    (["match", "--a", "mcts:-3", "--b", "random"], "mcts:-3"),
    (["match", "--a", "random", "--b", "gtp:"], "gtp:"),
    (["match", "--a", "random", "--b", "gtp:'unclosed"], "gtp:"),
    (["match", "--a", "random", "--b", "go9.pt", "--visits", "-1"], "--visits"),
    (["match", "--a", "random", "--b", "random", "--games", "-2"], "--games"),
    (["match", "--a", "random", "--b", "random", "--games", "0"], "--games"),
    (["match", "--a", "random", "--b", "random", "--games", "1e3"], "--games"),
    (["selfplay", "--model", "go9.pt", "--out", "s.npz", "--games", "-3"], "--games"),
    (["selfplay", "--model", "go9.pt", "--out", "s.npz", "--games", "0"], "--games"),
    (["selfplay", "--model", "go9.pt", "--out", "s.npz", "--seed", "-1"], "--seed"),
    (["gtp", "--visits", "-5"], "--visits"),
    (["gtp", "--visits", "0"], "--visits"),
    (["play", "--visits", "abc"], "--visits"),
    (["play", "--color", "purple"], "--color"),
    (["bench", "--games", "0"], "--games"),
    (["bench", "--seconds", "nan"], "--seconds"),
    (["init", "--out", "x.pt", "--seed", "x"], "--seed"),
    (["init", "--out", "adir"], "adir: Is a directory"),
])
def test_bad_counts_and_players_are_refused(work, capsys, args, needle):
    rc, out, err = cli(capsys, *args, *GO)
    refused(rc, err, needle)
    assert out == "" and not (work / "s.npz").exists() and not (work / "x.pt").exists()


def test_search_trees_that_cannot_fit_are_refused(work, capsys):
    rc, _, err = cli(capsys, "match", "--a", "go9.pt", "--b", "go9.pt", "--visits", "100000",
                     "--set", "gate.concurrent_games=4096", "--games", "4096", *GO)
    refused(rc, err, "--visits", "GiB")


# --- checkpoint integrity ------------------------------------------------------------------------------------


def same_content(a, b):
    (net_a, meta_a), (net_b, meta_b) = a, b
    sa, sb = net_a.state_dict(), net_b.state_dict()
    return meta_a == meta_b and net_a.config == net_b.config and all(torch.equal(sa[k], sb[k]) for k in sa)


def flips(path, count=60):
    """The file's bytes with one bit flipped, at `count` places spread over the whole file."""
    data = path.read_bytes()
    for i in range(count):
        b = bytearray(data)
        b[i * len(data) // count] ^= 1 << (i % 8)
        yield bytes(b)


def member_data_offsets(path):
    """(name, offset, size) of every member's data in a checkpoint's zip."""
    import struct
    import zipfile

    raw = path.read_bytes()
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26: info.header_offset + 30])
            yield info.filename, info.header_offset + 30 + name_len + extra_len, info.file_size


@pytest.mark.parametrize("checksum", [True, False])
def test_every_bit_flip_in_a_checkpoint_is_refused_or_changes_nothing(work, checksum):
    """Checksummed or not (the format champions were written in), a flipped bit never loads as other content.

    Any flip in a member's data (weights, config, meta) is refused; a flip in zip bookkeeping that no reader
    uses (a header's version field, a data descriptor's signature) loads the same network.
    """
    net, meta = load_checkpoint(work / "go9.pt")
    path = work / "c.pt"
    save_checkpoint(net, path, meta, checksum=checksum)
    assert (CHECKSUM_KEY in torch.load(path, weights_only=True)["meta"]) == checksum
    data = path.read_bytes()
    original = load_checkpoint(path)
    assert same_content(original, (net, meta)) and path.read_bytes() == data  # loading never rewrites it
    bad = work / "flipped.pt"
    members = list(member_data_offsets(path))
    assert any(name.endswith("data.pkl") for name, _, _ in members)
    for name, offset, size in members:
        for pos in {offset, offset + size // 2, offset + size - 1}:
            b = bytearray(data)
            b[pos] ^= 1 << (pos % 8)
            bad.write_bytes(bytes(b))
            with pytest.raises(CheckpointError, match="flipped.pt"):
                load_checkpoint(bad)
    caught = 0
    for flipped in flips(path):
        bad.write_bytes(flipped)
        try:
            loaded = load_checkpoint(bad)
        except CheckpointError:
            caught += 1
            continue
        assert same_content(loaded, original)
    assert caught >= 50


@pytest.mark.parametrize("checksum", [True, False])
def test_saving_a_checkpoint_again_gives_the_same_bytes(work, checksum):
    net, meta = load_checkpoint(work / "go9.pt")
    path = work / "c.pt"
    save_checkpoint(net, path, meta, checksum=checksum)
    save_checkpoint(net, work / "again.pt", meta, checksum=checksum)
    assert (work / "again.pt").read_bytes() == path.read_bytes()
    assert (CHECKSUM_KEY in torch.load(path, weights_only=True)["meta"]) == checksum


@pytest.mark.parametrize("checksum", [True, False])
def test_non_finite_weights_are_refused(work, checksum):
    params = load_params(None, ["network.size=b1c8"])
    net = init_network(params, make_game(params.game), 0)
    with torch.no_grad():
        net.trunk[0].conv1.weight[0, 0, 0, 0] = float("nan")
    save_checkpoint(net, work / "nan.pt", {"game": "go-9"}, checksum=checksum)
    with pytest.raises(CheckpointError, match=r"nan\.pt: weight trunk\.0\.conv1\.weight holds NaN"):
        load_checkpoint(work / "nan.pt")


def test_altered_weights_with_valid_zip_fail_the_content_hash(work):
    blob = torch.load(work / "go9.pt", weights_only=True)
    blob["state_dict"]["policy_fc.bias"][0] += 1.0
    torch.save(blob, work / "edited.pt")  # fresh CRCs, stale content hash
    with pytest.raises(CheckpointError, match=r"edited\.pt: checksum mismatch"):
        load_checkpoint(work / "edited.pt")
    net = net_from_parts(blob["config"], blob["state_dict"])
    with pytest.raises(CheckpointError, match="not the ones the checksum was made for"):
        save_checkpoint(net, work / "resaved.pt", blob["meta"])
    assert not (work / "resaved.pt").exists()


def test_a_corrupt_checkpoint_is_refused_by_the_cli(work, capsys):
    data = bytearray((work / "go9.pt").read_bytes())
    data[len(data) // 2] ^= 4
    (work / "bad.pt").write_bytes(bytes(data))
    rc, _, err = cli(capsys, "selfplay", "--model", "bad.pt", "--out", "s.npz", *GO)
    refused(rc, err, "bad.pt")
    assert not (work / "s.npz").exists()


# --- params --------------------------------------------------------------------------------------------------


def test_every_params_file_in_the_repository_is_still_valid():
    files = [ROOT / "params.yaml", ROOT / "params-smoke.yaml", *sorted((ROOT / "campaigns").glob("*.yaml")),
             *sorted(Path(p) for p in glob.glob(str(ROOT / "gens" / "**" / "params.yaml"), recursive=True))]
    for f in files:
        load_params(f)


@pytest.mark.parametrize("override,field", [
    ("selfplay.visits=1e20", "selfplay.visits"),
    ("selfplay.visits=true", "selfplay.visits"),
    ("selfplay.visits='100'", "selfplay.visits"),
    ("selfplay.visits=100001", "selfplay.visits"),
    ("gate.games=10000000", "gate.games"),
    ("train.steps=1000000000", "train.steps"),
    ("train.batch_size=1000000", "train.batch_size"),
    ("pipeline.selfplay_shards=100000", "pipeline.selfplay_shards"),
    ("selfplay.threads=100000", "selfplay.threads"),
    ("train.lr_milestones=[true]", "train.lr_milestones"),
    ("mcts.symmetries=1", "mcts.symmetries"),
    ("game.komi=.nan", "game.komi"),
    ("mcts.c_puct=.inf", "mcts.c_puct"),
    ("game.komi=true", "game.komi"),
    ("pipeline.seed=-1", "pipeline.seed"),
    ("selfplay.device=gpu", "selfplay.device"),
    ("network.size=b100000c64", "network.size"),
    ("network.size=b40c1024", "network.size"),  # 1.4 GiB of weights on 9x9
    ("selfplay.concurrent_games=4096 selfplay.games_per_shard=4096 selfplay.visits=100000", "selfplay.visits"),
])
def test_params_without_bounds_or_with_wrong_types_are_refused(override, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        load_params(None, override.split())


def test_integers_and_dotless_exponents_are_floats():
    p = load_params(None, ["game.komi=7", "train.weight_decay=1e-4", "pipeline.num_gpus=1"])
    assert p.game.komi == 7.0 and p.train.weight_decay == 1e-4 and p.pipeline.num_gpus == 1.0


def test_params_errors_reach_the_cli_as_zero_error(work, capsys):
    (work / "p.yaml").write_text("network:\n  size: b40c1024\n")
    rc, _, err = cli(capsys, "init", "--params", "p.yaml", "--out", "x.pt")
    refused(rc, err, "p.yaml", "network.size", "GiB")
    assert not (work / "x.pt").exists()


# --- Ctrl-C and stdout ---------------------------------------------------------------------------------------


def spawn(args, cwd, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "TERM": "xterm", "COLUMNS": "100"}
    # A test run started in the background inherits SIGINT ignored, and Python keeps an ignored SIGINT
    # ignored: give the command the default disposition a terminal's Ctrl-C would meet.
    return subprocess.Popen([sys.executable, "-m", "zero.cli", *args], cwd=cwd, env=env, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kw)


def wait_for(predicate, proc, timeout=120.0):
    end = time.monotonic() + timeout
    while not predicate():
        assert proc.poll() is None, "the command ended before it could be interrupted"
        assert time.monotonic() < end, "timed out waiting for the command to start"
        time.sleep(0.05)


def test_ctrl_c_in_play_is_one_line_and_status_130(work):
    out = work / "out.txt"
    with open(out, "w") as stdout:
        proc = spawn(["play", *SETS, "--color", "black"], work, stdin=subprocess.PIPE, stdout=stdout,
                     stderr=subprocess.PIPE)
        wait_for(lambda: "to play>" in out.read_text(), proc)
        proc.send_signal(signal.SIGINT)
        # stdin stays open until it has ended: an end of input racing the signal would end the game normally
        try:
            proc.wait(timeout=60)
        finally:
            proc.kill()
        err = proc.stderr.read()
        proc.stdin.close()
    assert proc.returncode == 130, err
    # the last line says it was interrupted; any earlier one only names the network being played
    assert err.strip().splitlines()[-1] == "zero: play interrupted" and "Traceback" not in err


def synthetic_shard(path, positions=64):
    from zero.shards import SHARD_FORMAT, Shard, write_shard

    rng = np.random.default_rng(0)
    policy = rng.random((positions, 36)).astype(np.float32)
    write_shard(path, Shard(
        planes=rng.integers(0, 256, (positions, 18), dtype=np.uint8),
        policy=(policy / policy.sum(1, keepdims=True)).astype(np.float16),
        value=rng.choice(np.array([-1, 1], np.int8), positions), game_index=np.zeros(positions, np.int32),
        moves=np.zeros((1, 1), np.int16), length=np.ones(1, np.int32), seed=np.zeros(1, np.int64),
        result=np.ones(1, np.int8), resigned=np.zeros(1, np.bool_), no_resign=np.zeros(1, np.bool_),
        resign_value=np.zeros((1, 2), np.float32),
        header={"format": SHARD_FORMAT, "game": "gomoku-6x6x4", "plane_shape": [4, 6, 6], "num_actions": 36,
                "seed": 0, "params": {}},
    ))


def test_ctrl_c_in_train_leaves_no_output_and_status_130(work):
    init_checkpoint(load_params(None, TINY), work / "g0.pt", 0)
    synthetic_shard(work / "s.npz")
    proc = spawn(["train", *SETS, "--set", "train.steps=1000000", "--init", "g0.pt", "--data", "s.npz",
                  "--out", "g1.pt", "--metrics-out", "m.jsonl"], work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # the metrics are written beside their name until training is done: wait for some steps
    wait_for(lambda: any(p.stat().st_size > 1000 for p in work.glob("m.jsonl.*.tmp")), proc)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    # stderr is no terminal: the progress lines of a log, the last saying where training stopped
    *progress, said = err.strip().splitlines()
    assert said == "zero: train interrupted" and out == ""
    assert progress[0] == "training: 1000000 steps to run" and " steps (0%), " in progress[-1]
    assert progress[-1].split(", ")[-1].startswith("stopped in ")
    assert sorted(p.name for p in work.iterdir()) == ["adir", "g0.pt", "go7.pt", "go9.pt", "s.npz"]


def test_selfplay_progress_goes_to_stderr_and_stdout_is_json(work):
    init_checkpoint(load_params(None, TINY), work / "g0.pt", 0)
    code, out, drawn = run_with_terminal_stderr(  # stderr is a terminal, so the progress bar is drawn
        ["selfplay", *SETS, "--model", "g0.pt", "--out", "s.npz", "--games", "2"], work)
    assert code == 0, drawn.decode(errors="replace")
    assert json.loads(out)["games"] == 2
    assert all(text in drawn for text in (b"self-play", b"2/2", b"games"))


# --- property-based: anything either runs or is refused cleanly ----------------------------------------------

FIELDS = {
    "game": ["name", "size", "komi", "height", "width", "k"],
    "network": ["size", "value_hidden"],
    "mcts": ["c_puct", "fpu_reduction", "dirichlet_alpha", "dirichlet_weight", "symmetries"],
    "selfplay": ["games_per_shard", "concurrent_games", "visits", "temperature_moves", "resign_threshold",
                 "resign_playout_share", "reuse_tree", "device", "threads"],
    "train": ["batch_size", "steps", "learning_rate", "lr_milestones", "lr_gamma", "momentum", "weight_decay",
              "window_generations", "max_window_positions", "device", "threads"],
    "gate": ["games", "threshold", "visits", "concurrent_games", "opening_moves", "sequential", "device", "threads"],
    "pipeline": ["seed", "selfplay_shards", "gate_shards", "num_gpus"],
}
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10, 100), st.integers(), st.floats(), st.floats(-2, 2),
    st.sampled_from(["go", "gomoku", "auto", "cpu", "cuda:0", "b1c8", "b2c16", "b999c999", "1e20", "7.5", ""]),
    st.text(max_size=12),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                          max_size=3), max_leaves=6)
sections = st.fixed_dictionaries({}, optional={
    name: st.dictionaries(st.sampled_from(keys + ["bogus"]), values, max_size=4) | values
    for name, keys in FIELDS.items()
})
params_docs = st.one_of(sections, values, st.dictionaries(st.text(max_size=8), values, max_size=3))
fast = settings(max_examples=250, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])


def runs_or_is_refused(rc, err):
    assert rc in (0, 2), err
    assert "Traceback" not in err
    if rc == 2:
        assert "zero: error:" in err, err


@fast
@given(doc=params_docs, raw=st.booleans(), text=st.text(max_size=40))
def test_any_params_file_runs_or_is_refused(work, capsys, doc, raw, text):
    """`zero init` with a random params file (the network kept small by a final --set)."""
    (work / "p.yaml").write_text(text if raw else yaml.safe_dump(doc))
    rc, _, err = cli(capsys, "init", "--params", "p.yaml", "--out", "x.pt", "--set", "network.size=b1c4",
                     "--set", "network.value_hidden=4")
    runs_or_is_refused(rc, err)
    assert (work / "x.pt").exists() == (rc == 0)
    (work / "x.pt").unlink(missing_ok=True)


words = st.one_of(
    st.sampled_from(["0", "-1", "1", "3", "1e3", "abc", "", "--games", "--visits", "--seed", "--set", "--color",
                     "black", "white", "random", "init", "mcts:2", "mcts:x", "gtp:", "go9.pt", "go7.pt",
                     "missing.pt", "game.size=7", "selfplay.visits=true", "x=1", "-", "--"]),
    st.integers(-5, 10**6).map(str),
    st.text(max_size=8),
)
# each command ends in a way that fails fast if every argument before it is valid
commands = st.sampled_from([
    (["match"], ["--a", "missing.pt", "--b", "random"]),
    (["selfplay", "--out", "s.npz"], ["--model", "missing.pt"]),
    (["play"], ["--model", "missing.pt"]),
    (["train", "--out", "t.pt", "--data", "missing.npz"], ["--init", "go9.pt"]),
    (["init", "--out", "x.pt"], ["--set", "network.size=b1c4"]),
])


@fast
@given(command=commands, middle=st.lists(words, max_size=6))
def test_any_arguments_run_or_are_refused(work, capsys, command, middle):
    head, tail = command
    rc, out, err = cli(capsys, *head, *middle, *tail, *GO)
    runs_or_is_refused(rc, err)
    assert not (work / "s.npz").exists() and not (work / "t.pt").exists()
    (work / "x.pt").unlink(missing_ok=True)
