"""Lazy levels on the GPU: a CUDA reset generates level 0 and leaves levels 1-8 pending
(CraftaxState.floors_pending, env.pending_levels()); a step first generates the level each
descent reaches, and host reads complete the rest (craftax_cuda_complete_floors). Checked
against the C reference, which generates every level at reset:

  * a reset leaves exactly levels 1-8 pending, get_state completes them, and
    PYCRAFTAX_CUDA_EAGER_FLOORS=1 leaves none;
  * god-mode play (DESCEND works anywhere) with many descents, auto-reset and optimistic
    resets, both step layouts: obs, reward and flags every step with no state read in between
    (a read would complete the levels and hide the descent path), every leaf at the end;
  * a descent down the real ladder (no god mode) from a lazily reset state (the player moved
    onto the ladder in the raw bytes, levels still pending).

Runs where a GPU is present."""

from __future__ import annotations

import numpy as np
import pytest

import pycraftax
from pycraftax import _state

from conftest import compare_obs, compare_states  # noqa: E402

if not pycraftax.cuda_available():
    pytest.skip("no usable CUDA backend (GPU, driver or libcraftax_cuda.so)", allow_module_level=True)

from conformance.test_cuda import host, library_setting, step_layout  # noqa: E402

pytestmark = pytest.mark.cuda
ENV_ID = "Craftax-Symbolic-v1"
DESCEND = 18
ALL_BUT_LEVEL_0 = 0x1FE


def eager_floors(on: bool):
    return library_setting("PYCRAFTAX_CUDA_EAGER_FLOORS", "1" if on else "0")


def raw_states(env) -> np.ndarray:
    """The device states' bytes as they are (no floors completed)."""
    lib = env._lib
    out = np.empty((env.num_envs, _state.STATE_SIZE), dtype=np.uint8)
    lib.check(lib.lib.craftax_cuda_memcpy_dtoh(lib.ffi.from_buffer(out), env._p("states"), out.nbytes), "raw copy")
    return out


def write_raw_states(env, raw: np.ndarray) -> None:
    lib = env._lib
    lib.check(lib.lib.craftax_cuda_memcpy_htod(env._p("states"), lib.ffi.from_buffer(raw), raw.nbytes), "raw copy")


def test_reset_leaves_floors_pending_and_get_state_completes_them():
    c = pycraftax.make(ENV_ID, num_envs=37, backend="c", seed=5)
    g = pycraftax.make(ENV_ID, num_envs=37, backend="cuda", seed=5)
    c.reset(seed=5)
    with eager_floors(False):
        g.reset(seed=5)
    assert np.all(g.pending_levels() == ALL_BUT_LEVEL_0)
    compare_states(c.get_state(), g.get_state(), context="lazy reset, completed")
    assert np.all(g.pending_levels() == 0)
    with eager_floors(True):
        g.reset(seed=5)
    assert np.all(g.pending_levels() == 0)
    compare_states(c.get_state(), g.get_state(), context="eager reset")
    g.close()


def descent_actions(rng, num_envs: int) -> np.ndarray:
    """Random actions, a third of them DESCEND."""
    actions = rng.integers(0, 43, size=num_envs).astype(np.int32)
    return np.where(rng.random(num_envs) < 1 / 3, np.int32(DESCEND), actions).astype(np.int32)


def play_without_reads(c, g, rng, steps: int, num_envs: int) -> None:
    """Step both envs, comparing what each step returns (obs show the floor a descent reached)
    but reading no state from the GPU until the end."""
    for t in range(steps):
        actions = descent_actions(rng, num_envs)
        c_out, g_out = c.step(actions), g.step(actions)
        compare_obs(c_out[0], host(g_out[0]), context=f"step {t}")
        for name, a, b in zip(("reward", "terminated", "truncated"), c_out[1:4], g_out[1:4]):
            compare_states({name: np.asarray(a)}, {name: host(b)}, context=f"step {t}")


@pytest.mark.parametrize("resets", ["auto", "optimistic"])
@pytest.mark.parametrize("layout", ["thread", "warp"])
def test_god_mode_descents_match_c(resets, layout):
    num_envs, steps = 64, 30
    kw = dict(num_envs=num_envs, seed=11, god_mode=True, max_timesteps=17)
    if resets == "optimistic":
        kw.update(resets="optimistic", reset_ratio=4)
    c = pycraftax.make(ENV_ID, backend="c", **kw)
    g = pycraftax.make(ENV_ID, backend="cuda", **kw)
    rng = np.random.default_rng(7)
    with eager_floors(False), step_layout(layout):
        c.reset(seed=11)
        g.reset(seed=11)
        play_without_reads(c, g, rng, steps, num_envs)
        deepest = int(c.get_state()["player_level"].max())
        assert deepest >= 4, f"the actions reached floor {deepest} only: the test needs deeper descents"
        assert np.any(g.pending_levels() != 0), "every level was generated: the lazy path did not run"
        compare_states(c.get_state(), g.get_state(), context="end")
    g.close()


def test_ladder_descent_from_a_lazy_reset():
    """No god mode: the player stands on level 0's down ladder (moved there in the raw bytes,
    levels still pending) and descends; the CUDA step must generate level 1 first."""
    num_envs = 40
    c = pycraftax.make(ENV_ID, num_envs=num_envs, backend="c", seed=21)
    g = pycraftax.make(ENV_ID, num_envs=num_envs, backend="cuda", seed=21)
    c.reset(seed=21)
    with eager_floors(False):
        g.reset(seed=21)
        raw = raw_states(g)
        assert np.all(g.pending_levels() == ALL_BUT_LEVEL_0)
        state = c.get_state()
        ladder = state["down_ladders"][:, 0, :].astype(np.int32)
        state["player_position"] = ladder
        c.set_state(state)
        position = _state.LEAF_BY_NAME["player_position"]
        position.view(raw)[:] = ladder
        write_raw_states(g, raw)
        actions = np.full(num_envs, DESCEND, dtype=np.int32)
        c_out, g_out = c.step(actions), g.step(actions)
        compare_obs(c_out[0], host(g_out[0]), context="descent")
        assert np.all(c.get_state()["player_level"] == 1), "the C envs did not descend"
        assert np.all(g.pending_levels() == ALL_BUT_LEVEL_0 & ~0x2), "level 1 alone should have been generated"
        compare_states(c.get_state(), g.get_state(), context="after the descent")
    g.close()
