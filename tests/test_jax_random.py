"""pycraftax.jax_random (numpy threefry2x32) against the C reference's split and, where JAX is
installed, jax.random.split / uniform / fold_in themselves."""

from __future__ import annotations

import numpy as np
import pytest

from pycraftax import jax_random
from pycraftax._native import ffi, lib

SEEDS = [0, 1, 7, 123456, 2**32 - 1]
SIZES = [1, 2, 3, 64, 1000]


def c_split(key, num):
    out = np.empty((num, 2), np.uint32)
    key = np.ascontiguousarray(key, np.uint32)
    lib.craftax_key_split(ffi.cast("uint32_t *", ffi.from_buffer(key)), num, ffi.cast("uint32_t *", ffi.from_buffer(out)))
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_split_equals_the_c_reference(seed):
    for num in SIZES:
        np.testing.assert_array_equal(jax_random.split(jax_random.prng_key(seed), num), c_split(jax_random.prng_key(seed), num))
    key = np.array([0xDEADBEEF, 0x12345678], np.uint32)
    np.testing.assert_array_equal(jax_random.split(key, 5), c_split(key, 5))


@pytest.mark.parametrize("seed", SEEDS)
def test_split_and_uniform_equal_jax(seed):
    jax = pytest.importorskip("jax")
    for num in SIZES:
        expected = np.asarray(jax.random.key_data(jax.random.split(jax.random.PRNGKey(seed), num)))
        np.testing.assert_array_equal(jax_random.split(jax_random.prng_key(seed), num), expected)
        u = np.asarray(jax.random.uniform(jax.random.PRNGKey(seed), (num,)), np.float32)
        np.testing.assert_array_equal(jax_random.uniform(jax_random.prng_key(seed), num).view(np.uint32), u.view(np.uint32))


@pytest.mark.parametrize("num, exc", [(0, ValueError), (1.5, TypeError), (True, TypeError)])
def test_bad_num(num, exc):
    with pytest.raises(exc, match="num"):
        jax_random.split(jax_random.prng_key(0), num)
    with pytest.raises(exc, match="num"):
        jax_random.uniform(jax_random.prng_key(0), num)


def test_bad_key_shape():
    with pytest.raises(ValueError, match="key must have shape"):
        jax_random.split(np.zeros(3, np.uint32))


@pytest.mark.parametrize("seed", SEEDS)
def test_fold_in_equals_jax(seed):
    jax = pytest.importorskip("jax")
    for data in (0, 1, 2, 3, 1000, 2**32 - 1):
        expected = np.asarray(jax.random.key_data(jax.random.fold_in(jax.random.PRNGKey(seed), data)))
        np.testing.assert_array_equal(jax_random.fold_in(jax_random.prng_key(seed), data), expected)


@pytest.mark.parametrize("data, exc", [(-1, ValueError), (2**32, ValueError), (1.0, TypeError), (True, TypeError)])
def test_fold_in_bad_data(data, exc):
    with pytest.raises(exc, match="data"):
        jax_random.fold_in(jax_random.prng_key(0), data)


def test_fold_in_rows_equals_jax_and_split_rows():
    keys = np.stack([jax_random.prng_key(s) for s in SEEDS] + [np.array([0xDEADBEEF, 0x12345678], np.uint32)])
    data = np.array([0, 1, 2, 999, 2**32 - 1, 7])
    folded = jax_random.fold_in_rows(keys, data)
    for key, d, row in zip(keys, data, folded):
        if d < 2000:  # split(key, n)[d] for n > d
            np.testing.assert_array_equal(row, jax_random.split(key, int(d) + 1)[d])
    jax = pytest.importorskip("jax")
    expected = np.asarray(jax.vmap(jax.random.fold_in)(jax.numpy.asarray(keys), jax.numpy.asarray(data, jax.numpy.uint32)))
    np.testing.assert_array_equal(folded, expected)
    with pytest.raises(ValueError, match=r"data must be integers of shape \(6,\)"):
        jax_random.fold_in_rows(keys, data[:3])
