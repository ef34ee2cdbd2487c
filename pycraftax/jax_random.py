"""JAX-compatible PRNG keys as raw uint32 pairs, in numpy (no JAX, no C extension).

`prng_key(seed)` equals `jax.random.key_data(jax.random.PRNGKey(seed))` for the
threefry2x32 default; `split` equals `jax.random.split` and `uniform` equals
`jax.random.uniform(key, (num,))` and `fold_in` equals `jax.random.fold_in` under `jax_threefry_partitionable=True` (JAX's default
since 0.5), where both draw threefry2x32 of the key over the counters 0..num-1.
Pure numpy so that every backend (the CUDA one loads without the C extension) shares it.
"""

from __future__ import annotations

import numpy as np

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KEY_PARITY = np.uint32(0x1BD11BDA)


def prng_key(seed: int) -> np.ndarray:
    """jax.random.PRNGKey(seed) for 0 <= seed < 2**32 (with jax_enable_x64 off)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    if not 0 <= int(seed) < 2**32:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    return np.array([0, int(seed)], dtype=np.uint32)


def _check_key(key) -> np.ndarray:
    key = np.ascontiguousarray(key, dtype=np.uint32)
    if key.shape != (2,):
        raise ValueError(f"key must have shape (2,), got {key.shape}")
    return key


def _check_num(num) -> int:
    if isinstance(num, (bool, np.bool_)) or not isinstance(num, (int, np.integer)):
        raise TypeError(f"num must be an int, got {type(num).__name__}")
    if num < 1:
        raise ValueError(f"num must be >= 1, got {num}")
    return int(num)


def threefry2x32(key: np.ndarray, x0: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The threefry2x32 block cipher (20 rounds) of the counter pairs (x0[i], x1[i])."""
    ks = (key[0], key[1], key[0] ^ key[1] ^ _KEY_PARITY)
    x0 = x0.astype(np.uint32) + ks[0]
    x1 = x1.astype(np.uint32) + ks[1]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 += x1
            x1 = (x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))
            x1 ^= x0
        x0 += ks[(i + 1) % 3]
        x1 += ks[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


def _counter_blocks(key: np.ndarray, num: int) -> tuple[np.ndarray, np.ndarray]:
    counters = np.arange(num, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return threefry2x32(key, (counters >> np.uint64(32)).astype(np.uint32), counters.astype(np.uint32))


def split(key: np.ndarray, num: int = 2) -> np.ndarray:
    """jax.random.split(key, num) -> uint32 [num, 2]."""
    bits0, bits1 = _counter_blocks(_check_key(key), _check_num(num))
    return np.stack([bits0, bits1], axis=-1)


def fold_in(key: np.ndarray, data: int) -> np.ndarray:
    """jax.random.fold_in(key, data) -> uint32 [2]: threefry2x32 of the counter pair (0, data)."""
    if isinstance(data, (bool, np.bool_)) or not isinstance(data, (int, np.integer)):
        raise TypeError(f"data must be an int, got {type(data).__name__}")
    if not 0 <= int(data) < 2**32:
        raise ValueError(f"data must be in [0, 2**32), got {data}")
    with np.errstate(over="ignore"):
        y0, y1 = threefry2x32(_check_key(key), np.zeros(1, np.uint32), np.array([data], np.uint32))
    return np.array([y0[0], y1[0]], dtype=np.uint32)


def uniform(key: np.ndarray, num: int) -> np.ndarray:
    """jax.random.uniform(key, (num,)) -> float32 [num] in [0, 1)."""
    bits0, bits1 = _counter_blocks(_check_key(key), _check_num(num))
    mantissa = ((bits0 ^ bits1) >> np.uint32(9)) | np.float32(1.0).view(np.uint32)
    return mantissa.view(np.float32) - np.float32(1.0)


def fold_in_rows(keys, data) -> np.ndarray:
    """jax.vmap(jax.random.fold_in)(keys, data): keys uint32 [N, 2], data non-negative ints [N]
    below 2**32 -> uint32 [N, 2], a key of its own per row. Under the partitionable threefry,
    fold_in(key, d) is split(key, n)[d] for any n > d: threefry2x32 of the counter (0, d)."""
    keys = np.ascontiguousarray(keys, dtype=np.uint32)
    if keys.ndim != 2 or keys.shape[1] != 2:
        raise ValueError(f"keys must have shape (N, 2), got {keys.shape}")
    data = np.asarray(data)
    if data.shape != (keys.shape[0],) or not np.issubdtype(data.dtype, np.integer):
        raise ValueError(f"data must be integers of shape ({keys.shape[0]},), got {data.dtype} {data.shape}")
    if data.size and (data.min() < 0 or data.max() >= 2**32):
        raise ValueError("data must be in [0, 2**32)")
    with np.errstate(over="ignore"):
        x0, x1 = threefry2x32(keys.T, np.zeros(len(keys), np.uint32), data.astype(np.uint32))
    return np.stack([x0, x1], axis=-1)
