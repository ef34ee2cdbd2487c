"""Thin numpy wrappers of the Craftax-Classic C API (craftax_api_classic.h) over the state
buffers of pycraftax/classic_state.py, for the Classic tests (no jax needed)."""

from __future__ import annotations

import numpy as np

from pycraftax import classic_state
from pycraftax._native import ffi, lib


def c_params(**overrides):
    """A CraftaxClassicParams with upstream's defaults and the given fields."""
    p = ffi.new("CraftaxClassicParams *")
    lib.craftax_classic_default_params(p)
    for name, value in overrides.items():
        if name == "fractal_noise_angles":
            fields = ("angles_water", "angles_mountain", "angles_path", "angles_tree")
            for i, (field, angles) in enumerate(zip(fields, value)):
                if angles is not None:
                    p.has_angles[i] = 1
                    flat = np.ascontiguousarray(angles, dtype=np.float32).ravel()
                    ffi.memmove(getattr(p, field), ffi.from_buffer(flat), flat.nbytes)
        else:
            setattr(p, name, value)
    return p


def _ptr(ctype: str, a: np.ndarray):
    return ffi.cast(ctype, ffi.from_buffer(a))


def c_reset(keys: np.ndarray, params=None):
    """craftax_classic_reset_with_keys: (states buffer [N, STATE_SIZE], obs [N, 1345])."""
    params = c_params() if params is None else params
    keys = np.ascontiguousarray(keys, dtype=np.uint32)
    n = keys.shape[0]
    states = np.zeros((n, classic_state.STATE_SIZE), dtype=np.uint8)
    obs = np.zeros((n, classic_state.OBS_SIZE), dtype=np.float32)
    rc = lib.craftax_classic_reset_with_keys(
        _ptr("void *", states), _ptr("uint32_t *", keys), n, params, _ptr("float *", obs)
    )
    assert rc == 0, rc
    return states, obs


def c_step(states: np.ndarray, keys: np.ndarray, actions: np.ndarray, params=None, auto_reset: bool = False):
    """craftax_classic_step_with_keys (or _step_autoreset) in place: (obs, reward, done)."""
    params = c_params() if params is None else params
    keys = np.ascontiguousarray(keys, dtype=np.uint32)
    actions = np.ascontiguousarray(actions, dtype=np.int32)
    n = states.shape[0]
    obs = np.zeros((n, classic_state.OBS_SIZE), dtype=np.float32)
    reward = np.zeros(n, dtype=np.float32)
    done = np.zeros(n, dtype=np.uint8)
    args = (_ptr("void *", states), _ptr("int32_t *", actions), _ptr("uint32_t *", keys), n, params)
    outs = (_ptr("float *", reward), _ptr("uint8_t *", done))
    if auto_reset:
        rc = lib.craftax_classic_step_autoreset(*args, _ptr("float *", obs), ffi.NULL, *outs, ffi.NULL, ffi.NULL,
                                                ffi.NULL)
    else:
        rc = lib.craftax_classic_step_with_keys(*args, _ptr("float *", obs), *outs)
    assert rc == 0, rc
    return obs, reward, done.astype(bool)


def c_step_rc(states: np.ndarray, actions: np.ndarray, params=None) -> int:
    """craftax_classic_step_with_keys with zero keys and no outputs: its return code."""
    params = c_params() if params is None else params
    actions = np.ascontiguousarray(actions, dtype=np.int32)
    keys = np.zeros((states.shape[0], 2), dtype=np.uint32)
    return int(
        lib.craftax_classic_step_with_keys(
            _ptr("void *", states),
            _ptr("int32_t *", actions),
            _ptr("uint32_t *", keys),
            states.shape[0],
            params,
            ffi.NULL,
            ffi.NULL,
            ffi.NULL,
        )
    )


def c_observe(states: np.ndarray) -> np.ndarray:
    obs = np.zeros((states.shape[0], classic_state.OBS_SIZE), dtype=np.float32)
    assert lib.craftax_classic_observe(_ptr("void *", states), states.shape[0], _ptr("float *", obs)) == 0
    return obs


def c_step_optimistic(states: np.ndarray, key: np.ndarray, actions: np.ndarray, reset_ratio: int, params=None):
    """craftax_classic_step_optimistic in place: (obs, reward, done, reset_worlds)."""
    params = c_params() if params is None else params
    key = np.ascontiguousarray(key, dtype=np.uint32)
    actions = np.ascontiguousarray(actions, dtype=np.int32)
    n = states.shape[0]
    obs = np.zeros((n, classic_state.OBS_SIZE), dtype=np.float32)
    reward = np.zeros(n, dtype=np.float32)
    done = np.zeros(n, dtype=np.uint8)
    worlds = np.zeros(n, dtype=np.int32)
    rc = lib.craftax_classic_step_optimistic(
        _ptr("void *", states),
        _ptr("int32_t *", actions),
        _ptr("uint32_t *", key),
        n,
        reset_ratio,
        params,
        _ptr("float *", obs),
        ffi.NULL,
        _ptr("float *", reward),
        _ptr("uint8_t *", done),
        ffi.NULL,
        ffi.NULL,
        ffi.NULL,
        _ptr("int32_t *", worlds),
    )
    assert rc == 0, rc
    return obs, reward, done.astype(bool), worlds
