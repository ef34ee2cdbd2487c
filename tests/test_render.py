"""Pictures and videos for people and `pycraftax render`: textured frames follow the state (the
local view is the renderer's picture, the floor view draws every cell's block texture),
GIFs and MP4s hold the episode."""

from __future__ import annotations

import numpy as np
import pytest

import pycraftax
from pycraftax import cli, pixels, textures
from pycraftax.render import record_episode, render_frame, save_gif, save_mp4, save_video
from pycraftax.train import numpy_ppo as npp

TILE = 8


@pytest.fixture(scope="module")
def env():
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=2, backend="c", seed=5)
    env.reset(seed=5)
    yield env
    env.close()


def test_local_view_is_the_renderers_picture(env):
    state = env.get_state()
    frame = render_frame(state, 1, "local", TILE)
    assert frame.shape == (13 * TILE, 11 * TILE, 3) and frame.dtype == np.uint8
    raw = pixels.render_states("craftax", env._state_bytes(1), TILE)[0]
    np.testing.assert_array_equal(frame, np.clip(raw, 0, 255).astype(np.uint8))
    np.testing.assert_array_equal(frame, env.render(1, TILE))


def test_floor_view_draws_every_block(env):
    state = env.get_state()
    frame = render_frame(state, 0, "floor", TILE)
    assert frame.shape == (48 * TILE, 48 * TILE, 3)
    level = int(state["player_level"][0])
    blocks, light = state["map"][0, level], state["light_map"][0, level]
    block_tex = textures.craftax_textures(TILE)["block_textures"]
    # a fully lit cell with no item, mob or player on it shows its block's texture
    free = (state["item_map"][0, level] == 0) & ~state["mob_map"][0, level] & (light == 1.0)
    pr, pc = state["player_position"][0]
    free[pr, pc] = False
    rows, cols = np.nonzero(free)
    assert len(rows) > 100
    for r, c in list(zip(rows, cols))[:: max(1, len(rows) // 50)]:
        cell = frame[r * TILE:(r + 1) * TILE, c * TILE:(c + 1) * TILE]
        np.testing.assert_array_equal(cell, block_tex[blocks[r, c]].astype(np.uint8), err_msg=str((r, c)))
    assert not np.array_equal(frame, render_frame(state, 1, "floor", TILE))  # two worlds, two pictures


def test_classic_frames():
    with pycraftax.make("Craftax-Classic-Symbolic-v1", num_envs=2, backend="c") as classic:
        classic.reset(seed=0)
        state = classic.get_state()
        local = render_frame(state, 0, "local", TILE)
        floor = render_frame(state, 0, "floor", TILE)
        assert local.shape == (9 * TILE, 9 * TILE, 3) and floor.shape == (64 * TILE, 64 * TILE, 3)
        np.testing.assert_array_equal(local, classic.render(0, TILE))
        assert not np.array_equal(render_frame(state, 1, "floor", TILE), floor)


def test_bad_arguments(env):
    state = env.get_state()
    with pytest.raises(ValueError, match="view"):
        render_frame(state, 0, "pixels")
    with pytest.raises(ValueError, match="block_size"):
        render_frame(state, 0, "local", 2)
    with pytest.raises(ValueError, match="frames"):
        save_gif("x.gif", [])
    frame = np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(ValueError, match=r"frames\[1\] must be uint8 \[H, W, 3\] of the first frame's size \(8, 8, 3\), "
                                         r"got float32 \(8, 8\)"):
        save_gif("x.gif", [frame, np.zeros((8, 8), np.float32)])
    with pytest.raises(ValueError, match=r"frames\[1\] .* got uint8 \(8, 9, 3\)"):
        save_gif("x.gif", [frame, np.zeros((8, 9, 3), np.uint8)])
    with pytest.raises(ValueError, match=r"end in one of \['.gif', '.mp4'\]"):
        save_video("x.avi", [frame])
    with pytest.raises(ValueError, match="max_steps"):
        record_episode(max_steps=0)
    with pytest.raises(ValueError, match="view"):
        record_episode(max_steps=1, view="map")


def test_record_episode_with_policy_writes_gif(tmp_path):
    from PIL import Image

    params = npp.init_params(npp.ModelConfig(width=16, hidden=16), seed=1)
    frames, summary = record_episode(params, seed=2, max_steps=25, tile=TILE)
    assert summary["length"] == len(frames) - 1 == 25 and not summary["ended"]
    path = tmp_path / "episode.gif"
    save_gif(str(path), frames, fps=10)
    with Image.open(path) as gif:
        assert gif.size == (frames[0].shape[1], frames[0].shape[0]) and gif.n_frames >= 2


def test_mp4_holds_the_frames(tmp_path):
    pytest.importorskip("imageio_ffmpeg", reason="the MP4 writer needs imageio-ffmpeg (the test extra installs it)")
    frames, _ = record_episode(None, seed=3, max_steps=9, tile=7)  # odd sizes: 91 x 77
    path = tmp_path / "episode.mp4"
    save_mp4(str(path), frames, fps=5)
    video = _read_mp4(path)
    assert video.shape == (len(frames), 92, 78, 3)  # padded to even sizes for the codec
    # lossy, but each frame is recognisably its own picture
    for i in (0, len(frames) - 1):
        error = np.abs(video[i, :91, :77].astype(int) - frames[i].astype(int)).mean()
        assert error < 12, error


def _read_mp4(path) -> np.ndarray:
    import imageio.v2 as imageio

    with imageio.get_reader(str(path), format="FFMPEG") as reader:
        return np.stack([frame for frame in reader])


def test_cli_render(tmp_path, capsys):
    out = tmp_path / "random.gif"
    assert cli.main(["render", "--out", str(out), "--max-steps", "12", "--block-size", "6"]) == 0
    assert out.stat().st_size > 0 and "random actions" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["render", "--out", str(out), "--max-steps", "0"])
    with pytest.raises(SystemExit):
        cli.main(["render", "--out", str(out), "--block-size", "5"])
    assert cli.main(["render", "--checkpoint", str(tmp_path / "missing.npz")]) == 2
    assert cli.main(["render", "--out", str(tmp_path / "episode.avi")]) == 2
    assert "must end in one of" in capsys.readouterr().err


def test_cli_render_mp4(tmp_path):
    pytest.importorskip("imageio_ffmpeg", reason="the MP4 writer needs imageio-ffmpeg (the test extra installs it)")
    mp4 = tmp_path / "random.mp4"
    assert cli.main(["render", "--out", str(mp4), "--max-steps", "4", "--tile", "8", "--view", "floor"]) == 0
    assert _read_mp4(mp4).shape[1:] == (48 * 8, 48 * 8, 3)


def test_cli_render_without_textures_is_a_clear_error(tmp_path, capsys, monkeypatch):
    import importlib.metadata

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(textures, "_MEMORY", {})
    monkeypatch.setattr(pixels, "_ATLASES", {})
    monkeypatch.setattr(textures.importlib.metadata, "distribution", not_installed)
    assert cli.main(["render", "--out", str(tmp_path / "e.gif"), "--max-steps", "2"]) == 2
    err = capsys.readouterr().err
    assert "pip install --no-deps craftax==1.6.1" in err and "Traceback" not in err


def test_cli_render_mp4_without_imageio_ffmpeg_is_a_clear_error(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # import fails
    assert cli.main(["render", "--out", str(tmp_path / "e.mp4"), "--max-steps", "2"]) == 2
    assert "pip install imageio-ffmpeg" in capsys.readouterr().err
