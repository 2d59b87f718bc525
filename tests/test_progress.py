"""Progress of long steps: the library's callbacks (self-play, matches) and the pipeline's reporter."""

import re

from zero.games import make_game
from zero.arena import RandomPlayer
from zero.match import play_match, run_match
from zero.selfplay import play_shard
from zero.shards import read_shard


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def reporter(total, unit="games"):
    from flows.progress import StepProgress

    clock, lines = FakeClock(), []
    report = StepProgress("go-9-g0003 gate part 0", total, unit=unit, clock=clock, emit=lines.append,
                          artifact=False, heartbeat=False)
    return report, clock, lines


def test_a_line_at_the_start_at_most_once_a_minute_and_at_the_end():
    report, clock, lines = reporter(10)
    with report:
        assert lines == ["go-9-g0003 gate part 0: 10 games to play"]
        for done in range(1, 10):  # a game every 25 s: lines at 75 s, 150 s and 225 s, not at every game
            clock.t += 25
            report(done, 10, positions=done * 30)
        clock.t += 25
        report(10, 10, positions=300)
    assert len(lines) == 5, lines
    assert lines[1] == "go-9-g0003 gate part 0: 3/10 games (30%), 90 positions, 1.2 positions/s, ETA 2m55s, 1m15s elapsed"
    assert re.match(r".*: 6/10 games \(60%\), 180 positions, 1\.2 positions/s, ETA 1m40s, 2m30s elapsed$", lines[2])
    assert "9/10 games (90%)" in lines[3]
    assert lines[4] == "go-9-g0003 gate part 0: 10/10 games (100%), 300 positions, 1.2 positions/s, done in 4m10s"


def test_games_played_together_do_not_read_as_one_at_a_time():
    """Ten games at once, each about 2 minutes: the first to end must not make 199 more look like 199 x 2
    minutes. Until ten have ended the games in flight count as ending now; after, the rate is the games'."""
    from zero.progress import ProgressLines

    clock, lines = FakeClock(), []
    report = ProgressLines("g1 against gnugo-l10", 200, clock=clock, emit=lines.append, at_once=10, every=0)
    clock.t += 120
    report(1, 200, positions=80)
    assert lines[-1].endswith("ETA 39m48s, 2m00s elapsed")  # 199 games at ten per 120 s, not 6h38m
    clock.t += 20
    report(10, 200, positions=800)
    assert lines[-1].endswith("ETA 44m20s, 2m20s elapsed")  # ten ended in 140 s: 190 more
    clock.t += 140
    report(20, 200, positions=1600)
    assert lines[-1].endswith("ETA 42m00s, 4m40s elapsed")  # 20 in 280 s: the games' own rate from here
    short = ProgressLines("g1 against gnugo-l10", 4, clock=clock, emit=lines.append, at_once=10, every=0)
    clock.t += 60
    short(1, 4, positions=80)  # four games in all: four in flight, not ten
    assert lines[-1].endswith("ETA 45s, 1m00s elapsed")


def test_the_heartbeat_speaks_when_no_game_ends_for_a_minute():
    report, clock, lines = reporter(200)
    with report:
        clock.t += 59
        report.beat()
        assert len(lines) == 1
        clock.t += 1
        report.beat()
        clock.t += 30
        report.beat()
    assert lines[1] == "go-9-g0003 gate part 0: 0/200 games (0%), 0.00 games/s, ETA unknown, 1m00s elapsed"
    assert len(lines) == 3 and "stopped" not in lines[2] and "done in 1m30s" in lines[2]


def test_training_steps_and_a_step_that_fails():
    report, clock, lines = reporter(1000, unit="steps")
    try:
        with report:
            clock.t += 61
            report(500, positions=500 * 32)
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert lines[0].endswith("1000 steps to run")
    assert "500/1000 steps (50%), 16,000 positions, 262.3 positions/s, ETA 1m01s" in lines[1]
    assert "stopped in 1m01s" in lines[2]


def test_plain_lines_count_a_tick_without_arguments_as_one_more_step():
    from zero.progress import ProgressLines

    clock, lines = FakeClock(), []
    with ProgressLines("training", 4, unit="steps", every=60, clock=clock, emit=lines.append) as tick:
        for _ in range(4):
            clock.t += 40
            tick()
    assert lines == ["training: 4 steps to run", "training: 2/4 steps (50%), 0.03 steps/s, ETA 1m20s, 1m20s elapsed",
                     "training: 4/4 steps (100%), 0.03 steps/s, done in 2m40s"]


def test_games_carried_over_from_an_earlier_run_count_as_done_but_not_in_the_rate():
    from zero.progress import ProgressLines

    clock, lines = FakeClock(), []
    with ProgressLines("g1 against gnugo-l10", 200, every=60, clock=clock, emit=lines.append) as report:
        report(40, 200, None)  # a resumed pairing: 40 games kept from before, none played yet
        clock.t += 60
        report(41, 200, 90)
        clock.t += 60
        report(42, 200, 180)
    assert lines[1] == "g1 against gnugo-l10: 40/200 games kept from an earlier run, 160 to play"
    assert lines[2] == "g1 against gnugo-l10: 41/200 games (20%), 90 positions, 1.5 positions/s, ETA 2h39m, 1m00s elapsed"
    assert lines[3].startswith("g1 against gnugo-l10: 42/200 games (21%)") and "ETA 2h38m" in lines[3]


