"""Play against the engine in the terminal (`zero play`), Go or Gomoku.

The person types GTP vertices (`D4`), `pass` (Go), `undo`, `resign`, `quit`
or `help`; anything else is explained and asked again. The board is drawn
with colours through rich when the output is a terminal, as plain text
otherwise, so a game can be scripted through StringIO.
"""

from __future__ import annotations

import sys
from typing import TextIO

from zero.engine_loader import EngineLoadError, LoadingEngine
from zero.games import initial_position
from zero.games.base import IllegalMove
from zero.notation import COLUMNS, NotationError, colour_name, parse_colour, result_text, score_text

HELP = "Type a vertex such as D4, or pass, undo, resign, quit, help."
_STONE = {1: "X", -1: "O", 0: "."}
_NAME = {c: colour_name(c).capitalize() for c in (1, -1)}


def _colour(value) -> int:
    """The person's colour from +1/-1 or text (`black`, `b`, `x`...); ValueError naming it."""
    if value in (1, -1):
        return int(value)
    try:
        return parse_colour(str(value), marks=True)
    except NotationError:
        raise ValueError(f"colour must be black or white, got {value!r}") from None


class _Screen:
    """Writes lines and boards: rich markup on a terminal, plain text elsewhere."""

    def __init__(self, stdout: TextIO):
        self.stdout = stdout
        self.console = None
        if getattr(stdout, "isatty", lambda: False)():
            from rich.console import Console

            self.console = Console(file=stdout, highlight=False)

    def say(self, text: str = "") -> None:
        if self.console is not None:
            self.console.print(text, markup=False)
        else:
            self.stdout.write(text + "\n")
            self.stdout.flush()

    def ask(self, prompt: str) -> None:
        self.stdout.write(prompt)
        self.stdout.flush()

    def board(self, board, last: int | None) -> None:
        """Draw a [H, W] board of +1/-1/0 with the last move in parentheses."""
        height, width = board.shape
        letters = "   " + "".join(" " + COLUMNS[c] for c in range(width))
        rows = [letters]
        for r in range(height):
            sep = [" "] * (width + 1)  # sep[c] goes before column c
            if last is not None and last // width == r:
                sep[last % width], sep[last % width + 1] = "(", ")"
            line = ""
            for c in range(width):
                v = int(board[r, c])
                cell = _STONE[v]
                if self.console is not None and v:
                    cell = f"[{'bold yellow' if v == 1 else 'bold cyan'}]{cell}[/]"
                line += sep[c] + cell
            rows.append(f"{height - r:3d}{line}{sep[width]}{height - r}")
        rows.append(letters)
        if self.console is not None:
            for row in rows:
                self.console.print(row)
        else:
            self.stdout.write("\n".join(rows) + "\n")
            self.stdout.flush()


def _last_point(position, game) -> int | None:
    moves = list(position.moves)
    if not moves or moves[-1] >= game.height * game.width:
        return None
    return moves[-1]


def _result(position, game) -> str:
    """The end of a finished game in words, with its SGF-style result."""
    if game.name == "go":
        return f"Final score (Tromp-Taylor, komi {position.komi:g}): {score_text(position.score())}"
    winner = position.winner
    if not winner:
        return f"The board is full: a draw ({result_text(0)})"
    return f"{_NAME[winner]} wins with {game.k} in a row ({result_text(winner)})"


def run_play(params, model: str | None, visits: int | None, human_color, stdin: TextIO, stdout: TextIO,
             engine=None) -> int:
    """Play one game against the engine; exit status 0 (2 if the model cannot be loaded).

    Args:
        params: Params (the game and the search).
        model: network checkpoint, None for a fresh network.
        visits: search visits per engine move (None: the params' default).
        human_color: the person's colour: +1/-1 or "black"/"white".
        engine: an already built Engine (tests), instead of building one from params and model (`warming` it).
    """
    human = _colour(human_color)
    if engine is None:
        from zero.engine_loader import announce_compiles, build_engine

        announce_compiles(sys.stderr, "zero play")
        try:
            engine = warming(build_engine(params, model, visits))
        except ValueError as e:  # CheckpointError names the file and what is wrong
            print(f"zero play: error: {e}", file=sys.stderr)
            return 2
    try:
        return _play(engine, human, stdin, stdout)
    except EngineLoadError as e:  # a checkpoint that is corrupt or for another board, named
        print(f"zero play: error: {e}", file=sys.stderr)
        return 2


