"""flows.lines: recipe lines compared generation by generation from their workspaces' records."""

import json

import pytest
import yaml

from flows.layout import LineError
from flows.lines import LinesError, generation_rows, main, parse_line


def _generation(ws, g, window, core_hours, wins=11, value_loss=0.6, gate=True, ladder=None, selfplay=None):
    d = ws / "gens" / "go-9" / f"g{g:04d}"
    d.mkdir(parents=True)
    (d / "params.yaml").write_text(yaml.safe_dump({"network": {"size": "b6c64"},
                                                   "train": {"window_generations": window}}))
    record = {
        "generation": g,
        "compute": {"core_hours": core_hours, "wall_s": core_hours * 3600},
        "selfplay": selfplay or {"games": 512},
        "train": {"steps": 530, "reuse": {"train_positions": 9_000 * min(window, 12 + g)},
                  "holdout": {"value_loss": value_loss, "policy_loss": 1.5}},
        "gate": {"wins": wins, "losses": 20 - wins, "draws": 0, "candidate_sha256": f"{g:064x}"} if gate else None,
        "ladder": {"matches": [{"b": b, "wins": w, "losses": l, "draws": dr, "visits": 200}
                               for b, (w, l, dr) in ladder.items()]} if ladder else None,
    }
    (d / "generation.json").write_text(json.dumps(record))


