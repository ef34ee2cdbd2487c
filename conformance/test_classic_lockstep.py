"""Craftax-Classic whole-step parity: C and upstream craftax 1.6.1 stepped in lockstep.

The C API (craftax_classic_step_with_keys, craftax_classic_step_autoreset) and upstream's
jitted, vmapped step_env (or the official auto-reset CraftaxClassicSymbolicEnv.step) inside
one lax.scan start from the same states and take the same per-step keys and actions. After
every step every EnvState leaf, the obs (bitwise), the reward (bitwise) and done are compared.

Starts: reset worlds (random actions, DO a third of the time), the scripted scenarios of
conformance/classic_scenarios.py (every craft and placement, fights, eating, mining, sleep
through the night, death, lava, time limit, the edge-of-map quirks), and Hypothesis-seeded
perturbed states (mobs, arrows, ripe plants and blocks around the player).

    HYPOTHESIS_PROFILE=ci .venv/bin/python -m pytest conformance/test_classic_lockstep.py
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import PROFILE, compare_obs, compare_states, key_stream, record_summary, require_jax

require_jax()

from conformance import classic_scenarios as sc  # noqa: E402
from conformance import classic_c as cc  # noqa: E402
from conformance import classic_upstream as cu  # noqa: E402
from pycraftax import classic_state  # noqa: E402

pytestmark = pytest.mark.jax

NUM_ENVS = {"dev": 16, "ci": 32, "thorough": 64}[PROFILE]
NUM_STEPS = {"dev": 100, "ci": 300, "thorough": 600}[PROFILE]
INJECT_EXAMPLES = {"dev": 1, "ci": 3, "thorough": 12}[PROFILE]
INJECT_STEPS = 60


def lockstep(init: dict, keys: np.ndarray, actions: np.ndarray, overrides=None, auto_reset=False, context=""):
    """Run both sides from state dict `init`; returns (env-steps compared, done flags seen,
    achievements unlocked at any step [22], the final state dict, the final dones [N])."""
    overrides = overrides or {}
    n = init["map"].shape[0]
    template = cu.upstream_reset(key_stream(n))[2]
    upstream_params = cu.DEFAULT_PARAMS.replace(**overrides)
    u_state = cu.unflatten_state(template, init)
    if auto_reset:
        # one jitted step per call, as the full game's auto-reset test does: inside a lax.scan
        # XLA fuses the auto-reset state's light level (docs/CLASSIC_CONFORMANCE.md)
        outs = []
        for t in range(keys.shape[0]):
            obs_t, state_t, u_state, reward_t, done_t = cu.upstream_step(
                keys[t], u_state, actions[t], upstream_params, auto_reset=True
            )
            outs.append((obs_t, state_t, reward_t, done_t))
        e_obs = np.stack([o[0] for o in outs])
        e_states = {k: np.stack([o[1][k] for o in outs]) for k in outs[0][1]}
        e_reward = np.stack([o[2] for o in outs])
        e_done = np.stack([o[3] for o in outs])
    else:
        e_obs, e_states, e_reward, e_done = cu.upstream_rollout(u_state, keys, actions, upstream_params)
    states = np.zeros((n, classic_state.STATE_SIZE), dtype=np.uint8)
    classic_state.set_state(states, init)
    params = cc.c_params(**overrides)
    seen = np.zeros(classic_state.NUM_ACHIEVEMENTS, dtype=bool)
    for t in range(keys.shape[0]):
        obs, reward, done = cc.c_step(states, keys[t], actions[t], params, auto_reset)
        where = f"{context} step {t}"
        actual = classic_state.get_state(states)
        compare_states({k: v[t] for k, v in e_states.items()}, actual, None, where)
        compare_obs(e_obs[t], obs, None, where)
        bad = np.flatnonzero(reward.view(np.uint32) != e_reward[t].view(np.uint32))
        assert bad.size == 0, (
            f"{where}: reward of env {bad[0]}: got {reward[bad[0]]!r}, expected {e_reward[t][bad[0]]!r}"
        )
        bad = np.flatnonzero(done != e_done[t])
        assert bad.size == 0, f"{where}: done of env {bad[0]}: got {done[bad[0]]}, expected {e_done[t][bad[0]]}"
        seen |= actual["achievements"].any(axis=0)
    return keys.shape[0] * n, int(e_done.sum()), seen, classic_state.get_state(states), e_done[-1]


def stream(seed: int, num_steps: int, n: int):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2**32, size=(num_steps, n, 2), dtype=np.uint32), sc.biased_actions(rng, num_steps, n)


CHUNK = 100


def test_random_trajectories_from_reset():
    """step_env has no reset: every CHUNK steps the envs that are done get fresh worlds (on
    both sides), so that the trajectories keep living players."""
    state = cu.upstream_reset(key_stream(NUM_ENVS, seed=101))[1]
    steps = episodes = 0
    seen = np.zeros(classic_state.NUM_ACHIEVEMENTS, dtype=bool)
    for chunk in range(NUM_STEPS // CHUNK):
        step_keys, actions = stream(chunk, CHUNK, NUM_ENVS)
        n_steps, _, chunk_seen, state, ended = lockstep(state, step_keys, actions, context=f"from reset, chunk {chunk}")
        steps += n_steps
        seen |= chunk_seen
        episodes += int(ended.sum())
        fresh = cu.upstream_reset(key_stream(NUM_ENVS, seed=1000 + chunk))[1]
        state = {k: np.where(ended.reshape((-1,) + (1,) * (v.ndim - 1)), fresh[k], v) for k, v in state.items()}
    record_summary(
        f"test_classic_lockstep: {steps} env-steps from resets equal on every leaf, obs, reward, done "
        f"({episodes} episodes ended and replaced, {int(seen.sum())}/22 achievements seen)"
    )


def test_auto_reset_with_short_episodes():
    """The official auto-reset step, max_timesteps 40 so that every env resets several times."""
    keys = key_stream(NUM_ENVS, seed=202)
    init = cu.upstream_reset(keys, cu.DEFAULT_PARAMS.replace(max_timesteps=40))[1]
    step_keys, actions = stream(2, 130, NUM_ENVS)
    steps, episodes = lockstep(init, step_keys, actions, {"max_timesteps": 40}, auto_reset=True, context="auto")[:2]
    assert episodes >= 3 * NUM_ENVS, episodes
    record_summary(f"test_classic_lockstep: auto-reset: {steps} env-steps, {episodes} resets, all equal")


def test_scenarios():
    n = len(sc.SCENARIOS)
    init, actions = sc.scenario_batch(cu.upstream_reset(key_stream(n, seed=303))[1], 240, seed=3)
    step_keys = np.random.default_rng(3).integers(0, 2**32, size=(240, n, 2), dtype=np.uint32)
    steps, _, seen, _, _ = lockstep(init, step_keys, actions, context="scenarios")
    # the scripts reach every achievement (a check on the scenarios themselves)
    assert seen.all(), f"achievements never unlocked: {np.flatnonzero(~seen).tolist()}"
    record_summary(f"test_classic_lockstep: {n} scripted scenarios, {steps} env-steps, all 22 achievements, equal")


@settings(max_examples=INJECT_EXAMPLES)
@given(seed=st.integers(0, 2**31 - 1))
def test_perturbed_states(seed):
    rng = np.random.default_rng(seed)
    init = sc.perturb(cu.upstream_reset(key_stream(16, seed=seed % 5))[1], rng)
    step_keys, actions = stream(seed, INJECT_STEPS, 16)
    lockstep(init, step_keys, actions, context=f"perturbed seed {seed}")


@pytest.mark.parametrize("overrides", [{"day_length": 23, "spawn_zombie_night_chance": 0.9, "zombie_health": 1}])
def test_non_default_params(overrides):
    keys = key_stream(16, seed=404)
    init = sc.perturb(cu.upstream_reset(keys)[1], np.random.default_rng(4))
    step_keys, actions = stream(4, 80, 16)
    lockstep(init, step_keys, actions, overrides, context=str(overrides))
