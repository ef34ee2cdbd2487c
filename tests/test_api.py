"""The Python API contract of pycraftax (docs/ARCHITECTURE.md, "The Python package"); needs no jax.

    /work/venv/bin/python -m pytest tests/test_api.py
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pycraftax
from pycraftax import jax_random

ENV_ID = "Craftax-Symbolic-v1"
OBS_SIZE = 8268
NUM_ACTIONS = 43


def make(num_envs=2, **kw):
    return pycraftax.make(ENV_ID, num_envs=num_envs, backend="c", **kw)


@pytest.fixture
def env():
    e = make(3, seed=0)
    e.reset(seed=1)
    yield e
    e.close()


# -- registry and make() errors ---------------------------------------------------------------
def test_list_envs():
    ids = pycraftax.list_envs()
    assert isinstance(ids, list) and ENV_ID in ids
    assert all(isinstance(i, str) for i in ids)


@pytest.mark.parametrize("env_id", pycraftax.list_envs())
def test_every_registered_id_resets(env_id):
    e = pycraftax.make(env_id, num_envs=2, backend="c")
    obs, info = e.reset(seed=0)
    assert obs.shape == (2,) + e.single_observation_space.shape and isinstance(info, dict)


def test_unknown_env_id_names_allowed_ids():
    with pytest.raises(ValueError) as info:
        pycraftax.make("Craftax-Pixels-v9", num_envs=1, backend="c")
    assert "Craftax-Pixels-v9" in str(info.value)
    for env_id in pycraftax.list_envs():
        assert env_id in str(info.value)


@pytest.mark.parametrize("num_envs", [0, -1])
def test_num_envs_below_one(num_envs):
    with pytest.raises(ValueError, match="num_envs"):
        make(num_envs)


@pytest.mark.parametrize("num_envs", [1.5, "2", None, True])
def test_num_envs_wrong_type(num_envs):
    with pytest.raises(TypeError, match="num_envs"):
        make(num_envs)


def test_unknown_param_is_type_error():
    with pytest.raises(TypeError, match="no_such_param"):
        make(1, no_such_param=3)


@pytest.mark.parametrize(
    "params",
    [
        {"max_timesteps": 1.5},
        {"max_timesteps": "100"},
        {"day_length": True},
        {"always_diamond": 1},
        {"god_mode": "yes"},
        {"fractal_noise_angles": None},
        {"fractal_noise_angles": (None, None, None)},
    ],
    ids=lambda p: repr(p),
)
def test_ill_typed_param_is_type_error(params):
    with pytest.raises(TypeError):
        make(1, **params)


@pytest.mark.parametrize(
    "params",
    [
        {"day_length": 0},
        {"max_timesteps": 0},
        {"fractal_noise_angles": (np.zeros((3, 3), np.float32), None, None, None)},
        {"fractal_noise_angles": (np.full((4, 4), np.nan, np.float32), None, None, None)},
    ],
    ids=["day_length=0", "max_timesteps=0", "angles-shape", "angles-nan"],
)
def test_out_of_range_param_is_value_error(params):
    with pytest.raises(ValueError):
        make(1, **params)


@pytest.mark.parametrize(
    "params", [{"map_size": (64, 64)}, {"num_levels": 3}, {"max_melee_mobs": 5}, {"max_growing_plants": 1}]
)
def test_non_default_static_params_rejected(params):
    with pytest.raises(ValueError, match=next(iter(params))):
        make(1, **params)


def test_default_static_params_accepted():
    e = make(1, map_size=(48, 48), num_levels=9, max_melee_mobs=3)
    assert e.reset(seed=0)[0].shape == (1, OBS_SIZE)


def test_cuda_without_gpu_is_runtime_error():
    if pycraftax.cuda_available():
        pytest.skip("a CUDA backend is available here")
    with pytest.raises(RuntimeError, match="cuda"):
        pycraftax.make(ENV_ID, num_envs=1, backend="cuda")


def test_unknown_backend():
    with pytest.raises(ValueError, match="backend"):
        pycraftax.make(ENV_ID, num_envs=1, backend="tpu")


def test_auto_backend_warns_and_falls_back_to_c():
    if pycraftax.cuda_available():
        pytest.skip("a CUDA backend is available here")
    with pytest.warns(UserWarning, match="C reference"):
        e = pycraftax.make(ENV_ID, num_envs=2, backend="auto")
    assert e.backend == "c"
    obs, _ = e.reset(seed=0)
    np.testing.assert_array_equal(obs, make(2).reset(seed=0)[0])


def test_explicit_c_backend_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make(1)


@pytest.mark.parametrize("seed", [-1, 2**32, 1.0, "0", True])
def test_bad_seed(seed):
    with pytest.raises((TypeError, ValueError)):
        make(1, seed=seed)


# -- spaces, reset ----------------------------------------------------------------------------
def test_spaces():
    e = make(4)
    assert e.num_envs == 4
    assert e.single_observation_space.shape == (OBS_SIZE,)
    assert e.single_observation_space.dtype == np.float32
    assert e.single_action_space.n == NUM_ACTIONS
    assert e.single_action_space.contains(0) and e.single_action_space.contains(NUM_ACTIONS - 1)
    assert not e.single_action_space.contains(NUM_ACTIONS) and not e.single_action_space.contains(-1)


@pytest.mark.parametrize("num_envs", [1, 2, 17])
def test_reset_shapes_dtypes(num_envs):
    e = make(num_envs)
    obs, info = e.reset(seed=3)
    assert obs.shape == (num_envs, OBS_SIZE) and obs.dtype == np.float32
    assert obs.flags.c_contiguous and isinstance(info, dict)
    assert np.all(np.isfinite(obs)) and obs.min() >= 0.0
    for row in obs:
        assert e.single_observation_space.contains(row)
    obs2, _ = e.reset()  # from the env's own key stream
    assert obs2.shape == (num_envs, OBS_SIZE)


def test_same_seed_same_obs_different_seed_different():
    a, _ = make(4).reset(seed=5)
    b, _ = make(4).reset(seed=5)
    c, _ = make(4).reset(seed=6)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert len({row.tobytes() for row in a}) == 4, "envs of one batch should get different worlds"


def test_unseeded_resets_advance_and_are_reproducible():
    e1, e2 = make(2, seed=9), make(2, seed=9)
    first1, second1 = e1.reset()[0], e1.reset()[0]
    first2, second2 = e2.reset()[0], e2.reset()[0]
    np.testing.assert_array_equal(first1, first2)
    np.testing.assert_array_equal(second1, second2)
    assert not np.array_equal(first1, second1)


def test_reset_seed_is_split_of_prng_key():
    """reset(seed) gives env i the key split(PRNGKey(seed), num_envs)[i]."""
    e = make(3)
    obs_seed, _ = e.reset(seed=11)
    keys = jax_random.split(jax_random.prng_key(11), 3)
    obs_keys, _ = e.reset_with_keys(keys)
    np.testing.assert_array_equal(obs_seed, obs_keys)


# -- reset_with_keys validation -----------------------------------------------------------------
def test_reset_with_keys_valid():
    e = make(2)
    keys = np.array([[0, 1], [2**32 - 1, 7]], dtype=np.uint32)
    obs, _ = e.reset_with_keys(keys)
    assert obs.shape == (2, OBS_SIZE)
    np.testing.assert_array_equal(e.reset_with_keys(keys.copy())[0], obs)
    # a non-contiguous view holding the same keys gives the same worlds
    wide = np.zeros((2, 4), dtype=np.uint32)
    wide[:, ::2] = keys
    np.testing.assert_array_equal(e.reset_with_keys(wide[:, ::2])[0], obs)


@pytest.mark.parametrize(
    "keys,exc",
    [
        (np.zeros((2, 2), dtype=np.int32), TypeError),
        (np.zeros((2, 2), dtype=np.uint64), TypeError),
        (np.zeros((2, 2), dtype=np.float32), TypeError),
        ([[0, 1], [0, 2]], TypeError),
        (np.zeros((3, 2), dtype=np.uint32), ValueError),
        (np.zeros((2, 3), dtype=np.uint32), ValueError),
        (np.zeros((4,), dtype=np.uint32), ValueError),
        (np.zeros((2, 2, 1), dtype=np.uint32), ValueError),
    ],
    ids=["int32", "uint64", "float32", "list", "3x2", "2x3", "flat", "3d"],
)
def test_reset_with_keys_rejects(keys, exc):
    e = make(2)
    e.reset(seed=0)
    before = e.get_state()
    with pytest.raises(exc):
        e.reset_with_keys(keys)
    after = e.get_state()
    for name in before:
        np.testing.assert_array_equal(before[name], after[name], err_msg=name)


# -- get_state / set_state ----------------------------------------------------------------------
EXPECTED_LEAVES = {  # a sample of upstream EnvState leaves: name -> (shape, dtype)
    "map": ((9, 48, 48), np.int32),
    "item_map": ((9, 48, 48), np.int32),
    "mob_map": ((9, 48, 48), np.bool_),
    "light_map": ((9, 48, 48), np.float32),
    "down_ladders": ((9, 2), np.int32),
    "player_position": ((2,), np.int32),
    "player_level": ((), np.int32),
    "player_health": ((), np.float32),
    "inventory.wood": ((), np.int32),
    "inventory.armour": ((4,), np.int32),
    "inventory.potions": ((6,), np.int32),
    "melee_mobs.position": ((9, 3, 2), np.int32),
    "melee_mobs.mask": ((9, 3), np.bool_),
    "ranged_mobs.health": ((9, 2), np.float32),
    "growing_plants_positions": ((10, 2), np.int32),
    "potion_mapping": ((6,), np.int32),
    "learned_spells": ((2,), np.bool_),
    "state_rng": ((2,), np.uint32),
}


def test_get_state_names_shapes_dtypes(env):
    state = env.get_state()
    assert isinstance(state, dict) and len(state) > 60
    for name, (shape, dtype) in EXPECTED_LEAVES.items():
        assert name in state, name
        assert state[name].shape == (env.num_envs,) + shape, name
        assert state[name].dtype == np.dtype(dtype), name
    for name, value in state.items():
        assert isinstance(value, np.ndarray) and value.shape[0] == env.num_envs, name
        assert value.dtype in (np.int32, np.float32, np.bool_, np.uint32), name


def test_get_state_reset_values(env):
    s = env.get_state()
    assert np.all(s["player_position"] == 24) and np.all(s["player_level"] == 0)
    assert np.all(s["player_health"] == 9.0)
    assert np.all(np.sort(s["potion_mapping"], axis=1) == np.arange(6))


def test_get_state_is_a_copy(env):
    s = env.get_state()
    s["map"][:] = 0
    assert env.get_state()["map"].any()


def test_set_state_round_trip(env):
    state = env.get_state()
    obs = env.observe()
    other = make(3)
    other.reset(seed=123)
    other.set_state(state)
    after = other.get_state()
    for name in state:
        assert np.array_equal(state[name].view(np.uint8), after[name].view(np.uint8)), name
    np.testing.assert_array_equal(other.observe(), obs)


def test_set_state_admits_dead_health_in_unmasked_slots(env):
    state = env.get_state()
    health, mask = state["melee_mobs.health"].copy(), state["melee_mobs.mask"].copy()
    mask[0, 2, 0], health[0, 2, 0] = False, -3.0
    env.set_state(dict(state, **{"melee_mobs.health": health, "melee_mobs.mask": mask}))
    assert env.get_state()["melee_mobs.health"][0, 2, 0] == -3.0


def test_set_state_changes_the_env(env):
    state = env.get_state()
    state["player_health"][:] = 3.5
    state["inventory.wood"][1] = 7
    env.set_state(state)
    s = env.get_state()
    assert np.all(s["player_health"] == 3.5) and s["inventory.wood"][1] == 7


def _assert_unchanged(env, before):
    after = env.get_state()
    for name in before:
        np.testing.assert_array_equal(before[name], after[name], err_msg=f"{name} changed by a rejected set_state")


def _bad_states(state):
    """(label, bad state dict, exception type) for set_state."""
    cases = []
    missing = dict(state)
    del missing["inventory.wood"]
    cases.append(("missing", missing, KeyError))
    extra = dict(state, **{"inventory.gold": state["inventory.wood"].copy()})
    cases.append(("extra", extra, KeyError))
    cases.append(("shape", dict(state, map=state["map"][:, :, :47]), ValueError))
    cases.append(("batch", dict(state, player_health=state["player_health"][:2]), ValueError))
    cases.append(("dtype-int64", dict(state, map=state["map"].astype(np.int64)), TypeError))
    cases.append(("dtype-float64", dict(state, player_health=state["player_health"].astype(np.float64)), TypeError))
    cases.append(("dtype-bool", dict(state, mob_map=state["mob_map"].astype(np.uint8)), TypeError))
    cases.append(("not-array", dict(state, player_level=state["player_level"].tolist()), TypeError))
    block = state["map"].copy()
    block[2, 8, 47, 47] = 37  # 37 block types: 0..36
    cases.append(("block-id", dict(state, map=block), ValueError))
    negative = state["map"].copy()
    negative[0, 0, 0, 0] = -1
    cases.append(("negative-block", dict(state, map=negative), ValueError))
    level = state["player_level"].copy()
    level[1] = 9
    cases.append(("level", dict(state, player_level=level), ValueError))
    nan = state["light_map"].copy()
    nan[0, 3, 1, 1] = np.nan
    cases.append(("nan", dict(state, light_map=nan), ValueError))
    inf = state["player_health"].copy()
    inf[2] = np.inf
    cases.append(("inf", dict(state, player_health=inf), ValueError))
    # a masked mob without health: unreachable from reset, and the step relies on it
    dead_mask, dead_health = state["ranged_mobs.mask"].copy(), state["ranged_mobs.health"].copy()
    dead_mask[1, 4, 1], dead_health[1, 4, 1] = True, 0.0
    cases.append(("dead-mob", dict(state, **{"ranged_mobs.mask": dead_mask, "ranged_mobs.health": dead_health}),
                  ValueError))
    cases.append(("not-a-dict", list(state.items()), TypeError))
    return cases


def test_set_state_rejects_bad_states_and_leaves_env_unchanged(env):
    state = env.get_state()
    for label, bad, exc in _bad_states(state):
        # Every bad state differs from the env's state somewhere that set_state would write
        # first, so a partial write would show up.
        poisoned = {k: v for k, v in bad.items()} if isinstance(bad, dict) else bad
        if isinstance(poisoned, dict) and "player_health" in poisoned and label not in ("batch", "dtype-float64", "inf"):
            poisoned = dict(poisoned, player_health=np.full_like(state["player_health"], 1.25))
        with pytest.raises(exc) as info:
            env.set_state(poisoned)
        if isinstance(bad, dict) and label not in ("missing", "extra", "not-a-dict"):
            changed = [k for k in bad if k in state and bad[k] is not state[k]]
            assert any(name in str(info.value) for name in changed), f"{label}: message should name the leaf: {info.value}"
        _assert_unchanged(env, state)


def test_set_state_message_names_missing_and_extra(env):
    state = env.get_state()
    bad = dict(state)
    del bad["state_rng"]
    bad["bogus.leaf"] = np.zeros(3, np.int32)
    with pytest.raises(KeyError) as info:
        env.set_state(bad)
    assert "state_rng" in str(info.value) and "bogus.leaf" in str(info.value)


def test_closed_env_raises():
    e = make(1)
    e.close()
    with pytest.raises(RuntimeError):
        e.reset(seed=0)
    with pytest.raises(RuntimeError):
        e.get_state()


# -- jax_random helpers (pure numpy/C, JAX parity is in conformance/test_rng.py) ----------------
def test_prng_key_layout():
    assert jax_random.prng_key(0).tolist() == [0, 0]
    assert jax_random.prng_key(2**32 - 1).tolist() == [0, 2**32 - 1]
    assert jax_random.prng_key(5).dtype == np.uint32


def test_split_shapes_and_determinism():
    k = jax_random.prng_key(42)
    a = jax_random.split(k, 5)
    assert a.shape == (5, 2) and a.dtype == np.uint32
    np.testing.assert_array_equal(a, jax_random.split(k, 5))
    assert len({tuple(r) for r in a.tolist()}) == 5
    np.testing.assert_array_equal(jax_random.split(k, 2), a[:2])  # partitionable: prefix-stable
    with pytest.raises(ValueError):
        jax_random.split(np.zeros(3, np.uint32))
    with pytest.raises(ValueError):
        jax_random.split(k, 0)
