"""jax.random parity: the C reference's threefry samplers against JAX, bit for bit.

Every jax.random function the game uses, at the argument ranges and
shapes it uses, for Hypothesis-drawn raw keys (any uint32 pair). The JAX side is
jit(vmap(...)) over a fixed batch (padded), so each shape compiles once.

    HYPOTHESIS_PROFILE=ci /work/venv/bin/python -m pytest conformance/test_rng.py
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from conftest import RAW_KEYS, raw_key_batches, require_jax

upstream = require_jax()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from pycraftax import jax_random  # noqa: E402
from pycraftax._test_hooks import ffi, lib  # noqa: E402  (needs PYCRAFTAX_TEST_HOOKS=1)

pytestmark = pytest.mark.jax

BATCH = 64  # every jitted JAX call sees exactly this many rows (padded), so it compiles once
_JITTED: dict = {}


def jax_batched(tag, fn, *arrays):
    """jit(vmap(fn)) over the leading axis of `arrays` (<= BATCH rows), as numpy."""
    n = arrays[0].shape[0]
    assert 1 <= n <= BATCH
    f = _JITTED.get(tag)
    if f is None:
        f = _JITTED[tag] = jax.jit(jax.vmap(fn))
    padded = [np.concatenate([a, np.repeat(a[-1:], BATCH - n, axis=0)]) for a in arrays]
    out = f(*padded)
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[:n], out)


def u32p(a: np.ndarray):
    return ffi.cast("uint32_t *", ffi.from_buffer(a))


def f32p(a: np.ndarray):
    return ffi.cast("float *", ffi.from_buffer(a))


def i32p(a: np.ndarray):
    return ffi.cast("int32_t *", ffi.from_buffer(a))


def assert_bitwise(expected, actual, keys, what):
    expected, actual = np.asarray(expected), np.asarray(actual)
    assert expected.shape == actual.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert expected.dtype == actual.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    e = expected.view(np.uint32) if expected.dtype == np.float32 else expected
    a = actual.view(np.uint32) if actual.dtype == np.float32 else actual
    bad = np.argwhere(e != a)
    if len(bad):
        i = tuple(int(x) for x in bad[0])
        raise AssertionError(
            f"{what}: {len(bad)} element(s) differ; first for key {keys[i[0]].tolist()} at index {i[1:]}: "
            f"C {actual[i]!r}, JAX {expected[i]!r}"
        )


# -- configuration ------------------------------------------------------------------------
def test_threefry_partitionable_is_what_we_implement():
    """The C reference implements split/random_bits with jax_threefry_partitionable=True
    (JAX's default since 0.5). If a JAX upgrade flips it, every key layout changes."""
    assert jax.__version__ == "0.10.2", f"reference semantics are jax 0.10.2, found {jax.__version__}"
    assert jax.config.jax_threefry_partitionable is True, (
        "jax_threefry_partitionable is no longer True in this JAX: pycraftax's RNG "
        "(reference_c/include/craftax/rng.h) implements the partitionable layout only"
    )
    assert jax.config.jax_default_prng_impl == "threefry2x32"
    assert not jax.config.jax_enable_x64


@given(st.integers(0, 2**32 - 1))
@example(0)
@example(2**31)
@example(2**32 - 1)
def test_prng_key(seed):
    expected = np.asarray(jax.random.PRNGKey(seed))
    actual = jax_random.prng_key(seed)
    assert actual.dtype == np.uint32 and actual.tolist() == expected.tolist()


# -- split ----------------------------------------------------------------------------------
@pytest.mark.parametrize("num", [2, 3, 4, 7, 9, 64, 1000])
@given(keys=raw_key_batches())
@example(keys=np.array([[0, 0], [2**32 - 1, 2**32 - 1]], dtype=np.uint32))
def test_split(num, keys):
    expected = jax_batched(("split", num), lambda k: jax.random.split(k, num), keys)
    actual = np.empty((len(keys), num, 2), dtype=np.uint32)
    for i, key in enumerate(keys):
        lib.craftax_key_split(u32p(np.ascontiguousarray(key)), num, u32p(actual[i]))
    assert_bitwise(expected, actual, keys, f"split(key, {num})")
    # The Python helper goes through the same C function.
    np.testing.assert_array_equal(jax_random.split(keys[0], num), expected[0])


# -- uniform --------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (4, 4), (7, 25), (13, 13), (48, 48)])
@given(keys=raw_key_batches())
def test_uniform(shape, keys):
    expected = jax_batched(("uniform", shape), lambda k: jax.random.uniform(k, shape), keys)
    size = int(np.prod(shape))
    actual = np.empty((len(keys), size), dtype=np.float32)
    for i, key in enumerate(keys):
        lib.craftax_test_uniform(u32p(np.ascontiguousarray(key)), size, f32p(actual[i]))
    assert_bitwise(expected.reshape(len(keys), -1), actual, keys, f"uniform(key, {shape})")
    assert np.all((actual >= 0) & (actual < 1))


# -- randint --------------------------------------------------------------------------------
# chest loot [4,8) [0,6) [1,3) [1,5) [0,2); mob moves [0,4) [0,8); room sizes [5,10);
# room positions [0,11); chest/fountain offsets [1, size-1) for room sizes 5..9; [1,4) [0,11).
RANDINT_RANGES = [(0, 4), (0, 8), (0, 6), (1, 3), (1, 4), (1, 5), (0, 2), (4, 8), (5, 10), (0, 11)] + [
    (1, size - 1) for size in range(5, 10)
]


def c_randint(keys, lo, hi, size):
    out = np.empty((len(keys), size), dtype=np.int32)
    for i, key in enumerate(keys):
        lib.craftax_test_randint(u32p(np.ascontiguousarray(key)), size, lo, hi, i32p(out[i]))
    return out


@pytest.mark.parametrize("shape", [(), (2,), (8, 2)])
@pytest.mark.parametrize("lo,hi", sorted(set(RANDINT_RANGES)))
@given(keys=raw_key_batches(max_size=32))
def test_randint(lo, hi, shape, keys):
    expected = jax_batched(("randint", lo, hi, shape), lambda k: jax.random.randint(k, shape, lo, hi), keys)
    actual = c_randint(keys, lo, hi, int(np.prod(shape)))
    assert_bitwise(expected.reshape(len(keys), -1), actual, keys, f"randint(key, {shape}, {lo}, {hi})")
    assert np.all((actual >= lo) & (actual < hi))


@given(data=st.data(), keys=raw_key_batches())
def test_randint_traced_bounds(data, keys):
    """The dungeon draws randint(key, (2,), 1, size - 1) with a traced room size."""
    sizes = np.array(data.draw(st.lists(st.integers(5, 9), min_size=len(keys), max_size=len(keys))), np.int32)
    expected = jax_batched(
        "randint_traced", lambda k, s: jax.random.randint(k, (2,), 1, s - 1), keys, sizes
    )
    actual = np.stack([c_randint(keys[i : i + 1], 1, int(s) - 1, 2)[0] for i, s in enumerate(sizes)])
    assert_bitwise(expected, actual, keys, "randint(key, (2,), 1, size-1) traced")


# -- choice with p ---------------------------------------------------------------------------
CHEST_P5 = np.array([0.3, 0.3, 0.15, 0.125, 0.125], dtype=np.float32)
CHEST_P4 = np.array([0.4, 0.3, 0.2, 0.1], dtype=np.float32)


def c_choice(keys, p_rows):
    """craftax_test_choice_p for each (key, p row); p rows are float32."""
    out = np.empty(len(keys), dtype=np.int32)
    for i, key in enumerate(keys):
        p = np.ascontiguousarray(p_rows[i], dtype=np.float32)
        out[i] = lib.craftax_test_choice_p(u32p(np.ascontiguousarray(key)), f32p(p), p.size)
    return out


def c_cell_choice(keys, masks, normalised: bool):
    """craftax_test_cell_choice for each (key, 2304-cell mask): the draw over bit rows."""
    out = np.empty(len(keys), dtype=np.int32)
    for i, key in enumerate(keys):
        m = np.ascontiguousarray(masks[i], dtype=np.uint8)
        out[i] = lib.craftax_test_cell_choice(u32p(np.ascontiguousarray(key)),
                                              ffi.cast("uint8_t *", ffi.from_buffer(m)), int(normalised))
    return out


def check_choice(tag, keys, p_rows, jax_p=None):
    """choice(key, arange(n), p=row) in JAX (p given to JAX as `jax_p`, e.g. bool) vs C."""
    jax_p = p_rows if jax_p is None else jax_p
    n = p_rows.shape[1]
    expected = jax_batched(tag, lambda k, p: jax.random.choice(k, jnp.arange(n), p=p), keys, jax_p)
    actual = c_choice(keys, p_rows.astype(np.float32))
    assert_bitwise(expected.astype(np.int32), actual, keys, f"choice({tag})")
    return actual


@pytest.mark.parametrize("p", [CHEST_P5, CHEST_P4], ids=["chest5", "chest4"])
@given(keys=raw_key_batches())
def test_choice_chest_vectors(p, keys):
    actual = check_choice(("chest", p.size), keys, np.tile(p, (len(keys), 1)))
    assert np.all((actual >= 0) & (actual < p.size))


def masks_2304(data, n):
    """n masks over the 48x48 map with varied densities, incl. empty and single cells."""
    rows = []
    for _ in range(n):
        density = data.draw(st.sampled_from([0.0, 1 / 2304, 0.001, 0.01, 0.1, 0.5, 0.9, 1.0]))
        seed = data.draw(st.integers(0, 2**32 - 1))
        rows.append(np.random.default_rng(seed).random(2304) < density)
    return np.stack(rows)


@given(data=st.data(), keys=raw_key_batches(max_size=32))
def test_choice_mask_over_sum_2304(data, keys):
    """choice(arange(2304), p = mask / mask.sum()) as the diamond and dungeon-ladder
    draws compute it; an empty mask makes p all-NaN and the index 0."""
    masks = masks_2304(data, len(keys))

    def fn(k, m):
        p = m / m.sum()
        return jax.random.choice(k, jnp.arange(2304), p=p), p

    expected, p = jax_batched("mask_over_sum", fn, keys, masks)
    actual = c_choice(keys, p)  # the exact p JAX used
    assert_bitwise(expected.astype(np.int32), actual, keys, "choice(2304, p=mask/sum)")
    empty = ~masks.any(axis=1)
    assert np.all(actual[empty] == 0), "an empty mask (NaN p) must give index 0"
    assert np.all(masks[~empty][np.arange((~empty).sum()), actual[~empty]]), "picked a cell outside the mask"
    from_bits = c_cell_choice(keys, masks, normalised=True)
    assert_bitwise(expected.astype(np.int32), from_bits, keys, "cell choice over bits (2304, p=mask/sum)")


@given(data=st.data(), keys=raw_key_batches(max_size=32))
def test_choice_bool_mask_2304(data, keys):
    """choice(arange(2304), p = bool mask) as the ladder draws pass it."""
    masks = masks_2304(data, len(keys))
    actual = check_choice("bool_mask", keys, masks.astype(np.float32), jax_p=masks)
    assert np.all(actual[~masks.any(axis=1)] == 0)
    from_bits = c_cell_choice(keys, masks, normalised=False)
    assert_bitwise(actual, from_bits, keys, "cell choice over bits (2304, p=bool mask)")


@given(data=st.data(), keys=raw_key_batches(max_size=16))
def test_choice_occupancy_9(data, keys):
    """Dungeon rooms: choice(arange(9), p=occupancy) with occupied chunks set to 0."""
    occ = np.ones((len(keys), 9), dtype=np.float32)
    for row in occ:
        row[data.draw(st.lists(st.integers(0, 8), max_size=9, unique=True))] = 0
    check_choice("occupancy9", keys, occ)


@given(data=st.data(), keys=raw_key_batches(max_size=16))
def test_choice_included_8(data, keys):
    """Dungeon paths: choice(arange(8), p=included_rooms_mask), a bool vector."""
    inc = np.zeros((len(keys), 8), dtype=bool)
    inc[:, 7] = True
    for row in inc:
        row[data.draw(st.lists(st.integers(0, 7), max_size=8, unique=True))] = True
    check_choice("included8", keys, inc.astype(np.float32), jax_p=inc)


@given(data=st.data(), keys=raw_key_batches(max_size=32))
def test_choice_two_axes(data, keys):
    """Mob moves: choice(arange(2), p=(abs == abs.max()) / abs.sum()), incl. 0/0."""
    d = np.array(data.draw(st.lists(st.tuples(st.integers(0, 48), st.integers(0, 48)), min_size=len(keys), max_size=len(keys))), np.int32)

    def fn(k, a):
        p = (a == a.max()) / a.sum()
        return jax.random.choice(k, jnp.arange(2), p=p), p

    expected, p = jax_batched("two_axes", fn, keys, d)
    actual = c_choice(keys, p)
    assert_bitwise(expected.astype(np.int32), actual, keys, "choice(2, p=axis mask/sum)")


@given(keys=raw_key_batches(max_size=16))
def test_choice_rare_map_48x48(keys):
    """Dungeon moss: choice([False, True], (48, 48), p=[0.9, 0.1])."""
    p = np.array([0.9, 0.1], dtype=np.float32)
    expected = jax_batched(
        "rare48", lambda k: jax.random.choice(k, jnp.array([False, True]), (48, 48), p=jnp.array([0.9, 0.1])), keys
    )
    actual = np.empty((len(keys), 2304), dtype=np.int32)
    for i, key in enumerate(keys):
        lib.craftax_test_choice_p_many(u32p(np.ascontiguousarray(key)), f32p(p), 2, 2304, i32p(actual[i]))
    assert_bitwise(expected.reshape(len(keys), -1).astype(np.int32), actual, keys, "choice([F,T], (48,48), p)")
    assert 0.0 < actual.mean() < 0.3


# -- cumsum (the blocked scan inside choice) ------------------------------------------------
@pytest.mark.parametrize("n", [5, 16, 17, 256, 2304, 4096])
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(["uniform", "mask_over_sum", "wide", "signed"]))
def test_cumsum_blocked(n, seed, kind):
    rng = np.random.default_rng(seed)
    rows = 8
    if kind == "uniform":
        x = rng.random((rows, n), dtype=np.float32)
    elif kind == "mask_over_sum":
        m = rng.random((rows, n)) < rng.random((rows, 1))
        m[:, 0] = True
        x = (m / m.sum(axis=1, keepdims=True)).astype(np.float32)
    elif kind == "wide":
        x = (rng.random((rows, n)) * 2.0 ** rng.integers(-30, 30, (rows, n))).astype(np.float32)
    else:
        x = rng.standard_normal((rows, n)).astype(np.float32)
    expected = jax_batched(("cumsum", n), jnp.cumsum, x)
    actual = np.empty_like(x)
    for i in range(rows):
        lib.craftax_test_cumsum(f32p(np.ascontiguousarray(x[i])), n, f32p(actual[i]))
    assert_bitwise(expected, actual, np.zeros((rows, 2), np.uint32), f"cumsum n={n} ({kind}, seed {seed})")


