"""Bradley-Terry ratings against values worked out by hand."""

import math

import pytest

from zero.ratings import ELO, Pairing, RatingError, fit_ratings


def test_two_players_match_the_closed_form():
    # 300-100: with one virtual draw the score is 300.5 / 401, whose Elo is -400 log10(1/s - 1).
    r = fit_ratings([Pairing("a", "b", 300, 100)], anchor=("b", 0.0))
    s = 300.5 / 401
    assert r["a"].elo == pytest.approx(-400 * math.log10(1 / s - 1), abs=1e-6)
    # Interval: 1.96 standard errors, with variance 1 / (n p (1 - p)) in log-odds units.
    half = 1.959963984540054 * ELO / math.sqrt(401 * s * (1 - s))
    assert r["a"].high - r["a"].elo == pytest.approx(half, rel=1e-6)
    assert r["b"].elo == r["b"].low == r["b"].high == 0.0
    assert r["a"].games == r["b"].games == 400


def test_anchor_value_and_view_do_not_matter():
    one = fit_ratings([Pairing("a", "b", 30, 10, 4)], anchor=("b", 1800.0))
    other = fit_ratings([Pairing("b", "a", 10, 30, 4)], anchor=("b", 1800.0))
    assert one["a"].elo == pytest.approx(other["a"].elo)
    assert one["a"].elo - 1800 == pytest.approx(fit_ratings([Pairing("a", "b", 30, 10, 4)], ("b", 0))["a"].elo)


def test_a_chain_adds_up():
    # a beats b 3:1 and b beats c 3:1 with many games: a is about 2 x 190.8 above c.
    games = [Pairing("a", "b", 3000, 1000), Pairing("b", "c", 3000, 1000)]
    r = fit_ratings(games, anchor=("c", 0.0), prior_draws=0.0)
    assert r["b"].elo == pytest.approx(190.85, abs=0.1)
    assert r["a"].elo == pytest.approx(381.7, abs=0.2)
    # a's interval is wider than b's: it is two links from the anchor.
    assert r["a"].high - r["a"].low > r["b"].high - r["b"].low


def test_sweeps_stay_finite_and_strangers_are_left_out():
    r = fit_ratings([Pairing("a", "b", 20, 0), Pairing("x", "y", 5, 5)], anchor=("b", 0.0))
    assert set(r) == {"a", "b"}
    assert 300 < r["a"].elo < 1500 and math.isfinite(r["a"].low)


def test_no_anchor_games_gives_nothing():
    assert fit_ratings([Pairing("a", "b", 2, 1)], anchor=("gnugo-l10", 1800.0)) == {}


def test_repeated_pairings_are_summed():
    split = fit_ratings([Pairing("a", "b", 10, 5), Pairing("b", "a", 5, 10)], anchor=("b", 0))
    whole = fit_ratings([Pairing("a", "b", 20, 10)], anchor=("b", 0))
    assert split["a"].elo == pytest.approx(whole["a"].elo)


def test_a_fit_that_does_not_converge_says_so_instead_of_returning_its_last_step():
    pairs = [Pairing("a", "b", 30, 10, 0), Pairing("b", "c", 25, 15, 0), Pairing("a", "c", 35, 5, 0)]
    assert set(fit_ratings(pairs, ("a", 0.0))) == {"a", "b", "c"}
    with pytest.raises(RatingError, match="did not converge in 1 Newton steps"):
        fit_ratings(pairs, ("a", 0.0), max_iter=1)
