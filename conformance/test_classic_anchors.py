"""Craftax-Classic trajectory hash anchors: pinned fingerprints of (obs, reward, done) over
auto-reset rollouts of the C reference through the public env.step API (pycraftax/anchors.py's
protocol with Classic's 17 actions; the pinned values are anchors.pinned(CLASSIC_ENV_ID): the
released rules', or a variant's own), one of them recomputed from upstream's official
CraftaxClassicSymbolicEnv.step with the same keys and actions, and once more through the C API
directly (craftax_classic_step_autoreset), as a CUDA build must reproduce them too.
"""

from __future__ import annotations

import numpy as np
import pytest

from conformance import classic_c as cc
from pycraftax import anchors, jax_random
from pycraftax.params import CLASSIC_ENV_ID

CLASSIC_ANCHORS = anchors.RELEASED_ANCHORS[CLASSIC_ENV_ID]


def classic_action_stream(num_envs: int, steps: int, seed: int) -> np.ndarray:
    return anchors.action_stream(num_envs, steps, seed, anchors.NUM_ACTIONS[CLASSIC_ENV_ID])


def step_keys(seed: int, num_envs: int, steps: int):
    key = jax_random.prng_key(seed)
    for _ in range(steps):
        key, sub = jax_random.split(key, 2)
        yield jax_random.split(sub, num_envs)


@pytest.mark.parametrize("case", sorted(CLASSIC_ANCHORS))
def test_pinned_classic_anchor(case):
    assert anchors.trajectory_hash(*case, env_id=CLASSIC_ENV_ID) == anchors.pinned(CLASSIC_ENV_ID)[case]


def test_hash_sees_every_step():
    assert anchors.trajectory_hash(7, 20, 1, env_id=CLASSIC_ENV_ID) != anchors.trajectory_hash(
        7, 20, 2, env_id=CLASSIC_ENV_ID)


def test_c_api_gives_the_anchor():
    """The protocol by hand over the C API's auto-reset step: the same hash as through env.step."""
    num_envs, steps, seed = 7, 300, 1
    states, _ = cc.c_reset(jax_random.split(jax_random.prng_key(seed), num_envs))
    actions = classic_action_stream(num_envs, steps, seed)
    h = anchors.FNV_OFFSET
    for t, keys in enumerate(step_keys(seed, num_envs, steps)):
        obs, reward, done = cc.c_step(states, keys, actions[t], auto_reset=True)
        h = anchors.fnv1a(h, obs)
        h = anchors.fnv1a(h, reward)
        h = anchors.fnv1a(h, done.astype(np.uint8))
    assert f"{h:016x}" == anchors.pinned(CLASSIC_ENV_ID)[(num_envs, steps, seed)]


def test_classic_anchor_against_upstream():
    pytest.importorskip("jax", exc_type=ImportError)
    pytest.importorskip("craftax", exc_type=ImportError)
    from conftest import require_jax

    require_jax()
    import jax
    import jax.numpy as jnp

    from conformance import classic_upstream as cu

    num_envs, steps, seed = 7, 300, 1
    params = cu.DEFAULT_PARAMS
    step = jax.jit(jax.vmap(cu.AUTO_ENV.step, in_axes=(0, 0, 0, None)))
    _, _, state = cu.upstream_reset(jax_random.split(jax_random.prng_key(seed), num_envs))
    actions = classic_action_stream(num_envs, steps, seed)
    h = anchors.FNV_OFFSET
    for t, keys in enumerate(step_keys(seed, num_envs, steps)):
        obs, state, reward, done, _ = step(jnp.asarray(keys), state, jnp.asarray(actions[t]), params)
        h = anchors.fnv1a(h, np.asarray(obs, dtype=np.float32))
        h = anchors.fnv1a(h, np.asarray(reward, dtype=np.float32))
        h = anchors.fnv1a(h, np.asarray(done).astype(np.uint8))
    assert f"{h:016x}" == anchors.pinned(CLASSIC_ENV_ID)[(num_envs, steps, seed)], \
        "upstream's trajectory differs from the anchor"
