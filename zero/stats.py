"""Match statistics: score, Elo difference with a confidence interval, and the gate.

Everything is from player a's view (the candidate in a gate match): a draw
counts half a win. The Elo difference of a score s is -400 log10(1/s - 1).

Scores of exactly 0 or 1 have infinite Elo. We keep numbers finite (so they
can be logged and plotted) by clamping the score to [1/(2n), 1 - 1/(2n)] -
as if half a game had gone the other way - before mapping it to Elo: a
400-0 sweep reads as about +1161 Elo, 10-0 as about +511. With no games at all
the Elo is 0 and the interval (-inf, +inf); `MatchResult.to_dict` writes
non-finite numbers as None.

Threshold comparisons are exact: the threshold is read as the decimal it is
written as (0.55 = 11/20), so 220 wins of 400 is exactly 55% and passes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Iterable, Literal

GateStatus = Literal["pass", "fail", "undecided"]


def _check_counts(wins: int, losses: int, draws: int) -> int:
    for name, v in (("wins", wins), ("losses", losses), ("draws", draws)):
        if v < 0:
            raise ValueError(f"{name} must be >= 0, got {v}")
    return wins + losses + draws


def score(wins: int, losses: int, draws: int) -> float:
    """(w + d/2) / n; 0.5 when no games were played."""
    n = _check_counts(wins, losses, draws)
    return (wins + draws / 2) / n if n else 0.5


def elo_from_score(s: float) -> float:
    """-400 log10(1/s - 1): 0 at s = 0.5, +190.8 at 0.75, +-inf at 1 and 0."""
    if s <= 0:
        return -math.inf
    if s >= 1:
        return math.inf
    return -400.0 * math.log10(1.0 / s - 1.0)


def elo_interval(wins: int, losses: int, draws: int, confidence: float = 0.95) -> tuple[float, float, float]:
    """(elo, low, high): the Elo difference and its two-sided `confidence` interval.

    The interval is s +- z * sigma / sqrt(n) on the score, with sigma^2 the
    per-game variance of the observed win/draw/loss frequencies (trinomial),
    each end mapped through the Elo formula. Scores are clamped as described
    in the module docstring. When every game had the same result the
    observed variance is 0 and says nothing; we then use s(1 - s) of the
    clamped score, the variance of a single win-or-loss game.
    """
    n = _check_counts(wins, losses, draws)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n == 0:
        return 0.0, -math.inf, math.inf
    s = score(wins, losses, draws)
    eps = 1.0 / (2 * n)
    s_c = min(max(s, eps), 1 - eps)
    var = (wins * (1 - s) ** 2 + losses * s**2 + draws * (0.5 - s) ** 2) / n
    if var == 0:
        var = s_c * (1 - s_c)
    half = NormalDist().inv_cdf((1 + confidence) / 2) * math.sqrt(var / n)
    low = min(max(s_c - half, eps), 1 - eps)
    high = min(max(s_c + half, eps), 1 - eps)
    return elo_from_score(s_c), elo_from_score(low), elo_from_score(high)


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar test of two players on the same starts: were they equally strong, the
    chance that the n = a_only + b_only starts won by one of them alone split at least this unevenly
    (scipy's exact binomial test of a_only in n at 1/2). 1.0 when no start was won by one alone."""
    from scipy.stats import binomtest

    for name, v in (("a_only", a_only), ("b_only", b_only)):
        if v < 0:
            raise ValueError(f"{name} must be >= 0, got {v}")
    n = a_only + b_only
    return 1.0 if n == 0 else float(binomtest(a_only, n, 0.5).pvalue)


def _points2(wins: int, draws: int) -> int:
    """Twice the points: 2 per win, 1 per draw (kept integral for exact comparisons)."""
    return 2 * wins + draws


def _reaches(points2: int, games: int, threshold: float) -> bool:
    return Fraction(points2, 2 * games) >= Fraction(str(float(threshold)))


def gate_passed(wins: int, losses: int, draws: int, threshold: float = 0.55) -> bool:
    """Score >= threshold (False with no games)."""
    n = _check_counts(wins, losses, draws)
    return n > 0 and _reaches(_points2(wins, draws), n, threshold)


def gate_status(
    wins: int, losses: int, draws: int, total_games: int = 400, threshold: float = 0.55
) -> GateStatus:
    """The gate over `total_games`, decided early only when the outcome is already certain.

    "pass" once the candidate's score over all `total_games` reaches the
    threshold even if it loses every remaining game; "fail" once it cannot
    reach it even by winning them all; otherwise "undecided". So stopping
    early never changes the answer of the full match.
    """
    played = _check_counts(wins, losses, draws)
    if total_games < 1:
        raise ValueError(f"total_games must be >= 1, got {total_games}")
    if played > total_games:
        raise ValueError(f"{played} games played, more than the match's {total_games}")
    remaining = total_games - played
    worst = _points2(wins, draws)
    if _reaches(worst, total_games, threshold):
        return "pass"
    if not _reaches(worst + 2 * remaining, total_games, threshold):
        return "fail"
    return "undecided"


@dataclass(frozen=True)
class MatchResult:
    """The result of a match between players a and b, counted from a's view."""

    wins: int
    losses: int
    draws: int

    def __post_init__(self):
        _check_counts(self.wins, self.losses, self.draws)

    @property
    def games(self) -> int:
        return self.wins + self.losses + self.draws

    @property
    def win_rate(self) -> float:
        """a's score: (w + d/2) / n."""
        return score(self.wins, self.losses, self.draws)

    @property
    def elo(self) -> float:
        return elo_interval(self.wins, self.losses, self.draws)[0]

    @property
    def elo_low(self) -> float:
        return elo_interval(self.wins, self.losses, self.draws)[1]

    @property
    def elo_high(self) -> float:
        return elo_interval(self.wins, self.losses, self.draws)[2]

    def __add__(self, other: "MatchResult") -> "MatchResult":
        return MatchResult(self.wins + other.wins, self.losses + other.losses, self.draws + other.draws)

    def to_dict(self) -> dict:
        """Counts, score and Elo (95% interval) as plain JSON values; non-finite numbers become None."""
        elo, low, high = elo_interval(self.wins, self.losses, self.draws)

        def finite(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {
            "wins": self.wins,
            "losses": self.losses,
            "draws": self.draws,
            "games": self.games,
            "win_rate": self.win_rate,
            "elo": finite(elo),
            "elo_low": finite(low),
            "elo_high": finite(high),
        }

    @classmethod
    def from_dict(cls, data: dict) -> "MatchResult":
        return cls(int(data["wins"]), int(data["losses"]), int(data["draws"]))


def combine(results: Iterable[MatchResult]) -> MatchResult:
    """Sum the shards of one match."""
    total = MatchResult(0, 0, 0)
    for r in results:
        total = total + r
    return total