def test_cumsum_is_not_sequential():
    """Guard that the cumsum test can fail: a plain sequential float32 sum differs from
    XLA's blocked scan for long vectors."""
    x = np.random.default_rng(1).random((8, 2304), dtype=np.float32)
    expected = jax_batched(("cumsum", 2304), jnp.cumsum, x)
    sequential = np.cumsum(x, axis=1, dtype=np.float32)
    assert np.any(expected.view(np.uint32) != sequential.view(np.uint32))


# -- permutation ----------------------------------------------------------------------------
@given(keys=raw_key_batches())
def test_permutation_6(keys):
    expected = jax_batched("perm6", lambda k: jax.random.permutation(k, 6), keys)
    actual = np.empty((len(keys), 6), dtype=np.int32)
    for i, key in enumerate(keys):
        lib.craftax_test_permutation(u32p(np.ascontiguousarray(key)), 6, i32p(actual[i]))
    assert_bitwise(expected.astype(np.int32), actual, keys, "permutation(key, 6)")
    assert np.all(np.sort(actual, axis=1) == np.arange(6))


_UNIFORM44 = jax.jit(lambda k: jax.random.uniform(k, (4, 4)))


@given(key=RAW_KEYS)
def test_single_key_unbatched_matches(key):
    """A single unbatched jitted draw equals the vmapped one (keys are per-row)."""
    k = np.array(key, dtype=np.uint32)
    single = np.asarray(_UNIFORM44(k))
    out = np.empty(16, dtype=np.float32)
    lib.craftax_test_uniform(u32p(k), 16, f32p(out))
    assert single.reshape(-1).view(np.uint32).tolist() == out.view(np.uint32).tolist()
