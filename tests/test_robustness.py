"""Robustness of set_state/step against arbitrary (not only realistic) input.

Hypothesis draws whole state dicts leaf by leaf: every value inside the domain that
set_state accepts (docs/STATE_DOMAIN.md) must step without a crash (the sanitize nox session runs this file under
AddressSanitizer + UBSan), and any value outside it must be rejected with an error naming
the leaf, leaving the env unchanged.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pycraftax
from pycraftax import _state

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "dev")
EXAMPLES = {"dev": 10, "ci": 40, "thorough": 400}.get(PROFILE, 10)
NUM_ENVS = 3
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def leaf_values(leaf: _state.Leaf, seed: int) -> np.ndarray:
    """Random values of one leaf inside its accepted domain, with the edges over-represented."""
    rng = np.random.default_rng(seed)
    shape = (NUM_ENVS,) + leaf.shape
    if leaf.dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if leaf.dtype == np.uint32:
        return rng.integers(0, 2**32, size=shape, dtype=np.uint64).astype(np.uint32)
    if leaf.dtype == np.float32:  # finite, inside the leaf's bounds (health, light level, mana recovery)
        lo, hi = np.float32(leaf.min_value), np.float32(leaf.max_value)
        choices = np.array([0.0, -0.0, 1.0, -1.0, 0.05, 9.0, -1e6, 1e6, 3.4e38, -3.4e38, 1e-45, lo, hi], dtype=np.float32)
        choices = choices[(choices >= lo) & (choices <= hi)]
        values = np.clip(rng.normal(0, 10, size=shape), lo, hi).astype(np.float32)
        edge = rng.random(size=shape) < 0.3
        values[edge] = rng.choice(choices, size=int(edge.sum()))
        return values
    lo, hi = leaf.min_value, leaf.max_value
    values = rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64)
    edge = rng.random(size=shape) < 0.3
    values[edge] = rng.choice(np.array([lo, hi, max(lo, min(hi, 0)), max(lo, min(hi, 1))]), size=int(edge.sum()))
    return values.astype(np.int32)


def accepted_state(seed: int) -> dict[str, np.ndarray]:
    """A whole state of leaf_values, with set_state's one rule across leaves kept: a masked
    melee, passive or ranged mob has health > 0 (the others keep their drawn health)."""
    state = {leaf.name: leaf_values(leaf, seed + i) for i, leaf in enumerate(_state.LEAVES)}
    for cls in _state.LIVING_MOB_CLASSES:
        state[cls + ".mask"] &= state[cls + ".health"] > 0
    return state


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), actions=st.lists(st.integers(0, 42), min_size=NUM_ENVS * 4,
                                                       max_size=NUM_ENVS * 4))
def test_any_accepted_state_steps(seed, actions):
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=NUM_ENVS, backend="c", seed=0)
    env.reset(seed=0)
    state = accepted_state(seed)
    env.set_state(state)
    actions = np.array(actions, dtype=np.int32).reshape(4, NUM_ENVS)
    for t in range(4):
        obs, reward, terminated, truncated, info = env.step(actions[t])
        assert obs.shape == (NUM_ENVS, 8268) and obs.dtype == np.float32
        assert reward.shape == (NUM_ENVS,)
    keys = pycraftax.jax_random.split(pycraftax.jax_random.prng_key(seed), NUM_ENVS)
    env.set_state(state)
    obs, reward, done, info = env.step_with_keys(actions[0], keys)
    assert done.dtype == np.bool_


@settings(max_examples=EXAMPLES, deadline=None)
@given(leaf_index=st.integers(0, len(_state.LEAVES) - 1), data=st.data())
def test_out_of_domain_values_are_rejected(leaf_index, data):
    leaf = _state.LEAVES[leaf_index]
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=NUM_ENVS, backend="c", seed=0)
    env.reset(seed=1)
    before = env.get_state()
    state = {k: v.copy() for k, v in before.items()}
    target = state[leaf.name]
    if target.dtype == np.bool_ or target.dtype == np.uint32:
        # No out-of-domain value exists for these dtypes: a wrong dtype must be rejected.
        state[leaf.name] = target.astype(np.int64)
        with pytest.raises(TypeError, match=leaf.name):
            env.set_state(state)
    elif target.dtype == np.float32:
        outside = [np.nan, np.inf, -np.inf]
        if leaf.min_value > -_state.FLOAT32_MAX:
            outside.append(np.nextafter(np.float32(leaf.min_value), np.float32(-np.inf)))
        if leaf.max_value < _state.FLOAT32_MAX:
            outside.append(np.nextafter(np.float32(leaf.max_value), np.float32(np.inf)))
        bad = data.draw(st.sampled_from(outside))
        index = data.draw(st.integers(0, target.size - 1))
        target.reshape(-1)[index] = bad
        with pytest.raises(ValueError, match=leaf.name):
            env.set_state(state)
    else:
        candidates = []
        if leaf.min_value > INT32_MIN:
            candidates.append(data.draw(st.integers(INT32_MIN, leaf.min_value - 1)))
        if leaf.max_value < INT32_MAX:
            candidates.append(data.draw(st.integers(leaf.max_value + 1, INT32_MAX)))
        if not candidates:
            return  # the whole int32 range is valid for this leaf (free-running counters)
        index = data.draw(st.integers(0, target.size - 1))
        target.reshape(-1)[index] = data.draw(st.sampled_from(candidates))
        with pytest.raises(ValueError, match=leaf.name):
            env.set_state(state)
    after = env.get_state()
    for name in before:
        np.testing.assert_array_equal(before[name], after[name], err_msg=f"{name} changed after a rejected set_state")
