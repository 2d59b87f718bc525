"""Match statistics against values worked out by hand."""

from __future__ import annotations

import json
import math

import pytest

from zero.stats import MatchResult, combine, elo_from_score, elo_interval, gate_passed, gate_status, score


def test_score_counts_draws_half():
    assert score(3, 1, 2) == pytest.approx(4 / 6)
    assert score(0, 0, 0) == 0.5
    with pytest.raises(ValueError, match="losses"):
        score(1, -1, 0)


@pytest.mark.parametrize(
    "w,l,d,elo",
    [(50, 50, 0, 0.0), (0, 0, 10, 0.0), (30, 10, 0, 400 * math.log10(3)), (25, 5, 10, 400 * math.log10(3))],
)
def test_elo_of_a_score(w, l, d, elo):
    assert elo_interval(w, l, d)[0] == pytest.approx(elo, abs=1e-9)
    assert 400 * math.log10(3) == pytest.approx(190.85, abs=0.01)


def test_interval_by_hand():
    # 60-40 with no draws: s = 0.6, sigma^2 = 0.24, 95% half-width 1.95996 * sqrt(0.24/100)
    elo, low, high = elo_interval(60, 40, 0)
    half = 1.959964 * math.sqrt(0.24 / 100)
    assert low == pytest.approx(elo_from_score(0.6 - half), rel=1e-5)
    assert high == pytest.approx(elo_from_score(0.6 + half), rel=1e-5)
    assert low < elo < high
    # draws lower the per-game variance, so narrow the interval at the same score
    _, low_d, high_d = elo_interval(40, 20, 40)
    assert high_d - low_d < high - low


def test_interval_is_mirrored_for_the_other_player():
    elo, low, high = elo_interval(70, 20, 10)
    elo2, low2, high2 = elo_interval(20, 70, 10)
    assert (elo2, low2, high2) == pytest.approx((-elo, -high, -low))
    _, low0, high0 = elo_interval(20, 20, 10)
    assert low0 == pytest.approx(-high0)


def test_interval_shrinks_with_games():
    widths = [elo_interval(6 * k, 4 * k, 0)[2] - elo_interval(6 * k, 4 * k, 0)[1] for k in (1, 10, 100)]
    assert widths[0] > widths[1] > widths[2] > 0
    assert widths[1] / widths[2] == pytest.approx(math.sqrt(10), rel=0.05)
    assert elo_interval(6, 4, 0, confidence=0.99)[2] > elo_interval(6, 4, 0, confidence=0.9)[2]


def test_sweeps_and_no_games_are_handled():
    elo, low, high = elo_interval(400, 0, 0)
    assert elo == pytest.approx(-400 * math.log10(1 / (1 - 1 / 800) - 1))  # half a game lost: ~ +1161
    assert math.isfinite(low) and low < elo and high == elo
    assert elo_interval(0, 400, 0) == pytest.approx((-elo, -high, -low))
    assert elo_interval(0, 0, 0) == (0.0, -math.inf, math.inf)
    d = MatchResult(0, 0, 0).to_dict()
    assert d["elo_low"] is None and d["elo_high"] is None and d["win_rate"] == 0.5
    json.dumps(MatchResult(10, 0, 0).to_dict(), allow_nan=False)


def test_gate_passed_at_exactly_the_threshold():
    assert gate_passed(11, 9, 0)  # exactly 55%
    assert gate_passed(220, 180, 0)
    assert gate_passed(210, 170, 20)  # (210 + 10) / 400
    assert not gate_passed(219, 181, 0)
    assert not gate_passed(219, 180, 1)  # 219.5 / 400
    assert not gate_passed(0, 0, 0)
    assert gate_passed(3, 1, 0, threshold=0.75) and not gate_passed(3, 1, 0, threshold=0.76)


def test_gate_status_full_match_means_55_of_400():
    assert gate_status(220, 180, 0) == "pass"
    assert gate_status(219, 181, 0) == "fail"
    assert gate_status(219, 180, 1) == "fail"
    assert gate_status(218, 178, 4) == "pass"


def test_gate_status_decides_early_only_when_certain():
    # pass as soon as 220 points are in, whatever the remaining games do
    assert gate_status(219, 0, 0) == "undecided"
    assert gate_status(220, 0, 0) == "pass"
    assert gate_status(219, 0, 2) == "pass"
    # fail as soon as losses + draws/2 > 180
    assert gate_status(0, 180, 0) == "undecided"
    assert gate_status(0, 181, 0) == "fail"
    assert gate_status(0, 180, 1) == "fail"  # 180.5 > 180: at best 219.5 of 400
    assert gate_status(5, 180, 2) == "fail"  # losses + draws/2 = 181
    assert gate_status(0, 0, 0) == "undecided"
    with pytest.raises(ValueError):
        gate_status(300, 101, 0)


def test_early_stopping_never_changes_the_answer():
    # every order of a few full-match outcomes: the first decided status equals the final one
    import random

    rng = random.Random(0)
    total = 40
    for _ in range(200):
        games = [rng.choice("wld") for _ in range(total)]
        w = l = d = 0
        first = None
        for g in games:
            w, l, d = w + (g == "w"), l + (g == "l"), d + (g == "d")
            status = gate_status(w, l, d, total_games=total)
            if first is None and status != "undecided":
                first = status
        assert status != "undecided"
        assert first == status == ("pass" if gate_passed(w, l, d) else "fail")


def test_match_result_and_combine():
    parts = [MatchResult(3, 1, 0), MatchResult(2, 2, 1), MatchResult(0, 0, 3)]
    total = combine(parts)
    assert total == MatchResult(5, 3, 4) and total.games == 12
    assert total.win_rate == pytest.approx(7 / 12)
    assert (total.elo, total.elo_low, total.elo_high) == elo_interval(5, 3, 4)
    d = total.to_dict()
    assert set(d) == {"wins", "losses", "draws", "games", "win_rate", "elo", "elo_low", "elo_high"}
    assert json.loads(json.dumps(d)) == d
    assert MatchResult.from_dict(d) == total
    assert combine([]) == MatchResult(0, 0, 0)
    with pytest.raises(ValueError):
        MatchResult(-1, 0, 0)
