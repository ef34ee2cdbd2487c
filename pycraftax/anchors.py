"""Trajectory hash anchors: a pinned fingerprint of (obs, reward, done) over a rollout.

The protocol (also implemented by `reference_c/tools/craftax_tool.c hash-steps`, and to be
reproduced bit for bit by every backend), for either game:
  * env = make(env_id, num_envs=N, seed=S); env.reset(seed=S)
  * step t uses env.step's own key stream (key, sub = split(key); keys = split(sub, N),
    key starting at PRNGKey(S)) and actions a[t, i] = floor(A * u[t*N + i]) with A the game's
    action count (43; Classic 17) and u = jax.random.uniform(ACTION_KEY, (steps * N,)),
    ACTION_KEY = (0x41435449, S) (pycraftax.jax_random.uniform, bit for bit)
  * hash = FNV-1a 64 chained over each step's obs (float32 [N, obs size]), reward (float32 [N])
    and done (uint8 [N]) bytes, starting from the FNV offset basis.

RELEASED_ANCHORS are the released rules' (pycraftax.rules.RELEASED_RULES), recomputed from
upstream's own env.step by conformance/test_anchors.py and test_classic_anchors.py. Modified rules
pin their own in variant_anchors.json, keyed by rules fingerprint (`pycraftax conformance
--pin-anchors`, after the finder passed against the researcher's craftax), so that a variant
keeps regression tests of its own; `pinned()` returns the set for this build's rules.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pycraftax import jax_random
from pycraftax._native import ffi, lib
from pycraftax.params import CLASSIC_ENV_ID, CRAFTAX_ENV_ID

FNV_OFFSET = 0xCBF29CE484222325
ACTION_KEY_WORD = 0x41435449

# env id -> (num_envs, steps, seed) -> hash of the released rules (CONFORMANCE.md)
RELEASED_ANCHORS = {
    CRAFTAX_ENV_ID: {
        (7, 300, 1): "6d8bbd391ce4f8c8",
        (64, 1000, 0): "5a2f47dd164cff01",
    },
    CLASSIC_ENV_ID: {
        (7, 300, 1): "8766f0a5535331dc",
        (64, 1000, 0): "edf53e0d8879b427",
    },
}
ANCHORS = RELEASED_ANCHORS[CRAFTAX_ENV_ID]  # the full game's
VARIANT_FILE = Path(__file__).with_name("variant_anchors.json")
NUM_ACTIONS = {CRAFTAX_ENV_ID: 43, CLASSIC_ENV_ID: 17}


def pinned(env_id: str = CRAFTAX_ENV_ID, fingerprint: str | None = None) -> dict[tuple[int, int, int], str]:
    """The anchors of `env_id` for the rules with this fingerprint (default: this build's):
    RELEASED_ANCHORS for released rules, else the variant's own pins; LookupError saying how to
    pin them when there are none."""
    from pycraftax import rules

    fingerprint = rules.rules_fingerprint() if fingerprint is None else fingerprint
    if rules.released_name(fingerprint):
        return RELEASED_ANCHORS[env_id]
    variants = json.loads(VARIANT_FILE.read_text()) if VARIANT_FILE.exists() else {}
    if fingerprint not in variants:
        raise LookupError(f"{rules.describe(fingerprint)} have no pinned anchors: after `pycraftax conformance` "
                          "passes against your craftax, pin them with `pycraftax conformance --pin-anchors` "
                          f"(written to {VARIANT_FILE})")
    return {tuple(int(x) for x in case.split(",")): h for case, h in variants[fingerprint][env_id].items()}


def pin_variant(fingerprint: str, verified_against: str) -> Path:
    """Compute this build's anchors (both games, RELEASED_ANCHORS' cases) and store them in
    VARIANT_FILE under `fingerprint`, the build's modified rules."""
    from pycraftax import rules

    if fingerprint != rules.rules_fingerprint():
        raise ValueError(f"pin_variant: {fingerprint} is not this build's rules ({rules.rules_fingerprint()})")
    if not rules.is_modified(fingerprint):
        raise ValueError(f"pin_variant: {rules.describe(fingerprint)} have their anchors in RELEASED_ANCHORS")
    variants = json.loads(VARIANT_FILE.read_text()) if VARIANT_FILE.exists() else {}
    entry = {"verified_against": verified_against}
    for env_id, cases in RELEASED_ANCHORS.items():
        entry[env_id] = {",".join(map(str, case)): trajectory_hash(*case, env_id=env_id) for case in sorted(cases)}
    variants[fingerprint] = entry
    VARIANT_FILE.write_text(json.dumps(variants, indent=1, sort_keys=True) + "\n")
    return VARIANT_FILE


def action_stream(num_envs: int, steps: int, seed: int, num_actions: int = 43) -> np.ndarray:
    u = jax_random.uniform(np.array([ACTION_KEY_WORD, seed], dtype=np.uint32), num_envs * steps)
    return (u * np.float32(num_actions)).astype(np.int32).reshape(steps, num_envs)


def fnv1a(h: int, array: np.ndarray) -> int:
    array = np.ascontiguousarray(array)
    return int(lib.craftax_fnv1a(h, ffi.from_buffer(array), array.nbytes))


def trajectory_hash(num_envs: int, steps: int, seed: int, backend: str = "c", obs: str = "float",
                    env_id: str = CRAFTAX_ENV_ID) -> str:
    """obs="compact" (backend="cuda", the full game): the same hash over the compact records
    expanded in numpy."""
    import pycraftax
    from pycraftax import obs_compact

    env = pycraftax.make(env_id, num_envs=num_envs, backend=backend, seed=seed, obs=obs)
    env.reset(seed=seed)
    actions = action_stream(num_envs, steps, seed, NUM_ACTIONS[env_id])
    h = FNV_OFFSET
    for t in range(steps):
        o, reward, terminated, truncated, _ = env.step(actions[t])
        o = obs_compact.expand(np.asarray(o)) if obs == "compact" else np.asarray(o, dtype=np.float32)
        h = fnv1a(h, o)
        h = fnv1a(h, np.asarray(reward, dtype=np.float32))
        h = fnv1a(h, (np.asarray(terminated) | np.asarray(truncated)).astype(np.uint8))
    return f"{h:016x}"
