"""The pixel envs' contract on backend="c" (no JAX needed; their parity with upstream is
conformance/test_pixels.py): obs shapes, range and spaces; the obs is the picture of the
state (reset, step, observe, the renderer); the game under the pixels is the symbolic env's;
textures come from the installed craftax distribution, are cached per user, and their
absence is a clear error; env.render() draws people's pictures."""

from __future__ import annotations

import importlib.metadata

import numpy as np
import pytest

import pycraftax
from pycraftax import pixels, textures
from pycraftax.textures import TexturesMissing

PIXEL_IDS = {"Craftax-Pixels-v1": ("Craftax-Symbolic-v1", (130, 110, 3)),
             "Craftax-Classic-Pixels-v1": ("Craftax-Classic-Symbolic-v1", (63, 63, 3))}
N = 4


def make(env_id, **kwargs):
    return pycraftax.make(env_id, num_envs=N, backend="c", **kwargs)


def test_pixel_ids_are_listed():
    assert set(PIXEL_IDS) <= set(pycraftax.list_envs())
    assert set(PIXEL_IDS) <= set(pycraftax.list_envs("c"))


@pytest.mark.parametrize("env_id", PIXEL_IDS)
def test_obs_shape_range_and_spaces(env_id):
    shape = PIXEL_IDS[env_id][1]
    with make(env_id) as env:
        obs, _ = env.reset(seed=1)
        assert obs.shape == (N, *shape) and obs.dtype == np.float32
        assert env.single_observation_space.shape == shape
        rng = np.random.default_rng(0)
        for _ in range(5):
            obs, *_ = env.step(rng.integers(0, env.num_actions, N).astype(np.int32))
            assert obs.shape == (N, *shape)
            assert 0.0 <= obs.min() and obs.max() <= 1.0
            assert all(env.single_observation_space.contains(o) for o in obs)
        assert len(np.unique(obs[:, :, :, 1])) > 20  # a picture, not a constant


@pytest.mark.parametrize("env_id", PIXEL_IDS)
def test_obs_is_the_picture_of_the_state(env_id):
    """reset and step_with_keys obs == observe() == the renderer's picture / 255 of the state."""
    game = pixels.game_of(make(env_id))
    with make(env_id) as env:
        obs, _ = env.reset(seed=3)
        np.testing.assert_array_equal(obs, env.observe())
        rng = np.random.default_rng(1)
        for _ in range(3):
            keys = rng.integers(0, 2**32, (N, 2), dtype=np.uint32)
            obs, *_ = env.step_with_keys(rng.integers(0, env.num_actions, N).astype(np.int32), keys)
            np.testing.assert_array_equal(obs, env.observe())
        states = np.concatenate([env._state_bytes(i) for i in range(N)])
        raw = pixels.render_states(game, states, pixels.AGENT_BLOCK[game])
        np.testing.assert_array_equal(obs, raw * np.float32(0.00392156886))
        scaled = pixels.render_states(game, states, pixels.AGENT_BLOCK[game], scaled=True)
        np.testing.assert_array_equal(obs, scaled)


@pytest.mark.parametrize("env_id", PIXEL_IDS)
def test_the_game_under_the_pixels_is_the_symbolic_one(env_id):
    """From the same state with the same keys and actions, the pixel env and the symbolic env
    reach the same states and rewards."""
    symbolic_id = PIXEL_IDS[env_id][0]
    with make(env_id) as px, make(symbolic_id) as sym:
        px.reset(seed=7)
        sym.set_state(px.get_state())
        rng = np.random.default_rng(2)
        for t in range(20):
            actions = rng.integers(0, px.num_actions, N).astype(np.int32)
            keys = rng.integers(0, 2**32, (N, 2), dtype=np.uint32)
            _, r1, d1, _ = px.step_with_keys(actions, keys)
            _, r2, d2, _ = sym.step_with_keys(actions, keys)
            np.testing.assert_array_equal(r1, r2)
            np.testing.assert_array_equal(d1, d2)
        a, b = px.get_state(), sym.get_state()
        for name in a:
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.mark.parametrize("env_id", PIXEL_IDS)
@pytest.mark.parametrize("resets", ["auto", "optimistic"])
def test_auto_and_optimistic_resets_run(env_id, resets):
    with make(env_id, resets=resets, max_timesteps=4) as env:
        env.reset(seed=0)
        ended = 0
        for _ in range(9):
            obs, _, terminated, truncated, _ = env.step(np.zeros(N, np.int32))
            ended += int((terminated | truncated).sum())
            assert obs.shape == (N, *PIXEL_IDS[env_id][1])
        assert ended >= N  # every env reached the time limit at least once


