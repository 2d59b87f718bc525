"""PNG plots of a generation for its MLflow run: the training curves and the gate's result (matplotlib, Agg).

Both are written whole or not at all (zero.fileio.atomic_savefig); flows.tracking logs them under the run's `plots/`.
"""

from __future__ import annotations

from pathlib import Path

from zero.fileio import atomic_savefig


def agg_pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    return plt


def elo_text(x) -> str:
    """An Elo figure signed and rounded (`+70`, `0` never `-0`), `inf` for a shut-out's missing bound."""
    return "inf" if x is None else f"{round(x) + 0:+d}"


def loss_curves_png(curves: dict[str, list[tuple[int, float]]], out: str | Path, title: str = "") -> Path:
    """Training curves by step: the losses (total, policy, value), the policy entropy and the learning rate.

    Args:
        curves: {metric name: [(step, value), ...]} as MLflow's metric history gives them;
            `loss`, `policy_loss`, `value_loss`, `entropy`, `lr` are drawn where present.
    """
    plt = agg_pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    panels = ((axes[0], ("loss", "policy_loss", "value_loss"), "loss"),
              (axes[1], ("entropy",), "policy entropy (nats)"),
              (axes[2], ("lr",), "learning rate"))
    for ax, keys, ylabel in panels:
        for key in keys:
            points = sorted(curves.get(key) or [])
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], lw=1, label=key)
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="best", fontsize=8)
    fig.suptitle(title or "training")
    fig.tight_layout()
    return atomic_savefig(fig, out, dpi=100, bbox_inches="tight")


def gate_png(result: dict, out: str | Path, title: str = "") -> Path:
    """The gate as one bar: the candidate's wins, draws and losses as shares of the games, and the threshold.

    Args:
        result: gate/result.json (wins, losses, draws, games, win_rate, threshold, passed, elo, elo_low, elo_high).
    """
    plt = agg_pyplot()
    games = max(1, result["wins"] + result["losses"] + result["draws"])
    fig, ax = plt.subplots(figsize=(8, 2.6))
    left = 0.0
    for key, colour in (("wins", "tab:green"), ("draws", "tab:gray"), ("losses", "tab:red")):
        share = result[key] / games
        ax.barh([0], [share], left=left, color=colour, label=f"{key} {result[key]}")
        if share > 0.06:
            ax.text(left + share / 2, 0, str(result[key]), ha="center", va="center", color="white")
        left += share
    ax.axvline(result["threshold"], color="black", ls="--", lw=1.5, label=f"threshold {result['threshold']:.2f}")
    ax.set_xlim(0, 1)
    ax.set_yticks([])
    ax.set_xlabel("share of the games (candidate's view)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=4, fontsize=8, frameon=False)
    verdict = "passed" if result["passed"] else "not passed"
    ax.set_title(f"{title or 'gate'}: {result['wins']}-{result['losses']}-{result['draws']}, win rate "
                 f"{result['win_rate']:.3f}, Elo {elo_text(result['elo'])} [{elo_text(result['elo_low'])}, "
                 f"{elo_text(result['elo_high'])}]: {verdict}", fontsize=9)
    fig.tight_layout()
    return atomic_savefig(fig, out, dpi=100, bbox_inches="tight")
