"""elo.png of a ladder directory: its fitted ratings drawn by generation and by compute, or as a pool."""

from __future__ import annotations

from pathlib import Path

from zero.fileio import atomic_savefig
from zero.ladder import is_fixed_opponent, scale_text
from zero.pairings import read_players


def plot_dir(ladder_dir: str | Path, fitted: dict, out: str | Path | None = None, title: str = "") -> Path:
    """Draw elo.png: the rating of each generation's network with its 95% interval, by generation and
    against cumulative self-play compute, with the fixed opponents as horizontal lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ladder_dir = Path(ladder_dir)
    ratings, players = fitted["ratings"], read_players(ladder_dir)
    gens = sorted((info["generation"], name) for name, info in players.items()
                  if name in ratings and info.get("generation") is not None)
    if not gens:
        return _plot_pool(fitted, out or ladder_dir / "elo.png", title)
    fixed = [name for name in ratings if name not in players]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for ax, key, label in ((axes[0], "generation", "generation"),
                           (axes[1], "compute_hours",
                            "cumulative compute of the line (core-hours: the pipeline's wall time x its cores)")):
        xs = [players[n].get(key) if key != "generation" else g for g, n in gens]
        pts = [(x, ratings[n]) for x, (g, n) in zip(xs, gens) if x is not None]
        if pts:
            x = [p[0] for p in pts]
            y = [p[1]["elo"] for p in pts]
            err = [[p[1]["elo"] - p[1]["elo_low"] for p in pts], [p[1]["elo_high"] - p[1]["elo"] for p in pts]]
            ax.errorbar(x, y, yerr=err, fmt="o-", capsize=3, label="zero (95% interval)")
        for i, name in enumerate(sorted(fixed, key=lambda n: ratings[n]["elo"])):
            ax.axhline(ratings[name]["elo"], color=f"C{i + 1}", ls="--", lw=1, label=name)
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"Elo {scale_text(fitted['anchor'])}", fontsize=None if fitted["anchor"]["anchored"] else 8)
    axes[1].legend(loc="best", fontsize=8)
    fig.suptitle(title or f"zero ladder: {fitted['games']} games in {fitted['pairings']} pairings")
    fig.tight_layout()
    return atomic_savefig(fig, Path(out) if out else ladder_dir / "elo.png", dpi=110)


def _plot_pool(fitted: dict, out: str | Path, title: str = "") -> Path:
    """elo.png of a pool with no generations (a `zero ladder` of named networks against engines): each
    player's rating as a point with its 95% interval, strongest at the top, the anchor named."""
    import matplotlib.pyplot as plt

    ratings, anchor = fitted["ratings"], fitted["anchor"]
    names = sorted(ratings, key=lambda n: ratings[n]["elo"])
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.5 * len(names)))
    for i, name in enumerate(names):
        r = ratings[name]
        colour = "C1" if is_fixed_opponent(name) else "C0"
        ax.errorbar([r["elo"]], [i], xerr=[[r["elo"] - r["elo_low"]], [r["elo_high"] - r["elo"]]], fmt="o",
                    color=colour, capsize=4)
        ax.annotate(f"{r['elo']:+.0f} [{r['elo_low']:+.0f}, {r['elo_high']:+.0f}], {r['games']} games",
                    (r["elo"], i), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8)
    ax.set_yticks(range(len(names)), names)
    ax.set_ylim(-0.6, len(names) - 0.2)
    ax.set_xlabel(f"Elo {scale_text(anchor)}, 95% intervals")
    ax.grid(alpha=0.3, axis="x")
    ax.set_title(title or f"zero ladder: {', '.join(reversed(names))}: {fitted['games']} games", fontsize=10)
    fig.tight_layout()
    return atomic_savefig(fig, out, dpi=110)
