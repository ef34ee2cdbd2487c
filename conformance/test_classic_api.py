"""The Craftax-Classic C API and leaf table without upstream: sizes, leaf names and shapes
(upstream's EnvState), get/set round trips, and clear errors for bad input (a Python
exception naming the leaf, or the C API's CRAFTAX_ERR_* code; never a crash)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import key_stream
from conformance import classic_c as cc
from pycraftax import classic_state
from pycraftax._native import lib


def test_sizes():
    assert classic_state.OBS_SIZE == 7 * 9 * 21 + 22 == 1345
    assert classic_state.NUM_ACTIONS == 17
    assert classic_state.NUM_ACHIEVEMENTS == 22


def test_leaves_are_upstreams_envstate():
    shapes = {leaf.name: leaf.shape for leaf in classic_state.LEAVES}
    assert len(shapes) == 49
    assert shapes["map"] == (64, 64) and shapes["mob_map"] == (64, 64)
    assert shapes["zombies.position"] == (3, 2) and shapes["skeletons.health"] == (2,)
    assert shapes["arrow_directions"] == (3, 2) and shapes["growing_plants_age"] == (10,)
    assert shapes["achievements"] == (22,) and shapes["state_rng"] == (2,)
    dtypes = {leaf.name: leaf.dtype for leaf in classic_state.LEAVES}
    assert dtypes["map"] == np.int32 and dtypes["mob_map"] == np.bool_ and dtypes["light_level"] == np.float32


def test_get_set_round_trip():
    states = cc.c_reset(key_stream(4))[0]
    state = classic_state.get_state(states)
    copy = np.zeros_like(states)
    classic_state.set_state(copy, state)
    assert np.array_equal(copy, states)


@pytest.mark.parametrize(
    "leaf, value, exc, match",
    [
        ("map", 17, ValueError, r"state\['map'\] value 17 .* outside \[0, 16\]"),
        ("player_position", 32768, ValueError, r"player_position.*outside \[-32704, 32767\]"),
        ("inventory.wood", 10, ValueError, "inventory.wood"),
        ("player_direction", 5, ValueError, "player_direction"),
        ("light_level", np.float32(np.nan), ValueError, "non-finite"),
    ],
)
def test_bad_leaf_values(leaf, value, exc, match):
    states = cc.c_reset(key_stream(2))[0]
    state = classic_state.get_state(states)
    state[leaf][1] = value
    before = states.copy()
    with pytest.raises(exc, match=match):
        classic_state.set_state(states, state)
    assert np.array_equal(states, before)


def test_bad_dict_shape_and_dtype():
    states = cc.c_reset(key_stream(2))[0]
    state = classic_state.get_state(states)
    with pytest.raises(KeyError, match="missing leaves"):
        classic_state.set_state(states, {k: v for k, v in state.items() if k != "timestep"})
    with pytest.raises(TypeError, match="dtype"):
        classic_state.set_state(states, {**state, "map": state["map"].astype(np.int64)})
    with pytest.raises(ValueError, match="shape"):
        classic_state.set_state(states, {**state, "map": state["map"][:, :32]})


def test_masked_mob_needs_health():
    states = cc.c_reset(key_stream(2))[0]
    state = classic_state.get_state(states)
    state["zombies.mask"][0, 1] = True
    state["zombies.health"][0, 1] = 0
    with pytest.raises(ValueError, match="zombies.health"):
        classic_state.set_state(states, state)


def test_c_api_rejects_bad_actions_and_params():
    states = cc.c_reset(key_stream(2))[0]
    before = states.copy()
    assert cc.c_step_rc(states, np.array([0, 17])) == lib.CRAFTAX_ERR_ARGUMENT
    assert cc.c_step_rc(states, np.array([-1, 0])) == lib.CRAFTAX_ERR_ARGUMENT
    assert cc.c_step_rc(states, np.array([0, 0]), cc.c_params(day_length=0)) == lib.CRAFTAX_ERR_ARGUMENT
    assert np.array_equal(states, before)
    assert cc.c_step_rc(states, np.array([5, 16])) == 0
    assert not np.array_equal(states, before)