def test_pixel_envs_refuse_compact_obs():
    for env_id in PIXEL_IDS:
        with pytest.raises(ValueError, match="obs='compact'"):
            pycraftax.make(env_id, backend="cuda", obs="compact")


def test_pixel_ids_on_cuda():
    """Both pixel ids are CUDA ids: "auto" runs them on CUDA where a GPU is usable and on C
    (with a warning) where not; without a usable GPU backend="cuda" says so."""
    assert set(PIXEL_IDS) <= set(pycraftax.list_envs("cuda"))
    for env_id in PIXEL_IDS:
        if pycraftax.cuda_available():
            with pycraftax.make(env_id, num_envs=2, backend="auto") as env:
                assert env.backend == "cuda"
        else:
            with pytest.warns(UserWarning, match="no CUDA backend available"):
                env = pycraftax.make(env_id, num_envs=2, backend="auto")
            with env:
                assert env.backend == "c"
            with pytest.raises(RuntimeError, match="backend='cuda' is not available"):
                pycraftax.make(env_id, num_envs=2, backend="cuda")


# -- textures ------------------------------------------------------------------------------------
@pytest.fixture
def fresh_textures(monkeypatch, tmp_path):
    """Empty in-memory caches and a private cache directory."""
    monkeypatch.setattr(textures, "_MEMORY", {})
    monkeypatch.setattr(pixels, "_ATLASES", {})
    monkeypatch.setenv("PYCRAFTAX_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_missing_distribution_is_a_clear_error(fresh_textures, monkeypatch):
    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(textures.importlib.metadata, "distribution", not_installed)
    for env_id in PIXEL_IDS:
        with pytest.raises(TexturesMissing, match=r"pip install --no-deps craftax==1\.6\.1"):
            pycraftax.make(env_id, backend="c")


def test_missing_images_are_a_clear_error(fresh_textures, monkeypatch, tmp_path):
    class Empty:
        version = "1.6.1"

        def locate_file(self, path):
            return tmp_path / "no-such-dir" / path

    monkeypatch.setattr(textures.importlib.metadata, "distribution", lambda name: Empty())
    with pytest.raises(TexturesMissing, match="has no images"):
        textures.craftax_textures()


def test_textures_are_cached_per_user(fresh_textures, monkeypatch):
    first = textures.textures(textures.FULL, 12)
    files = sorted(fresh_textures.glob("textures-craftax-12-*.npz"))
    assert len(files) == 1
    # a second process reads the file: the in-memory cache emptied, the builder must not run
    monkeypatch.setattr(textures, "_MEMORY", {})
    monkeypatch.setitem(textures._BUILDERS, textures.FULL, lambda images, block: pytest.fail("rebuilt"))
    again = textures.textures(textures.FULL, 12)
    assert set(again) == set(first)
    for name in first:
        np.testing.assert_array_equal(again[name], first[name])


def test_a_corrupt_cache_file_is_rebuilt(fresh_textures, monkeypatch):
    textures.textures(textures.CLASSIC, 9)
    (path,) = fresh_textures.glob("textures-craftax_classic-9-*.npz")
    path.write_bytes(b"not an npz")
    monkeypatch.setattr(textures, "_MEMORY", {})
    rebuilt = textures.textures(textures.CLASSIC, 9)
    assert rebuilt["block_textures"].shape == (17, 9, 9, 3)
    with np.load(path) as data:  # rewritten whole
        np.testing.assert_array_equal(data["block_textures"], rebuilt["block_textures"])


def test_an_unwritable_cache_only_costs_a_rebuild(fresh_textures, monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory would be")
    monkeypatch.setenv("PYCRAFTAX_CACHE_DIR", str(blocker / "cache"))
    assert textures.textures(textures.FULL, 8)["block_textures"].shape == (37, 8, 8, 3)


def test_atlas_holds_every_texture_at_its_section():
    from pycraftax._native import ffi, lib

    section = ffi.new("CraftaxPixelSection *")
    for game, code, block in (("craftax", 0, 10), ("craftax_classic", 1, 7), ("craftax", 0, 64)):
        atlas = pixels.atlas(game, block)
        prepared = textures.textures(game, block)
        covered = 0
        for index in range(lib.craftax_pixels_num_sections(code)):
            assert lib.craftax_pixels_section(code, block, index, section) == 0
            name = ffi.string(section.name).decode()
            values = prepared[name]
            assert values.size == section.count * section.rows * section.cols * section.channels, name
            np.testing.assert_array_equal(atlas[section.offset:section.offset + values.size], values.ravel(),
                                          err_msg=name)
            covered += values.size
        assert covered == atlas.size == lib.craftax_pixels_atlas_size(code, block)
        assert lib.craftax_pixels_section(code, block, index + 1, section) == lib.CRAFTAX_ERR_ARGUMENT
    assert lib.craftax_pixels_atlas_size(0, 5) == lib.CRAFTAX_ERR_ARGUMENT
    assert lib.craftax_pixels_atlas_size(2, 10) == lib.CRAFTAX_ERR_ARGUMENT


# -- pictures for people -------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ["Craftax-Symbolic-v1", "Craftax-Classic-Symbolic-v1", "Craftax-Pixels-v1"])
def test_render_local_and_floor(env_id):
    with make(env_id) as env:
        env.reset(seed=2)
        game = pixels.game_of(env)
        rows, cols = textures.VIEW[game]
        inventory = 4 if game == "craftax" else 2
        local = env.render(index=1, block_size=16)
        assert local.shape == ((rows + inventory) * 16, cols * 16, 3) and local.dtype == np.uint8
        size = 48 if game == "craftax" else 64
        floor = env.render(index=1, block_size=8, view="floor")
        assert floor.shape == (size * 8, size * 8, 3) and floor.dtype == np.uint8
        assert not np.array_equal(env.render(index=0, block_size=16), local)  # another world


def test_render_at_the_agent_size_is_the_obs():
    with make("Craftax-Pixels-v1") as env:
        obs, _ = env.reset(seed=4)
        raw = pixels.render_states("craftax", env._state_bytes(2), 10)[0]
        np.testing.assert_array_equal(raw * np.float32(0.00392156886), obs[2])
        np.testing.assert_array_equal(env.render(index=2, block_size=10), np.clip(raw, 0, 255).astype(np.uint8))


@pytest.mark.parametrize("kwargs,match", [
    ({"block_size": 2}, "block_size must be an int in"),
    ({"block_size": 1000}, "block_size must be an int in"),
    ({"block_size": 16.0}, "block_size must be an int in"),
    ({"index": N}, "index must be an int in"),
    ({"index": -1}, "index must be an int in"),
    ({"view": "map"}, "view must be one of"),
])
def test_render_bad_arguments(kwargs, match):
    with make("Craftax-Symbolic-v1") as env:
        env.reset(seed=0)
        with pytest.raises(ValueError, match=match):
            env.render(**kwargs)


def test_render_of_a_closed_env_raises():
    env = make("Craftax-Symbolic-v1")
    env.reset(seed=0)
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.render()


# -- the renderer's two paths ----------------------------------------------------------------------
def _busy_states(game: str, seed: int) -> np.ndarray:
    """Raw states of `game` in situations the picture shows: the injected-state perturbations
    (mobs, projectiles, items, light maps, inventories) and the light level anywhere between
    night and day, some asleep, then a few random steps."""
    from pycraftax.porting.inject import mutate, perturb

    rng = np.random.default_rng(seed)
    env_id = "Craftax-Pixels-v1" if game == "craftax" else "Craftax-Classic-Pixels-v1"
    n = 16
    with pycraftax.make(env_id, num_envs=n, backend="c", day_length=20) as env:
        env.reset(seed=seed)
        state = env.get_state()
        state = mutate(state, rng) if game == "craftax" else perturb(state, rng)
        state["light_level"][:] = rng.choice(np.float32([0.0, 0.2, 0.49, 0.5, 0.8, 1.0]), size=n)
        state["is_sleeping"][:] = rng.random(n) < 0.3
        env.set_state(state)
        raw = [np.concatenate([env._state_bytes(i) for i in range(n)])]
        for _ in range(3):
            env.step(rng.integers(0, env.num_actions, size=n).astype(np.int32))
            raw.append(np.concatenate([env._state_bytes(i) for i in range(n)]))
    return np.concatenate(raw)


@pytest.mark.parametrize("game", ["craftax", "craftax_classic"])
def test_rows_and_per_pixel_paths_are_equal(game):
    """The C API draws a row at a time (vectorised, CPU); the lanes renderer, a pixel at a time,
    is the GPU kernels' path and the human sizes' (above 16): both must give the same bits, at
    the agent block, other rows-path sizes and both scalings."""
    from pycraftax._test_hooks import lib as test_lib, ptr as test_ptr

    states = _busy_states(game, seed=11 if game == "craftax" else 12)
    code = 0 if game == "craftax" else 1
    for block in (pixels.AGENT_BLOCK[game], 6, 13, 16):
        table = pixels.atlas(game, block)
        for scaled in (True, False):
            rows = pixels.render_states(game, states, block, scaled=scaled)
            per_pixel = np.empty_like(rows)
            assert test_lib.craftax_test_pixels_render_per_pixel(
                code, test_ptr(states, "void *"), states.shape[0], test_ptr(table, "float *"), block, int(scaled),
                test_ptr(per_pixel, "float *")) == 0
            np.testing.assert_array_equal(rows.view(np.uint32), per_pixel.view(np.uint32),
                                          err_msg=f"{game} block {block} scaled={scaled}")
    assert np.unique(rows.reshape(rows.shape[0], -1), axis=0).shape[0] > states.shape[0] // 2  # varied pictures


@pytest.mark.parametrize("env_id", list(PIXEL_IDS))
def test_step_obs_reuse_never_changes_an_obs_the_caller_holds(env_id):
    """A pixel env writes a step's obs into the last step's array when nothing else holds it;
    an obs a caller keeps (the array, a view of it, a memoryview) stays as it was, and the obs
    are those of an env whose every array is kept."""
    actions = np.random.default_rng(3).integers(0, 17, size=(9, N)).astype(np.int32)
    with make(env_id) as keeping, make(env_id) as dropping:
        keeping.reset(seed=5)
        dropping.reset(seed=5)
        held, expected, dropped_ids = [], [], set()
        for t in range(9):
            obs = keeping.step(actions[t])[0]
            held.append((obs, obs[1:], memoryview(obs))[t % 3])
            expected.append((obs, obs[1:], obs)[t % 3].copy())
            again = dropping.step(actions[t])[0]
            np.testing.assert_array_equal(again, obs)
            dropped_ids.add(id(again))
            del obs, again
        for t, (h, e) in enumerate(zip(held, expected)):
            np.testing.assert_array_equal(np.asarray(h), e, err_msg=f"held obs of step {t} changed")
        assert len(dropped_ids) == 1  # the dropped env wrote every step into one array
