"""sinf/cosf and the light level of the C reference (mathf.h) against glibc and XLA:CPU.

XLA:CPU's jitted jnp.cos/jnp.sin on float32 round like glibc's cosf/sinf;
mathf.h carries a port of that algorithm so C and CUDA agree. Checked:
  * every angle the noise can produce, float32(2*pi) * k * 2**-23 for k in [0, 2**23),
    against ctypes libm sinf/cosf and against jitted jnp.sin/jnp.cos;
  * Hypothesis floats in [-1e6, 1e6];
  * the light level for t = 0..100000 against upstream calculate_light_level, vmapped.

    HYPOTHESIS_PROFILE=ci /work/venv/bin/python -m pytest conformance/test_mathf.py
"""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from conftest import require_jax

upstream = require_jax()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from craftax.craftax.util.game_logic_utils import calculate_light_level  # noqa: E402

from pycraftax._test_hooks import ffi, lib  # noqa: E402  (needs PYCRAFTAX_TEST_HOOKS=1)

pytestmark = pytest.mark.jax

TWO_PI_F32 = np.float32(2 * np.pi)  # 6.28318548f: 2*jnp.pi times a float32 array
NOISE_ANGLES = TWO_PI_F32 * (np.arange(2**23, dtype=np.float32) * np.float32(2.0**-23))


def _libm():
    path = ctypes.util.find_library("m")
    if path is None:
        pytest.skip("no C math library found for ctypes")
    libm = ctypes.CDLL(path)
    for name in ("sinf", "cosf"):
        fn = getattr(libm, name)
        fn.restype = ctypes.c_float
        fn.argtypes = [ctypes.c_float]
    return libm


LIBM = _libm()


def c_sincos(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.ascontiguousarray(x, dtype=np.float32)
    s = np.empty_like(x)
    c = np.empty_like(x)
    lib.craftax_test_sincosf(
        ffi.cast("float *", ffi.from_buffer(x)),
        x.size,
        ffi.cast("float *", ffi.from_buffer(s)),
        ffi.cast("float *", ffi.from_buffer(c)),
    )
    return s, c


def libm_sincos(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = x.tolist()
    return (
        np.fromiter(map(LIBM.sinf, values), dtype=np.float32, count=len(values)),
        np.fromiter(map(LIBM.cosf, values), dtype=np.float32, count=len(values)),
    )


_JAX_SINCOS = jax.jit(lambda x: (jnp.sin(x), jnp.cos(x)))


def jax_sincos(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s, c = _JAX_SINCOS(x)
    return np.asarray(s), np.asarray(c)


def assert_same_bits(x, expected, actual, what):
    bad = np.flatnonzero(expected.view(np.uint32) != actual.view(np.uint32))
    if bad.size:
        i = bad[0]
        raise AssertionError(
            f"{what}: {bad.size} of {x.size} differ; first x={x[i]!r} (0x{x[i:i+1].view(np.uint32)[0]:08x}): "
            f"C {actual[i]!r}, reference {expected[i]!r}"
        )


@pytest.fixture(scope="module")
def noise_angles_c():
    return c_sincos(NOISE_ANGLES)


def test_noise_angles_exhaustive_vs_libm(noise_angles_c):
    s, c = noise_angles_c
    ls, lc = libm_sincos(NOISE_ANGLES)
    assert_same_bits(NOISE_ANGLES, ls, s, "sinf vs libm over all 2^23 noise angles")
    assert_same_bits(NOISE_ANGLES, lc, c, "cosf vs libm over all 2^23 noise angles")


def test_noise_angles_exhaustive_vs_jax(noise_angles_c):
    s, c = noise_angles_c
    js, jc = jax_sincos(NOISE_ANGLES)
    assert_same_bits(NOISE_ANGLES, js, s, "sinf vs jitted jnp.sin over all 2^23 noise angles")
    assert_same_bits(NOISE_ANGLES, jc, c, "cosf vs jitted jnp.cos over all 2^23 noise angles")


def test_noise_angles_cover_the_range():
    assert NOISE_ANGLES.size == 2**23 and NOISE_ANGLES[0] == 0.0
    assert NOISE_ANGLES[-1] < TWO_PI_F32 and np.all(np.diff(NOISE_ANGLES) > 0)


def test_numpy_cos_differs():
    """Guard that the bitwise checks can fail: numpy's float32 cos is not glibc's."""
    x = NOISE_ANGLES[::97]
    _, c = c_sincos(x)
    assert np.any(np.cos(x).view(np.uint32) != c.view(np.uint32))


FLOATS = st.floats(-1e6, 1e6, width=32, allow_nan=False, allow_infinity=False)
_PAD = 256


@given(st.lists(FLOATS, min_size=1, max_size=_PAD))
@example([0.0, -0.0, 1e-30, -1e-30, np.pi / 4, 1e6, -1e6, 3.14159274, 6.28318548, 102940.0])
def test_random_floats(values):
    x = np.array(values, dtype=np.float32)
    s, c = c_sincos(x)
    ls, lc = libm_sincos(x)
    padded = np.concatenate([x, np.zeros(_PAD - x.size, np.float32)])  # one compiled shape
    js, jc = (a[: x.size] for a in jax_sincos(padded))
    assert_same_bits(x, ls, s, "sinf vs libm")
    assert_same_bits(x, lc, c, "cosf vs libm")
    assert_same_bits(x, js, s, "sinf vs jnp.sin")
    assert_same_bits(x, jc, c, "cosf vs jnp.cos")


# -- light level ------------------------------------------------------------------------------
def c_light_levels(timesteps, day_length):
    return np.array([lib.craftax_test_light_level(int(t), day_length) for t in timesteps], dtype=np.float32)


@pytest.mark.parametrize("day_length", [300, 1, 7, 100, 1000])
def test_light_level_traced_params(day_length):
    """calculate_light_level(t, params) vmapped over t, params a jit argument (as in
    upstream.reset and in trainers that pass params through jit)."""
    params = upstream.DEFAULT_PARAMS.replace(day_length=day_length)
    t = np.arange(100001, dtype=np.int32)
    expected = np.asarray(jax.jit(jax.vmap(calculate_light_level, in_axes=(0, None)))(t, params))
    actual = c_light_levels(t, day_length)
    assert_same_bits(t, expected, actual, f"light level, day_length={day_length} (traced params)")


def test_light_level_constant_params():
    """The same with params closed over (XLA sees day_length as a constant)."""
    params = upstream.DEFAULT_PARAMS
    t = np.arange(100001, dtype=np.int32)
    expected = np.asarray(jax.jit(jax.vmap(lambda ti: calculate_light_level(ti, params)))(t))
    actual = c_light_levels(t, 300)
    assert_same_bits(t, expected, actual, "light level, day_length=300 (constant params)")


def test_light_level_argument_angles():
    """The cosf arguments 3.14159274f*((t/300 mod 1)+0.3) of the light level, t = 0..100000."""
    t = np.arange(100001, dtype=np.float32)
    progress = np.fmod(t * np.float32(1.0 / np.float32(300.0)), np.float32(1.0)) + np.float32(0.3)
    x = (np.float32(np.pi) * progress).astype(np.float32)
    _, c = c_sincos(x)
    _, lc = libm_sincos(x)
    assert_same_bits(x, lc, c, "cosf vs libm at light-level arguments")