def test_a_first_game_that_recorded_no_position_is_a_game_played_now():
    """Self-play reports cumulative positions: a first game whose moves were all fast searches recorded none,
    and is still a game of this run, in the rate and the ETA."""
    from zero.progress import ProgressLines

    clock, lines = FakeClock(), []
    with ProgressLines("self-play", 10, every=60, clock=clock, emit=lines.append) as report:
        clock.t += 60
        report(1, 10, 0)
    assert lines[1] == "self-play: 1/10 games (10%), 0 positions, 0.0 positions/s, ETA 9m00s, 1m00s elapsed"
    assert report.carried == 0


def test_a_match_reports_each_game_as_it_ends(tiny_params):
    calls = []
    result = play_match(tiny_params, "random", "random", 6, seed=3, progress=lambda *a: calls.append(a))
    assert [c[0] for c in calls] == list(range(1, 7)) and {c[1] for c in calls} == {6}
    assert 0 < calls[0][2] < calls[-1][2]  # positions so far
    assert result.games == 6


def test_a_sequential_match_ends_its_progress_early(tiny_params):
    game = make_game(tiny_params.game)
    calls = []
    out = run_match(game, RandomPlayer(1), RandomPlayer(2), 40, seed=0, concurrent=4, stop_early=(40, 0.55),
                    progress=lambda *a: calls.append(a))
    assert calls[-1][0] == out.result.games and all(c[1] == 40 for c in calls)


def test_self_play_reports_games_and_positions(tiny_params, tiny_checkpoint, tmp_path):
    calls = []
    play_shard(tiny_params, tiny_checkpoint, tmp_path / "s.npz", seed=1, progress=lambda *a: calls.append(a))
    shard = read_shard(tmp_path / "s.npz")
    assert [c[:2] for c in calls] == [(i, 6) for i in range(1, 7)]
    assert calls[-1][2] == len(shard.value)


def test_zero_match_draws_its_bar_on_stderr_and_prints_json_on_stdout(tmp_path):
    import json

    from conftest import TINY, run_with_terminal_stderr

    sets = [x for o in TINY for x in ("--set", o)]
    code, out, drawn = run_with_terminal_stderr(  # stderr is a terminal, so the bar is drawn
        ["match", *sets, "--a", "random", "--b", "random", "--games", "4"], tmp_path)
    assert code == 0, drawn.decode(errors="replace")
    assert json.loads(out)["games"] == 4
    assert b"match" in drawn and b"4/4" in drawn


def test_zero_match_into_a_log_file_writes_plain_progress_lines(tmp_path):
    """Where stderr is no terminal (nohup, a log file) there is no bar, but the games still show in the log."""
    import json
    import subprocess
    import sys

    from conftest import TINY

    sets = [x for o in TINY for x in ("--set", o)]
    with open(tmp_path / "log", "w") as log:
        code = ("import sys, zero.cli, zero.cli_args; zero.cli_args.PROGRESS_EVERY = 0; "
                "sys.exit(zero.cli.main(sys.argv[1:]))")
        proc = subprocess.run([sys.executable, "-c", code, "match", *sets, "--a", "random", "--b", "random",
                               "--games", "4"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=log, text=True,
                              timeout=300)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["games"] == 4
    lines = [x for x in (tmp_path / "log").read_text().splitlines() if x.startswith("match: ")]
    assert lines[0] == "match: 4 games to play" and len(lines) == 5, lines
    assert [x.split(",")[0] for x in lines[1:]] == [f"match: {n}/4 games ({25 * n}%)" for n in range(1, 5)]
    assert all("positions/s, ETA " in x for x in lines[1:4]) and " done in " in lines[4]


def test_the_terminal_bar_shows_the_same_eta_as_the_lines():
    """On a terminal `zero` draws a rich bar: it shows games done and, like the plain lines, an ETA that
    counts the games in flight, and no ETA once done."""
    import io

    from rich.console import Console

    from zero import progress

    clock = FakeClock()
    bar, tick = progress.terminal_bar("g1 against gnugo-l10", 200, at_once=10, file=io.StringIO(), clock=clock)

    def shown() -> str:
        out = io.StringIO()
        Console(file=out, width=160).print(bar.make_tasks_table(bar.tasks))
        return out.getvalue()

    assert "0/200" in shown() and "ETA unknown" in shown()
    clock.t += 120
    tick(1, 200, 80)
    assert "1/200" in shown() and "ETA 39m48s" in shown()  # 199 games at ten per 120 s, as the lines say
    tick()
    assert "2/200" in shown()
    tick(200, 200, 16000)
    assert "200/200" in shown() and "ETA" not in shown()
