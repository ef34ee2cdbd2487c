"""World generation parity: env.reset_with_keys against upstream reset_env, every leaf.

For the profile's number of keys (conftest.WORLD_KEYS: ci >= 200, thorough >= 2000;
PYCRAFTAX_WORLD_KEYS overrides), in batches of BATCH, the C reset equals
jit(vmap(reset_env)) of craftax 1.6.1 on every EnvState leaf of all nine floors and on
the symbolic observation: integers, bools and keys exactly, floats bitwise. Also for
non-default EnvParams (always_diamond, god_mode, day_length, fractal_noise_angles).

    HYPOTHESIS_PROFILE=ci /work/venv/bin/python -m pytest conformance/test_worldgen.py
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import Phase, example, given, settings

from conftest import (
    FEW_EXAMPLES,
    FLOOR_NAMES,
    WORLD_KEYS,
    compare_obs,
    compare_states,
    key_stream,
    raw_key_batches,
    record_summary,
    require_jax,
)

upstream = require_jax()

import jax  # noqa: E402

import pycraftax  # noqa: E402
from pycraftax.params import NOISE_ANGLE_SHAPES  # noqa: E402

pytestmark = pytest.mark.jax

BATCH = 100
# One jitted function for every call: params are a traced argument, so the default and the
# scalar-overridden params share one compilation; only a new pytree structure (override
# angles given) compiles again.
_RESET = jax.jit(jax.vmap(upstream.ENV.reset_env, in_axes=(0, None)))


def upstream_reset(keys: np.ndarray, params) -> tuple[np.ndarray, dict]:
    n = keys.shape[0]
    padded = np.concatenate([keys, np.repeat(keys[-1:], BATCH - n, axis=0)]) if n < BATCH else keys
    obs, state = _RESET(padded, params)
    return np.asarray(obs)[:n], {k: v[:n] for k, v in upstream.flatten_state(state).items()}


def c_reset(keys: np.ndarray, **params) -> tuple[np.ndarray, dict]:
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=keys.shape[0], backend="c", **params)
    obs, _ = env.reset_with_keys(keys)
    return obs, env.get_state()


def check_batch(keys: np.ndarray, upstream_params=None, context: str = "", **params) -> None:
    upstream_params = upstream.DEFAULT_PARAMS if upstream_params is None else upstream_params
    expected_obs, expected = upstream_reset(keys, upstream_params)
    actual_obs, actual = c_reset(keys, **params)
    compare_states(expected, actual, keys, context)
    compare_obs(expected_obs, actual_obs, keys, context)


def test_world_keys_default_params():
    """The bulk check: WORLD_KEYS keys of a deterministic stream, default params."""
    keys = key_stream(WORLD_KEYS)
    start = time.perf_counter()
    for b in range(0, len(keys), BATCH):
        batch = keys[b : b + BATCH]
        check_batch(batch, context=f"default params, keys {b}..{b + len(batch) - 1} of the stream")
    record_summary(
        f"test_worldgen: {len(keys)} keys: reset_with_keys == upstream reset_env on every leaf of "
        f"{len(FLOOR_NAMES)} floors and the obs ({time.perf_counter() - start:.1f}s)"
    )


@settings(max_examples=FEW_EXAMPLES, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(keys=raw_key_batches(min_size=BATCH, max_size=BATCH))
@example(keys=np.array([[0, i] for i in range(BATCH)], dtype=np.uint32))
def test_hypothesis_keys(keys):
    check_batch(keys, context="Hypothesis keys")


def test_worlds_are_diverse():
    """Guard that the comparison sees varied worlds: different keys, different maps, and
    every floor carries its own blocks."""
    keys = key_stream(8, seed=7)
    _, state = c_reset(keys)
    maps = state["map"]
    assert len({maps[i].tobytes() for i in range(8)}) == 8
    for level in range(9):
        assert len(np.unique(maps[:, level])) >= 3, f"floor {level} ({FLOOR_NAMES[level]}) looks degenerate"


def test_compare_states_reports_key_floor_leaf_index():
    """compare_states names the key, the floor, the leaf and the first differing index."""
    keys = key_stream(4, seed=11)
    _, state = c_reset(keys)
    bad = {k: v.copy() for k, v in state.items()}
    bad["map"][2, 5, 10, 11] += 1
    bad["light_map"][1, 0, 3, 4] = np.nextafter(bad["light_map"][1, 0, 3, 4], np.float32(2))
    bad["player_health"][3] = -0.0 if state["player_health"][3] == 0 else state["player_health"][3] * 2
    with pytest.raises(AssertionError) as info:
        compare_states(state, bad, keys)
    msg = str(info.value)
    k2 = keys[2].tolist()
    assert "map floor 5 (troll mines)" in msg and f"key [{k2[0]}, {k2[1]}]" in msg and "(5, 10, 11)" in msg
    assert "light_map floor 0 (overworld)" in msg and "(0, 3, 4)" in msg
    assert "player_health" in msg
    del bad["map"]
    with pytest.raises(AssertionError, match="missing leaves"):
        compare_states(state, bad, keys)


# -- non-default params ---------------------------------------------------------------------
PARAM_KEYS = 100


@pytest.mark.parametrize(
    "params",
    [
        {"always_diamond": True},
        {"god_mode": True},
        {"day_length": 1},
        {"day_length": 7},
        {"day_length": 100000},
        {"always_diamond": True, "god_mode": True, "day_length": 50, "max_timesteps": 1000},
    ],
    ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()),
)
def test_scalar_params(params):
    keys = key_stream(PARAM_KEYS, seed=sum(map(ord, str(params))))
    up = upstream.DEFAULT_PARAMS.replace(**params)
    check_batch(keys, upstream_params=up, context=f"params {params}", **params)


def test_always_diamond_changes_the_world():
    """Guard: always_diamond=True puts a diamond on the overworld; the default may not."""
    keys = key_stream(50, seed=3)
    _, default = c_reset(keys)
    _, diamond = c_reset(keys, always_diamond=True)
    assert np.all((diamond["map"][:, 0] == 10).any(axis=(1, 2)))
    assert np.any(default["map"][:, 0] != diamond["map"][:, 0])


def _angles(seed, which):
    rng = np.random.default_rng(seed)
    out = []
    for i, shape in enumerate(NOISE_ANGLE_SHAPES):
        out.append(rng.random(shape, dtype=np.float32) if i in which else None)
    return tuple(out)


@pytest.mark.parametrize("which", [(0, 1, 2, 3), (1, 3)], ids=["all4", "mountain+tree"])
def test_fractal_noise_angles(which):
    """EnvParams.fractal_noise_angles overrides (every smooth floor uses the same grids)."""
    keys = key_stream(PARAM_KEYS, seed=99)
    angles = _angles(sum(which), which)
    up = upstream.DEFAULT_PARAMS.replace(fractal_noise_angles=tuple(None if a is None else jax.numpy.asarray(a) for a in angles))
    check_batch(keys, upstream_params=up, context=f"fractal_noise_angles {which}", fractal_noise_angles=angles)


# -- pinned regressions ---------------------------------------------------------------------
# Keys where the C world once differed from upstream, each by one tile at a noise threshold
# (or its lava glow), fixed by reproducing how each XLA kernel that reads a noise field
# contracts its multiply-adds (noise.h, worldgen.h, CONFORMANCE.md "Float recipes").
FIXED_KEYS = np.array(
    [
        [3555534479, 3626646536],  # overworld (27, 24): SAND; the water noise maximum rounds to 1.0000001
        [206, 3233811059],  # overworld (24, 28): PATH, and up_ladders[0]
        [1258649, 41732],  # overworld (20, 0): GRASS; fixed by the n1 lerp fusion
        [1842025847, 2486099511],  # overworld (10, 30): GRASS; fixed by the sand test's fused water
        [86103, 52026],  # troll mines (25, 41): STONE; fixed by the fused ramps
        [4064231828, 517961425],  # overworld (5, 4): SAND; fixed by the sea test's fused water
        [1253031255, 3784255215],  # overworld (28, 24): PATH; fixed by the fused ramps
        [93851977, 2473007084],  # overworld (28, 25): WATER; fixed by proximity * 0.2f (not / 5)
        [4294967295, 3276],  # gnomish mines light_map around (39, 29): the lava glow kernel's own lerps
    ],
    dtype=np.uint32,
)


def test_fixed_regression_keys():
    check_batch(FIXED_KEYS, context="fixed regression keys")
