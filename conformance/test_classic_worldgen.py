"""Craftax-Classic world generation parity: craftax_classic_reset_with_keys against
upstream's jit(vmap(reset_env)) of craftax 1.6.1, on every EnvState leaf and the symbolic
observation (integers, bools and keys exactly, floats bitwise).

Keys: CLASSIC_WORLD_KEYS of the deterministic stream (dev 16, ci 48, thorough 2000;
PYCRAFTAX_WORLD_KEYS overrides), Hypothesis batches of raw keys, and non-default EnvParams
(always_diamond off, day length, mob healths, fractal_noise_angles given).

    HYPOTHESIS_PROFILE=ci .venv/bin/python -m pytest conformance/test_classic_worldgen.py
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
from hypothesis import given, settings

from conftest import (
    FEW_EXAMPLES,
    PROFILE,
    compare_obs,
    compare_states,
    key_stream,
    raw_key_batches,
    record_summary,
    require_jax,
)

require_jax()

from conformance import classic_c as cc  # noqa: E402
from conformance import classic_upstream as cu  # noqa: E402
from pycraftax import classic_state  # noqa: E402

pytestmark = pytest.mark.jax

CLASSIC_WORLD_KEYS = int(os.environ.get("PYCRAFTAX_WORLD_KEYS", {"dev": 16, "ci": 48, "thorough": 2000}[PROFILE]))
BATCH = 100
# Gradient grids of generate_world's four fields (res + 1 per axis).
NOISE_ANGLE_SHAPES = ((5, 5), (5, 5), (9, 33), (17, 17))


def check_batch(keys: np.ndarray, upstream_params=None, c_params=None, context: str = "") -> None:
    expected_obs, expected, _ = cu.upstream_reset(keys, upstream_params)
    states, obs = cc.c_reset(keys, c_params)
    compare_states(expected, classic_state.get_state(states), keys, context)
    compare_obs(expected_obs, obs, keys, context)


def test_world_keys_default_params():
    keys = key_stream(CLASSIC_WORLD_KEYS)
    start = time.perf_counter()
    for b in range(0, len(keys), BATCH):
        check_batch(keys[b : b + BATCH], context=f"default params, keys {b}.. of the stream")
    record_summary(
        f"test_classic_worldgen: {len(keys)} keys: Classic reset == upstream reset_env on every leaf and the obs "
        f"({time.perf_counter() - start:.1f}s)"
    )


@settings(max_examples=FEW_EXAMPLES)
@given(keys=raw_key_batches(1, 16))
def test_raw_keys(keys):
    check_batch(keys, context="raw keys")


@pytest.mark.parametrize(
    "overrides",
    [
        {"always_diamond": False},
        {"day_length": 17, "cow_health": 7, "zombie_health": 2},
        {"max_timesteps": 5, "mob_despawn_distance": 3},
    ],
    ids=["no-diamond", "day-length-and-health", "short-episodes"],
)
def test_non_default_params(overrides):
    keys = key_stream(24, seed=7)
    check_batch(keys, cu.DEFAULT_PARAMS.replace(**overrides), cc.c_params(**overrides), context=str(overrides))


def test_fractal_noise_angles():
    """Override angles for all four fields (one more upstream compilation)."""
    rng = np.random.default_rng(3)
    angles = tuple(rng.random(shape, dtype=np.float32) for shape in NOISE_ANGLE_SHAPES)
    keys = key_stream(16, seed=11)
    import jax.numpy as jnp

    upstream_params = cu.DEFAULT_PARAMS.replace(fractal_noise_angles=tuple(jnp.asarray(a) for a in angles))
    check_batch(keys, upstream_params, cc.c_params(fractal_noise_angles=angles), context="fractal_noise_angles")


def test_worlds_differ_by_key():
    """A guard on the comparison itself: different keys give different maps."""
    states, _ = cc.c_reset(key_stream(4))
    maps = classic_state.get_state(states)["map"]
    assert len({m.tobytes() for m in maps}) == 4
