"""Trajectory hash anchors: a pinned fingerprint of (obs, reward, done) over a rollout.

The protocol (also implemented by `reference_c/tools/craftax_tool.c hash-steps`, and to be
reproduced bit for bit by every backend):
  * env = make("Craftax-Symbolic-v1", num_envs=N, seed=S); env.reset(seed=S)
  * step t uses env.step's own key stream (key, sub = split(key); keys = split(sub, N),
    key starting at PRNGKey(S)) and actions a[t, i] = floor(43 * u[t*N + i]) with
    u = jax.random.uniform(ACTION_KEY, (steps * N,)), ACTION_KEY = (0x41435449, S)
    (pycraftax.jax_random.uniform, bit for bit)
  * hash = FNV-1a 64 chained over each step's obs (float32 [N, 8268]), reward (float32 [N])
    and done (uint8 [N]) bytes, starting from the FNV offset basis.
"""

from __future__ import annotations

import numpy as np

from pycraftax import jax_random
from pycraftax._native import ffi, lib

FNV_OFFSET = 0xCBF29CE484222325
ACTION_KEY_WORD = 0x41435449

# (num_envs, steps, seed) -> hash of the C reference, recorded in CONFORMANCE.md.
ANCHORS = {
    (7, 300, 1): "6d8bbd391ce4f8c8",
    (64, 1000, 0): "5a2f47dd164cff01",
}


def action_stream(num_envs: int, steps: int, seed: int) -> np.ndarray:
    u = jax_random.uniform(np.array([ACTION_KEY_WORD, seed], dtype=np.uint32), num_envs * steps)
    return (u * np.float32(43.0)).astype(np.int32).reshape(steps, num_envs)


def fnv1a(h: int, array: np.ndarray) -> int:
    array = np.ascontiguousarray(array)
    return int(lib.craftax_fnv1a(h, ffi.from_buffer(array), array.nbytes))


def trajectory_hash(num_envs: int, steps: int, seed: int, backend: str = "c", obs: str = "float") -> str:
    """obs="compact" (backend="cuda"): the same hash over the compact records expanded in numpy."""
    import pycraftax
    from pycraftax import obs_compact

    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=num_envs, backend=backend, seed=seed, obs=obs)
    env.reset(seed=seed)
    actions = action_stream(num_envs, steps, seed)
    h = FNV_OFFSET
    for t in range(steps):
        o, reward, terminated, truncated, _ = env.step(actions[t])
        o = obs_compact.expand(np.asarray(o)) if obs == "compact" else np.asarray(o, dtype=np.float32)
        h = fnv1a(h, o)
        h = fnv1a(h, np.asarray(reward, dtype=np.float32))
        h = fnv1a(h, (np.asarray(terminated) | np.asarray(truncated)).astype(np.uint8))
    return f"{h:016x}"
