"""The state renderer and `pycraftax render`: pictures follow the state, GIFs hold the episode."""

from __future__ import annotations

import numpy as np
import pytest

import pycraftax
from pycraftax import cli
from pycraftax.render import BLOCK_COLOURS, STATUS_ROWS, VIEW_COLS, VIEW_ROWS, record_episode, render_frame, save_gif
from pycraftax.train import numpy_ppo as npp

TILE = 8


@pytest.fixture(scope="module")
def state():
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=2, backend="c", seed=5)
    env.reset(seed=5)
    return env.get_state()


def test_local_view_shape_and_player(state):
    frame = render_frame(state, 1, "local", TILE)
    assert frame.shape == ((VIEW_ROWS + STATUS_ROWS) * TILE, VIEW_COLS * TILE, 3) and frame.dtype == np.uint8
    # The player's tile (centre of the view) is white apart from its facing tick.
    y, x = (VIEW_ROWS // 2) * TILE, (VIEW_COLS // 2) * TILE
    assert (frame[y + 1, x + 1] == 255).all()


def test_floor_view_draws_the_map(state):
    frame = render_frame(state, 0, "floor", TILE)
    assert frame.shape == ((48 + STATUS_ROWS) * TILE, 48 * TILE, 3)
    level = int(state["player_level"][0])
    blocks, light = state["map"][0, level], state["light_map"][0, level]
    # A lit cell with no item, mob or player on it shows its block's colour.
    free = (state["item_map"][0, level] == 0) & ~state["mob_map"][0, level] & (light > 0.05)
    pr, pc = state["player_position"][0]
    free[pr, pc] = False
    rows, cols = np.nonzero(free)
    for r, c in list(zip(rows, cols))[:: max(1, len(rows) // 50)]:
        assert (frame[r * TILE + 1, c * TILE + 1] == BLOCK_COLOURS[blocks[r, c]]).all(), (r, c, blocks[r, c])


def test_frames_differ_between_worlds(state):
    assert not np.array_equal(render_frame(state, 0, "floor", TILE), render_frame(state, 1, "floor", TILE))


def test_bad_arguments(state):
    with pytest.raises(ValueError, match="view"):
        render_frame(state, 0, "pixels")
    with pytest.raises(ValueError, match="tile"):
        render_frame(state, 0, "local", 2)
    with pytest.raises(ValueError, match="frames"):
        save_gif("x.gif", [])
    frame = np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(ValueError, match=r"frames\[1\] must be uint8 \[H, W, 3\] of the first frame's size \(8, 8, 3\), "
                                         r"got float32 \(8, 8\)"):
        save_gif("x.gif", [frame, np.zeros((8, 8), np.float32)])
    with pytest.raises(ValueError, match=r"frames\[1\] .* got uint8 \(8, 9, 3\)"):
        save_gif("x.gif", [frame, np.zeros((8, 9, 3), np.uint8)])
    with pytest.raises(ValueError, match="max_steps"):
        record_episode(max_steps=0)


def test_record_episode_with_policy_writes_gif(tmp_path):
    from PIL import Image

    params = npp.init_params(npp.ModelConfig(width=16, hidden=16), seed=1)
    frames, summary = record_episode(params, seed=2, max_steps=25, tile=TILE)
    assert summary["length"] == len(frames) - 1 == 25 and not summary["ended"]
    path = tmp_path / "episode.gif"
    save_gif(str(path), frames, fps=10)
    with Image.open(path) as gif:
        assert gif.size == (frames[0].shape[1], frames[0].shape[0]) and gif.n_frames >= 2


def test_cli_render(tmp_path, capsys):
    out = tmp_path / "random.gif"
    assert cli.main(["render", "--out", str(out), "--max-steps", "12", "--tile", "6"]) == 0
    assert out.stat().st_size > 0 and "random actions" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["render", "--out", str(out), "--max-steps", "0"])
    assert cli.main(["render", "--checkpoint", str(tmp_path / "missing.npz")]) == 2