def warming(engine) -> LoadingEngine:
    """`engine`, its kernels loaded (or compiled) on a thread while the board is drawn and the person's first
    move typed; a checkpoint that cannot play was refused before, when the engine was built."""
    return LoadingEngine(lambda: engine, engine.game)


def _play(engine, human: int, stdin: TextIO, stdout: TextIO) -> int:
    game = engine.game
    screen = _Screen(stdout)
    history = [initial_position(game)]

    screen.say(f"zero: {game.name} on {game.height}x{game.width}; you are {_NAME[human]} ({_STONE[human]}).")
    if game.name == "go":
        screen.say("Tromp-Taylor rules: every stone on the board counts as alive at the end, "
                   "so capture dead stones before passing. Two passes end the game.")
    screen.say(HELP)

    show = True  # draw the board before the next prompt
    while not history[-1].is_over:
        position = history[-1]
        if position.to_play != human:
            action = engine.genmove(position)
            if action is None:
                screen.say(f"zero ({_NAME[-human]}) resigns. You win: {result_text(human, resigned=True)}")
                return 0
            history.append(position.play(action))
            move = "passes" if action == game.pass_action else f"plays {game.action_to_text(action)}"
            screen.say(f"zero ({_NAME[-human]}) {move}")
            show = True
            continue

        if show:
            screen.say()
            screen.board(position.board, _last_point(position, game))
            show = False
        screen.ask(f"{_NAME[human]} ({_STONE[human]}) to play> ")
        line = stdin.readline()
        if not line:
            screen.say("\nEnd of input: game abandoned.")
            return 0
        word = line.strip()
        command = word.lower()
        if not command:
            continue
        if command in ("quit", "exit", "q"):
            screen.say("Game abandoned.")
            return 0
        if command in ("help", "?", "h"):
            screen.say(HELP)
            continue
        if command == "resign":
            screen.say(f"You resign. zero wins: {result_text(-human, resigned=True)}")
            return 0
        if command == "undo":
            played = len(history) - 1
            mine = [i for i in range(played) if (1 if i % 2 == 0 else -1) == human]
            if not mine:
                screen.say("Nothing to undo: you have not moved yet.")
                continue
            del history[mine[-1] + 1 :]  # back to just before your last move
            screen.say(f"Took back your last move ({game.action_to_text(position.moves[mine[-1]])}) and zero's reply.")
            show = True
            continue
        if command == "pass":
            if game.name != "go":
                screen.say("Gomoku has no pass. " + HELP)
                continue
            action = game.pass_action
        else:
            try:
                action = game.text_to_action(word)
            except ValueError as e:
                screen.say(f"Not a move: {e}. {HELP}")
                continue
        try:
            history.append(position.play(action))
        except IllegalMove as e:
            screen.say(f"Illegal move {game.action_to_text(action)}: {e.reason}. Try again.")
            continue
        screen.say(f"You ({_NAME[human]}) {'pass' if command == 'pass' else 'play ' + game.action_to_text(action)}")

    final = history[-1]
    screen.say()
    screen.board(final.board, _last_point(final, game))
    screen.say(_result(final, game))
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m zero.play [--params FILE] [--model PATH] [--visits N] [--color black|white]`."""
    import argparse
    from pathlib import Path

    from zero.config import ConfigError, load_params

    parser = argparse.ArgumentParser(prog="zero play", description="play against the engine in the terminal")
    parser.add_argument("--params", default=None)
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument("--model", default=None)
    parser.add_argument("--visits", type=int, default=None)
    parser.add_argument("--color", default="black")
    args = parser.parse_args(argv)
    if args.visits is not None and args.visits < 1:
        parser.error(f"argument --visits: must be a whole number of at least 1, got {args.visits}")
    path = args.params if args.params is not None or not Path("params.yaml").is_file() else "params.yaml"
    try:
        params = load_params(path, args.set)
        colour = _colour(args.color)
    except (ConfigError, ValueError) as e:
        print(f"zero play: error: {e}", file=sys.stderr)
        return 2
    try:
        return run_play(params, args.model, args.visits, colour, sys.stdin, sys.stdout)
    except KeyboardInterrupt:
        if sys.stdout.isatty():
            print()  # end the prompt line
        print("zero play: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
