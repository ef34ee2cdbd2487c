"""Fractal noise of the C reference (noise.h) against craftax.craftax.util.noise, bitwise.

Upstream's generate_fractal_noise_2d is run jit(vmap(...)) over a batch of >= 2 keys with
the XLA flag of conformance/upstream.py (without it, jaxlib 0.10.2 returns wrong noise for
batch index >= 8), at the resolutions world generation uses on the 48x48 map, with drawn
gradients and with override angles (EnvParams.fractal_noise_angles).

    HYPOTHESIS_PROFILE=ci /work/venv/bin/python -m pytest conformance/test_noise.py
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from conftest import FEW_EXAMPLES, raw_key_batches, require_jax

upstream = require_jax()

import jax  # noqa: E402
from craftax.craftax.util.noise import generate_fractal_noise_2d  # noqa: E402

from pycraftax._test_hooks import ffi, lib  # noqa: E402  (needs PYCRAFTAX_TEST_HOOKS=1)

pytestmark = pytest.mark.jax

RESOLUTIONS = [(3, 3), (6, 24), (12, 12)]  # small_res (water, mountain), x_res (paths), larger_res (trees)
SHAPE = (48, 48)
BATCH = 16  # > 8: the batch indices the YNN-fusion bug would corrupt are exercised
_JITTED: dict = {}
# Keys are opaque: shrinking them finds nothing simpler, so the noise tests skip that phase.
NOISE_SETTINGS = settings(
    max_examples=max(4, FEW_EXAMPLES * 4),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)

# Standalone jax.jit(generate_fractal_noise_2d) is compiled with other fusions than the
# noise inside reset_env, and noise.h reproduces the reset_env kernels (CONFORMANCE.md, "Float
# recipes"; test_worldgen.py checks the worlds). Against the standalone function the C
# noise differs by 1-2 ulp in a share of cells for some resolutions and matches bitwise for
# others (e.g. 6x24 with override angles), so the bitwise comparison is recorded as a
# non-strict xfail and the bound below is what gates.
NOISE_BITWISE_XFAIL = pytest.mark.xfail(
    strict=False,
    raises=AssertionError,
    reason="standalone jitted noise fuses its lerps differently from reset_env's kernels (CONFORMANCE.md)",
)
NOISE_ABS_TOL = 2.0**-21  # what the threshold-based world gen tolerates many times over


def test_xla_flag_is_set():
    assert "--xla_cpu_experimental_ynn_fusion_type=" in os.environ.get("XLA_FLAGS", "")


def _pad(a):
    return np.concatenate([a, np.repeat(a[-1:], BATCH - a.shape[0], axis=0)])


def jax_noise(keys, res, angles=None):
    n = keys.shape[0]
    tag = (res, angles is None)
    f = _JITTED.get(tag)
    if f is None:
        if angles is None:
            fn = lambda k: generate_fractal_noise_2d(k, SHAPE, res, octaves=1)  # noqa: E731
            f = jax.jit(jax.vmap(fn))
        else:
            fn = lambda k, a: generate_fractal_noise_2d(k, SHAPE, res, octaves=1, override_angles=a)  # noqa: E731
            f = jax.jit(jax.vmap(fn))
        _JITTED[tag] = f
    out = f(_pad(keys)) if angles is None else f(_pad(keys), _pad(angles))
    return np.asarray(out)[:n]


def c_noise(key, res, angles=None):
    key = np.ascontiguousarray(key, dtype=np.uint32)
    out = np.empty(SHAPE, dtype=np.float32)
    a = ffi.NULL if angles is None else ffi.cast("float *", ffi.from_buffer(np.ascontiguousarray(angles, np.float32)))
    rc = lib.craftax_test_fractal_noise(
        ffi.cast("uint32_t *", ffi.from_buffer(key)), res[0], res[1], a, ffi.cast("float *", ffi.from_buffer(out))
    )
    assert rc == 0, f"craftax_test_fractal_noise returned {rc}"
    return out


def assert_fields_equal(expected, actual, keys, what):
    for i in range(len(keys)):
        bad = np.argwhere(expected[i].view(np.uint32) != actual[i].view(np.uint32))
        if len(bad):
            r, c = bad[0]
            raise AssertionError(
                f"{what}: key {keys[i].tolist()} (batch row {i}): {len(bad)} of 2304 cells differ; first "
                f"[{r}, {c}]: C {actual[i, r, c]!r}, JAX {expected[i, r, c]!r}"
            )


@NOISE_BITWISE_XFAIL
@pytest.mark.parametrize("res", RESOLUTIONS, ids=lambda r: f"{r[0]}x{r[1]}")
@NOISE_SETTINGS
@given(keys=raw_key_batches(min_size=BATCH, max_size=BATCH))
@example(keys=np.tile(np.array([[0, 0], [0, 1], [2**32 - 1, 2**32 - 1], [12345, 678]], np.uint32), (4, 1)))
def test_fractal_noise(res, keys):
    expected = jax_noise(keys, res)
    actual = np.stack([c_noise(k, res) for k in keys])
    assert_fields_equal(expected, actual, keys, f"fractal noise res={res}")
    assert np.all((actual >= 0) & (actual <= 1)) and actual.min() == 0 and actual.max() == 1


def angle_arrays(res, n, lo, hi, seed):
    """n override-angle grids (res0+1, res1+1) uniform in [lo, hi), from a drawn seed
    (drawing thousands of floats one by one would dominate the run time)."""
    shape = (n, res[0] + 1, res[1] + 1)
    rng = np.random.default_rng(seed)
    return (lo + (hi - lo) * rng.random(shape)).astype(np.float32)


@pytest.mark.parametrize("res", RESOLUTIONS, ids=lambda r: f"{r[0]}x{r[1]}")
@NOISE_SETTINGS
@given(keys=raw_key_batches(min_size=BATCH, max_size=BATCH))
def test_fractal_noise_within_tolerance(res, keys):
    """Until the bitwise test passes: C and JAX noise agree to NOISE_ABS_TOL everywhere."""
    expected = jax_noise(keys, res)
    actual = np.stack([c_noise(k, res) for k in keys])
    err = np.abs(expected.astype(np.float64) - actual)
    assert err.max() <= NOISE_ABS_TOL, f"res={res}: max |C - JAX| = {err.max():.3g} at {np.unravel_index(err.argmax(), err.shape)}"


def _override_case(res, data, keys):
    lo, hi = data.draw(st.sampled_from([(0.0, 1.0), (-4.0, 4.0), (-1000.0, 1000.0)]))
    angles = angle_arrays(res, BATCH, lo, hi, data.draw(st.integers(0, 2**32 - 1)))
    expected = jax_noise(keys, res, angles)
    actual = np.stack([c_noise(k, res, a) for k, a in zip(keys, angles)])
    return expected, actual, f"fractal noise res={res} with override angles in [{lo}, {hi}]"


@NOISE_BITWISE_XFAIL
@pytest.mark.parametrize("res", RESOLUTIONS, ids=lambda r: f"{r[0]}x{r[1]}")
@NOISE_SETTINGS
@given(data=st.data(), keys=raw_key_batches(min_size=BATCH, max_size=BATCH))
def test_fractal_noise_override_angles(res, data, keys):
    expected, actual, what = _override_case(res, data, keys)
    assert_fields_equal(expected, actual, keys, what)


@pytest.mark.parametrize("res", RESOLUTIONS, ids=lambda r: f"{r[0]}x{r[1]}")
@NOISE_SETTINGS
@given(data=st.data(), keys=raw_key_batches(min_size=BATCH, max_size=BATCH))
def test_fractal_noise_override_angles_within_tolerance(res, data, keys):
    expected, actual, what = _override_case(res, data, keys)
    err = np.abs(expected.astype(np.float64) - actual)
    assert err.max() <= NOISE_ABS_TOL, f"{what}: max |C - JAX| = {err.max():.3g}"


def test_override_angles_ignore_the_key():
    """With override angles, the field does not depend on the key (in C as upstream)."""
    angles = np.random.default_rng(3).random((4, 4), dtype=np.float32)
    a = c_noise(np.array([1, 2], np.uint32), (3, 3), angles)
    b = c_noise(np.array([3, 4], np.uint32), (3, 3), angles)
    assert a.view(np.uint32).tolist() == b.view(np.uint32).tolist()
    assert a.view(np.uint32).tolist() != c_noise(np.array([1, 2], np.uint32), (3, 3)).view(np.uint32).tolist()


@pytest.mark.parametrize("res", [(0, 3), (5, 5), (3, 25), (48, 48)])
def test_bad_resolution_rejected(res):
    out = np.zeros(SHAPE, np.float32)
    key = np.zeros(2, np.uint32)
    rc = lib.craftax_test_fractal_noise(
        ffi.cast("uint32_t *", ffi.from_buffer(key)), res[0], res[1], ffi.NULL, ffi.cast("float *", ffi.from_buffer(out))
    )
    assert rc == lib.CRAFTAX_ERR_ARGUMENT
