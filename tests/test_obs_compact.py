"""The compact observation record on the CPU: the C reference renders it from the same rules
as the float obs (craftax/obs.h), and pycraftax.obs_compact.expand turns it back into that
obs bit for bit, on played trajectories and on arbitrary accepted states (mobs anywhere,
dead slots erasing live ones, invisible cells)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pycraftax
from pycraftax import obs_compact
from test_robustness import NUM_ENVS as STATE_ENVS
from test_robustness import accepted_state

NUM_ENVS = 24


def assert_expands_to_obs(env, context: str) -> None:
    records = env.observe_compact()
    assert records.shape == (env.num_envs, obs_compact.COMPACT_SIZE) and records.dtype == np.uint8
    expanded, obs = obs_compact.expand(records), env.observe()
    bad = np.argwhere(expanded.view(np.uint32) != obs.view(np.uint32))
    assert len(bad) == 0, f"{context}: {len(bad)} values differ, first env {bad[0][0]} index {bad[0][1]}"


def test_played_trajectories_expand_exactly():
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=NUM_ENVS, backend="c", seed=11, max_timesteps=90)
    env.reset(seed=11)
    rng = np.random.default_rng(0)
    mobs_seen = 0
    for t in range(240):
        env.step(rng.integers(0, 43, NUM_ENVS).astype(np.int32))
        if t % 8 == 0:
            assert_expands_to_obs(env, f"step {t}")
            mobs_seen += int(env.observe()[:, :-51].reshape(NUM_ENVS, 99, 83)[:, :, 42:82].sum())
    assert mobs_seen > 0, "no mob was ever in view: the mob bits went untested"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_arbitrary_states_expand_exactly(seed):
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=STATE_ENVS, backend="c", seed=0)
    env.reset(seed=0)
    env.set_state(accepted_state(seed))
    assert_expands_to_obs(env, f"state seed {seed}")


def test_expand_rejects_bad_shape():
    with pytest.raises(ValueError, match="1008"):
        obs_compact.expand(np.zeros((2, 100), np.uint8))
