"""JAX-compatible PRNG keys as raw uint32 pairs (no JAX needed).

`prng_key(seed)` equals `jax.random.key_data(jax.random.PRNGKey(seed))` for the
threefry2x32 default, and `split` equals `jax.random.split` under
`jax_threefry_partitionable=True` (JAX's default since 0.5); both are computed by the
C reference's threefry implementation.
"""

from __future__ import annotations

import numpy as np

from pycraftax._native import ffi, lib


def prng_key(seed: int) -> np.ndarray:
    """jax.random.PRNGKey(seed) for 0 <= seed < 2**32 (with jax_enable_x64 off)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    if not 0 <= int(seed) < 2**32:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    return np.array([0, int(seed)], dtype=np.uint32)


def split(key: np.ndarray, num: int = 2) -> np.ndarray:
    """jax.random.split(key, num) -> uint32 [num, 2]."""
    key = np.ascontiguousarray(key, dtype=np.uint32)
    if key.shape != (2,):
        raise ValueError(f"key must have shape (2,), got {key.shape}")
    if num < 1:
        raise ValueError(f"num must be >= 1, got {num}")
    out = np.empty((num, 2), dtype=np.uint32)
    lib.craftax_key_split(ffi.cast("uint32_t *", ffi.from_buffer(key)), num, ffi.cast("uint32_t *", ffi.from_buffer(out)))
    return out