def test_each_line_sums_its_own_core_hours_and_stops_at_its_last_generation(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    for g in (1, 2, 3):
        _generation(a, g, 12, 0.125)
        _generation(b, g, 24, 0.25, wins=8 + g)
    _generation(b, 4, 24, 0.25, gate=False)  # a generation still running: no gate yet
    main([str(tmp_path / "out"), f"window-12={a}:2", f"window-24={b}"])
    table = json.loads((tmp_path / "out" / "lines.json").read_text())
    assert [r["generation"] for r in table["window-12"]] == [1, 2]
    assert [r["core_hours"] for r in table["window-12"]] == [0.125, 0.25]
    assert [r["generation"] for r in table["window-24"]] == [1, 2, 3]
    assert [r["core_hours"] for r in table["window-24"]] == [0.25, 0.5, 0.75]
    assert [r["gate"] for r in table["window-24"]] == ["9-11-0", "10-10-0", "11-9-0"]
    assert table["window-24"][2]["window_generations"] == 24
    assert table["window-24"][2]["train_positions"] == 9_000 * 15
    md = (tmp_path / "out" / "lines.md").read_text()
    assert md == capsys.readouterr().out
    assert "| window-24 | 3 | b6c64 | 24, 135,000 | 530 | 11-9-0 | 0.600 / 1.500 | 512 | 900 | 0.750 |  |" in md
    assert len(md.strip().splitlines()) == 2 + 5


def test_the_in_flow_ladders_are_listed_per_generation_and_pooled_per_line(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for g in (1, 2, 3, 4):
        ladder = {"pachi-5000": (g, 10 - g, 0)} if g % 2 == 0 else None
        _generation(a, g, 12, 0.1, ladder=ladder)
        _generation(b, g, 12, 0.1, ladder={"pachi-5000": (5, 5, 0), "gnugo-10": (9, 0, 1)} if g == 3 else None)
    main([str(tmp_path / "out"), f"z={a}", f"q={b}:2"])
    table = json.loads((tmp_path / "out" / "lines.json").read_text())
    assert [r["outside"] for r in table["z"]][:2] == [[], [{"opponent": "pachi-5000", "wins": 2, "losses": 8,
                                                            "draws": 0, "visits": 200}]]
    md = (tmp_path / "out" / "lines.md").read_text()
    assert "| z | 4 | b6c64 | 12, 108,000 | 530 | 11-9-0 | 0.600 / 1.500 | 512 | 360 | 0.400 | pachi-5000 4-6-0 |" in md
    # z: generations 2 and 4, 2 + 4 wins of 20 games; q stops at 2, before its ladder at 3: nothing pooled
    assert "| z | pachi-5000 | 2, 4 | 20 | 6-14-0 | 30.0% | -147 [" in md
    assert "| q | " not in md.split("Pooled")[1]
    main([str(tmp_path / "out"), f"q={b}"])
    md = (tmp_path / "out" / "lines.md").read_text()
    assert "| q | 3 | b6c64 | 12, 108,000 | 530 | 11-9-0 | 0.600 / 1.500 | 512 | 360 | 0.300 | " \
           "pachi-5000 5-5-0, gnugo-10 9-0-1 |" in md
    assert "| q | gnugo-10 | 3 | 10 | 9-0-1 | 95.0% | +512 [" in md


def test_a_line_can_start_at_a_later_generation_of_its_workspace(tmp_path):
    for g in (1, 2, 3, 4):
        _generation(tmp_path / "z", g, 12, 0.125)
    assert parse_line(f"z={tmp_path / 'z'}:2-3") == ("z", tmp_path / "z", 2, 3)
    main([str(tmp_path / "out"), f"z={tmp_path / 'z'}:2-3"])
    rows = json.loads((tmp_path / "out" / "lines.json").read_text())["z"]
    assert [r["generation"] for r in rows] == [2, 3] and [r["core_hours"] for r in rows] == [0.125, 0.25]


def test_the_games_say_how_many_resigned_and_how_many_were_decided_and_played_out(tmp_path):
    _generation(tmp_path / "a", 1, 12, 0.1, selfplay={"games": 519, "resigned": 476})
    _generation(tmp_path / "b", 1, 12, 0.1, selfplay={"games": 512, "resigned": 0, "decided": 470,
                                                       "decided_reversed": 2})
    main([str(tmp_path / "out"), f"z={tmp_path / 'a'}", f"decided={tmp_path / 'b'}"])
    md = (tmp_path / "out" / "lines.md").read_text()
    assert "| z | 1 | b6c64 | 12, 108,000 | 530 | 11-9-0 | 0.600 / 1.500 | 519 (476 resigned) | 360 |" in md
    assert "| decided | 1 | b6c64 | 12, 108,000 | 530 | 11-9-0 | 0.600 / 1.500 | 512 (470 decided, 2 reversed) |" in md


def test_lines_without_ladders_have_no_pooled_table(tmp_path):
    _generation(tmp_path / "a", 1, 12, 0.1)
    main([str(tmp_path / "out"), f"a={tmp_path / 'a'}"])
    assert "Pooled" not in (tmp_path / "out" / "lines.md").read_text()


@pytest.mark.parametrize("spec, error", [
    ("window-24", "NAME=WORKSPACE"),
    ("=/work/arm", "NAME=WORKSPACE"),
    ("a=/work/arm:last", "LAST or FIRST-LAST, numbers"),
    ("a=/work/arm:3-x", "LAST or FIRST-LAST, numbers"),
    ("a=/work/arm:-3", "LAST or FIRST-LAST, numbers"),
    ("a=/work/arm:5-3", "first generation 5 comes after the last 3"),
])
def test_a_malformed_line_spec_is_named(spec, error):
    with pytest.raises(LinesError, match=error):
        parse_line(spec)


def test_a_workspace_without_the_line_or_with_a_torn_record_is_named(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main([str(tmp_path / "out"), f"a={tmp_path / 'nowhere'}"])
    assert e.value.code == 2
    assert "no generations of go-9" in capsys.readouterr().err
    _generation(tmp_path / "ws", 1, 12, 0.1)
    (tmp_path / "ws" / "gens" / "go-9" / "g0001" / "generation.json").write_text("{\"generation\": 1, ")
    with pytest.raises(LineError, match="g0001/generation.json: torn or not JSON"):
        generation_rows(tmp_path / "ws")
    with pytest.raises(SystemExit) as e:
        main([str(tmp_path / "out"), f"a={tmp_path / 'ws'}"])
    assert e.value.code == 2
    assert "g0001/generation.json: torn or not JSON" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
