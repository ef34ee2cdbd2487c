"""World subsystems of craftax_step (reference_c/include/craftax/step_world.h) against
upstream on injected states: reset states of both sides, mutated so that rare mechanics
happen (mobs and projectiles around the player, sleeping, low intrinsics, every floor,
the boss floor, ripe plants, the episode limit), then one subsystem applied on both sides
and every leaf compared (floats bitwise).

Hypothesis draws the seeds; HYPOTHESIS_PROFILE=ci runs more examples.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("craftax")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import pycraftax  # noqa: E402
from pycraftax._test_hooks import lib, ptr  # noqa: E402  (needs PYCRAFTAX_TEST_HOOKS=1)
from conformance import step_reference as ref  # noqa: E402
from conformance.step_reference import NUM_INJECT_ENVS as NUM_ENVS, mutate, reset_states  # noqa: E402

pytestmark = pytest.mark.jax

# Example counts per HYPOTHESIS_PROFILE, set per test (a global profile registered here
# would be overwritten by other test modules registering the same name).
EXAMPLES = 12 if os.environ.get("HYPOTHESIS_PROFILE") == "ci" else 4
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)

SUBSYSTEMS = {
    "update_mobs": lib.CRAFTAX_SUB_UPDATE_MOBS,
    "spawn_mobs": lib.CRAFTAX_SUB_SPAWN_MOBS,
    "update_plants": lib.CRAFTAX_SUB_UPDATE_PLANTS,
    "update_player_intrinsics": lib.CRAFTAX_SUB_UPDATE_PLAYER_INTRINSICS,
    "calculate_inventory_achievements": lib.CRAFTAX_SUB_CALCULATE_INVENTORY_ACHIEVEMENTS,
    "is_game_over": lib.CRAFTAX_SUB_IS_GAME_OVER,
}
def c_subsystem(name: str, state: dict, keys: np.ndarray, actions: np.ndarray):
    n = actions.shape[0]
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=n, backend="c", seed=0)
    env.set_state(state)
    out = np.zeros(n, dtype=np.int32)
    params = env._c_params
    code = lib.craftax_test_world_subsystem(
        ptr(env._states, "void *"), SUBSYSTEMS[name], ptr(np.ascontiguousarray(actions, np.int32), "int32_t *"),
        ptr(np.ascontiguousarray(keys, np.uint32), "uint32_t *"), n, params, ptr(out, "int32_t *"))
    assert code == 0
    if name == "is_game_over":
        return out.astype(bool)
    return env.get_state()


def check_subsystem(name: str, seed: int):
    rng = np.random.default_rng(seed)
    state = mutate(reset_states(seed % 4), rng)
    keys = rng.integers(0, 2**32, size=(NUM_ENVS, 2), dtype=np.uint32)
    actions = rng.integers(0, 43, size=NUM_ENVS).astype(np.int32)
    actions[rng.random(NUM_ENVS) < 0.3] = 6  # SLEEP
    actions[rng.random(NUM_ENVS) < 0.2] = 17  # REST
    ours = c_subsystem(name, {k: v.copy() for k, v in state.items()}, keys, actions)
    theirs = ref.subsystem(name, state, keys, actions)
    if name == "is_game_over":
        bad = np.flatnonzero(ours != theirs)
        assert bad.size == 0, f"is_game_over differs for seed {seed} env {bad[0]}: C {ours[bad[0]]}, JAX {theirs[bad[0]]}"
        return
    diff = ref.first_difference(ours, theirs)
    assert diff is None, (
        f"{name}: seed {seed}: leaf {diff[0]!r} env {diff[1]} index {diff[2]}: C {diff[3]!r} vs JAX {diff[4]!r}"
    )


@pytest.mark.parametrize("name", list(SUBSYSTEMS))
@SETTINGS
@given(seed=st.integers(0, 2**31 - 1))
def test_world_subsystem_matches_upstream(name, seed):
    check_subsystem(name, seed)


def test_mutated_states_are_accepted():
    """The injected states are valid for set_state (sanity of the fixture itself)."""
    state = mutate(reset_states(0), np.random.default_rng(0))
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=NUM_ENVS, backend="c", seed=0)
    env.set_state(state)

