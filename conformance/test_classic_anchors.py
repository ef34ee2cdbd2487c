"""Craftax-Classic trajectory hash anchors: pinned fingerprints of (obs, reward, done) over
auto-reset rollouts of the C reference, one of them recomputed from upstream's official
CraftaxClassicSymbolicEnv.step with the same keys and actions.

The protocol is the full game's (pycraftax/anchors.py) with Classic's 17 actions:
  * reset keys split(PRNGKey(S), N); step t: key, sub = split(key); keys = split(sub, N),
    key starting at PRNGKey(S); the official auto-reset step with those keys
  * actions a[t, i] = floor(17 * u[t*N + i]), u = jax.random.uniform(ACTION_KEY, (steps*N,)),
    ACTION_KEY = (0x41435449, S)
  * hash = FNV-1a 64 chained over each step's obs (float32 [N, 1345]), reward (float32 [N])
    and done (uint8 [N]) bytes, from the FNV offset basis.
A CUDA build of Classic must reproduce these hashes.
"""

from __future__ import annotations

import numpy as np
import pytest

from conformance import classic_c as cc
from pycraftax import anchors, classic_state, jax_random
from pycraftax._test_hooks import ffi, lib

# (num_envs, steps, seed) -> hash of the C reference.
CLASSIC_ANCHORS = {
    (7, 300, 1): "8766f0a5535331dc",
    (64, 1000, 0): "edf53e0d8879b427",
}


def classic_action_stream(num_envs: int, steps: int, seed: int) -> np.ndarray:
    key = np.array([anchors.ACTION_KEY_WORD, seed], dtype=np.uint32)
    u = np.empty(num_envs * steps, dtype=np.float32)
    lib.craftax_test_uniform(
        ffi.cast("uint32_t *", ffi.from_buffer(key)), u.size, ffi.cast("float *", ffi.from_buffer(u))
    )
    return (u * np.float32(classic_state.NUM_ACTIONS)).astype(np.int32).reshape(steps, num_envs)


def step_keys(seed: int, num_envs: int, steps: int):
    key = jax_random.prng_key(seed)
    for _ in range(steps):
        key, sub = jax_random.split(key, 2)
        yield jax_random.split(sub, num_envs)


def classic_trajectory_hash(num_envs: int, steps: int, seed: int) -> str:
    states, _ = cc.c_reset(jax_random.split(jax_random.prng_key(seed), num_envs))
    actions = classic_action_stream(num_envs, steps, seed)
    h = anchors.FNV_OFFSET
    for t, keys in enumerate(step_keys(seed, num_envs, steps)):
        obs, reward, done = cc.c_step(states, keys, actions[t], auto_reset=True)
        h = anchors.fnv1a(h, obs)
        h = anchors.fnv1a(h, reward)
        h = anchors.fnv1a(h, done.astype(np.uint8))
    return f"{h:016x}"


@pytest.mark.parametrize("case", sorted(CLASSIC_ANCHORS))
def test_pinned_classic_anchor(case):
    assert classic_trajectory_hash(*case) == CLASSIC_ANCHORS[case]


def test_hash_sees_every_step():
    assert classic_trajectory_hash(7, 20, 1) != classic_trajectory_hash(7, 20, 2)


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
    assert f"{h:016x}" == CLASSIC_ANCHORS[(num_envs, steps, seed)], "upstream's trajectory differs from the anchor"
