"""Ratings: one maximum-likelihood Bradley-Terry fit over every recorded game of a line.

Each player has a rating R on the Elo scale, and a game between a and b is a
win for a with probability 1 / (1 + 10^((R_b - R_a) / 400)); a draw counts half
a win for each side. The ratings maximise the likelihood of all results at
once (gate matches and ladder games alike), so a champion that never met GNU
Go still gets a rating through the players it did meet.

Ratings are relative: the fit fixes one anchor player's rating. zero's one scale for Go
is GNU Go 3.8 at level 1 = 0 (DEFAULT_ANCHOR; Gomoku's lines anchor pure MCTS with 1,000
rollouts at 0). Players with no chain of games to the anchor cannot be placed and get no rating.

A player that won (or lost) every game has an infinite maximum-likelihood
rating. As BayesElo does, every pair that met is given `prior_draws` virtual
draws (1 by default), which keeps every rating finite and pulls a rating
backed by few games toward its opponents'. The 95% interval of each rating
comes from the inverse of the observed information (the negative Hessian of
the log-likelihood) with the anchor held fixed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable

import numpy as np

ELO = 400.0 / math.log(10.0)  # Elo points per natural-log unit of odds
Z95 = 1.959963984540054
DEFAULT_ANCHOR = ("gnugo-l1", 0.0)  # the Go scale, named once (docs/strength.md)


@dataclass(frozen=True)
class Pairing:
    """Results of games between players a and b, from a's view."""

    a: str
    b: str
    wins: int
    losses: int
    draws: int = 0

    @property
    def games(self) -> int:
        return self.wins + self.losses + self.draws


@dataclass(frozen=True)
class Rating:
    """A player's rating with its 95% interval (low, high) and the games behind it."""

    player: str
    elo: float
    low: float
    high: float
    games: int

    def to_dict(self) -> dict:
        return {"elo": round(self.elo, 1), "elo_low": round(self.low, 1), "elo_high": round(self.high, 1),
                "games": self.games}


def _components(players: list[str], pairs: dict) -> list[set[str]]:
    links = defaultdict(set)
    for a, b in pairs:
        links[a].add(b)
        links[b].add(a)
    seen: set[str] = set()
    out = []
    for p in players:
        if p in seen:
            continue
        stack, comp = [p], set()
        while stack:
            q = stack.pop()
            if q in comp:
                continue
            comp.add(q)
            stack.extend(links[q] - comp)
        seen |= comp
        out.append(comp)
    return out


class RatingError(RuntimeError):
    """The maximum-likelihood fit did not converge: no ratings are better than wrong ones."""


def fit_ratings(results: Iterable[Pairing], anchor: tuple[str, float] = DEFAULT_ANCHOR,
                prior_draws: float = 1.0, max_iter: int = 100) -> dict[str, Rating]:
    """Maximum-likelihood ratings of every player connected to the anchor.

    Args:
        results: pairings; the same two players may appear in many (they are summed).
        anchor: (player, rating) held fixed.
        prior_draws: virtual draws added to every pair that met (keeps ratings finite).

    Returns:
        {player: Rating} for the anchor's connected component (empty if the anchor played no game).
    """
    score: dict[tuple[str, str], float] = defaultdict(float)  # a's points against b, a < b
    games: dict[tuple[str, str], float] = defaultdict(float)
    played: dict[str, int] = defaultdict(int)
    for r in results:
        if r.games == 0 or r.a == r.b:
            continue
        a, b, s = (r.a, r.b, r.wins + r.draws / 2) if r.a < r.b else (r.b, r.a, r.losses + r.draws / 2)
        score[(a, b)] += s
        games[(a, b)] += r.games
        played[r.a] += r.games
        played[r.b] += r.games
    name, value = anchor
    if name not in played:
        return {}
    comp = next(c for c in _components(sorted(played), games) if name in c)
    free = sorted(comp - {name})
    index = {p: i for i, p in enumerate(free)}
    pairs = [(a, b, score[(a, b)] + prior_draws / 2, games[(a, b)] + prior_draws)
             for (a, b) in games if a in comp]
    x = np.zeros(len(free))  # ratings in natural-log odds units, anchor at 0

    def r_of(p: str) -> float:
        return 0.0 if p == name else x[index[p]]

    hess = np.zeros((len(free), len(free)))
    converged = not free
    for _ in range(max_iter):
        grad = np.zeros(len(free))
        hess[:] = 0.0
        for a, b, s, n in pairs:
            p = 1.0 / (1.0 + math.exp(r_of(b) - r_of(a)))
            g, h = s - n * p, n * p * (1.0 - p)
            ia, ib = index.get(a), index.get(b)
            if ia is not None:
                grad[ia] += g
                hess[ia, ia] -= h
            if ib is not None:
                grad[ib] -= g
                hess[ib, ib] -= h
            if ia is not None and ib is not None:
                hess[ia, ib] += h
                hess[ib, ia] += h
        if not free:
            break
        step = np.linalg.solve(hess, -grad)
        x += np.clip(step, -2.0, 2.0)  # damped: at most ~870 Elo a step
        if np.max(np.abs(step)) < 1e-9:
            converged = True
            break
    if not converged:
        raise RatingError(f"the rating fit did not converge in {max_iter} Newton steps "
                          f"({len(free) + 1} players, {len(pairs)} pairs)")
    cov = np.linalg.inv(-hess) if free else np.zeros((0, 0))
    out = {name: Rating(name, value, value, value, played[name])}
    for p, i in index.items():
        elo = value + ELO * x[i]
        half = Z95 * ELO * math.sqrt(max(cov[i, i], 0.0))
        out[p] = Rating(p, elo, elo - half, elo + half, played[p])
    return out
