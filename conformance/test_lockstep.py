"""Whole-step JAX parity: random-action trajectories stepped in lockstep with upstream.

The C env (env.step_with_keys) and upstream `jax.jit(jax.vmap(env.step_env))` (no
auto-reset, batch >= 2, inside one jitted lax.scan) start from the same reset states and
take the same per-step keys and actions, both drawn by Hypothesis. After every step every
state leaf (floats bitwise, via per-leaf digests), the obs (bitwise), reward and done are
compared; on a mismatch the step is replayed on the JAX side to name the key, step, env,
leaf and first differing index.

HYPOTHESIS_PROFILE=ci: 3 examples x 64 envs x 300 steps (57,600 env-steps) from resets, and
6 examples x 32 injected states x 60 steps (11,520 env-steps).
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
from pycraftax import jax_random  # noqa: E402
from conformance import step_reference as ref  # noqa: E402
from conftest import record_summary  # noqa: E402

pytestmark = pytest.mark.jax

# Example counts per HYPOTHESIS_PROFILE, set per test (a global profile registered here
# would be overwritten by other test modules registering the same name).
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "dev")
# thorough: 16 examples x 64 envs x 500 steps = 512,000 env-steps and >= 1,000 episodes run
# to termination (random-policy episodes last 266 +- 92 steps, at most ~440).
EXAMPLES = {"ci": 3, "thorough": 16}.get(PROFILE, 1)
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)
INJECT_SETTINGS = settings(SETTINGS, max_examples=2 * EXAMPLES)

CI = PROFILE in ("ci", "thorough")
NUM_ENVS = 64 if CI else 16
NUM_STEPS = {"ci": 300, "thorough": 500}.get(PROFILE, 120)
NUM_INJECT_STEPS = 60 if CI else 30


def c_digests(state: dict[str, np.ndarray]) -> np.ndarray:
    return np.stack([ref.digest_np(state[name]) for name in ref.leaf_names()], axis=1)


def assert_masked_mobs_alive(state: dict[str, np.ndarray], where: str) -> None:
    """The step updates only the attacked mob's mask (CONFORMANCE.md quirk 7), which is exact
    while every masked mob has health > 0. Called on states whose digests equal upstream's,
    so this checks that upstream's own trajectories keep it."""
    for cls in ("melee_mobs", "passive_mobs", "ranged_mobs"):
        dead = state[cls + ".mask"] & ~(state[cls + ".health"] > 0)
        assert not dead.any(), f"{where}: masked {cls} entry {np.argwhere(dead)[0].tolist()} has health <= 0"


def run_lockstep(reset_seed: int, stream_seed: int, num_envs: int, num_steps: int, inject: bool = False):
    """Step C and upstream in lockstep from reset states (or, with inject, from mutated
    reset states, conformance.step_reference.mutate); returns the number of episodes that
    ended."""
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=num_envs, backend="c", seed=0)
    rng = np.random.default_rng(stream_seed)
    if inject:
        env.set_state(ref.mutate(ref.reset_states(reset_seed % 4, num_envs), rng))
    else:
        reset_keys = jax_random.split(jax_random.prng_key(reset_seed), num_envs)
        env.reset_with_keys(reset_keys)
    init = env.get_state()
    keys = rng.integers(0, 2**32, size=(num_steps, num_envs, 2), dtype=np.uint32)
    actions = rng.integers(0, 43, size=(num_steps, num_envs)).astype(np.int32)

    dig, odig, rew, done, _ = ref.rollout_digests(init, keys, actions)
    names = ref.leaf_names()
    episodes = 0
    for t in range(num_steps):
        obs, reward, c_done, info = env.step_with_keys(actions[t], keys[t])
        state = env.get_state()
        ours = c_digests(state)
        bad_leaf = ours != dig[t]
        bad_obs = ref.digest_np(obs) != odig[t]
        bad_rew = reward.view(np.uint32) != rew[t].astype(np.float32).view(np.uint32)
        bad_done = c_done != done[t]
        if bad_leaf.any() or bad_obs.any() or bad_rew.any() or bad_done.any():
            report(init, keys, actions, t, state, obs, reward, c_done, reset_seed, stream_seed)
        assert_masked_mobs_alive(state, f"reset seed {reset_seed}, stream seed {stream_seed}, step {t}")
        episodes += int(np.sum(c_done & ~np.asarray(done[t - 1] if t else np.zeros(num_envs, bool))))
    del names
    return episodes


@INJECT_SETTINGS
@given(reset_seed=st.integers(0, 2**32 - 1), stream_seed=st.integers(0, 2**63 - 1))
def test_injected_states_lockstep(reset_seed, stream_seed):
    """Busy mutated states (mobs and projectiles around the player, every floor, the boss
    floor, sleeping, potions, spells, low intrinsics) stepped with random actions."""
    run_lockstep(reset_seed, stream_seed, ref.NUM_INJECT_ENVS, NUM_INJECT_STEPS, inject=True)


def report(init, keys, actions, t, state, obs, reward, c_done, reset_seed, stream_seed):
    """Replay steps 0..t on the JAX side with the batched single step and name the first
    difference."""
    flat = init
    for s in range(t + 1):
        j_obs, flat, j_rew, j_done, _ = ref.step_env(flat, actions[s], keys[s])
    where = f"reset seed {reset_seed}, stream seed {stream_seed}, step {t}"
    diff = ref.first_difference(state, flat)
    if diff is not None:
        name, e, idx, a, b = diff
        pytest.fail(f"{where}: env {e} (key {keys[t, e].tolist()}, action {actions[t, e]}): leaf {name!r} "
                    f"first differing index {idx}: C {a!r} vs JAX {b!r}")
    bad = np.argwhere(obs.view(np.uint32) != j_obs.view(np.uint32))
    if bad.size:
        e, i = bad[0]
        pytest.fail(f"{where}: env {e}: obs index {i}: C {obs[e, i]!r} vs JAX {j_obs[e, i]!r}")
    bad = np.flatnonzero(reward.view(np.uint32) != j_rew.astype(np.float32).view(np.uint32))
    if bad.size:
        e = bad[0]
        pytest.fail(f"{where}: env {e} (action {actions[t, e]}): reward C {reward[e]!r} vs JAX {j_rew[e]!r}")
    bad = np.flatnonzero(c_done != j_done)
    if bad.size:
        pytest.fail(f"{where}: env {bad[0]}: done C {c_done[bad[0]]} vs JAX {j_done[bad[0]]}")
    pytest.fail(f"{where}: digests differ but the replayed step agrees (digest collision or scan-vs-step drift)")


@SETTINGS
@given(reset_seed=st.integers(0, 2**32 - 1), stream_seed=st.integers(0, 2**63 - 1))
def test_random_trajectories_lockstep(reset_seed, stream_seed):
    episodes = run_lockstep(reset_seed, stream_seed, NUM_ENVS, NUM_STEPS)
    TOTALS["examples"] += 1
    TOTALS["episodes"] += episodes
    TOTALS["env_steps"] += NUM_ENVS * NUM_STEPS


TOTALS = {"examples": 0, "episodes": 0, "env_steps": 0}


def test_lockstep_summary():
    """Runs after the random trajectories (file order): records what was compared."""
    if TOTALS["examples"]:
        record_summary(f"test_lockstep: {TOTALS['examples']} examples, {TOTALS['env_steps']:,} env-steps, "
                       f"{TOTALS['episodes']} episodes run to termination, all leaves/obs/reward/done equal")
    assert TOTALS["examples"] >= 1, "the lockstep test did not run before its summary"


# -- the auto-reset step() against upstream CraftaxSymbolicEnv.step --------------------------

def check_autoreset(n: int, steps: int, max_t: int, inject_seed: int | None = None):
    """env.step == upstream CraftaxSymbolicEnv.step (same-step auto-reset, jitted and
    vmapped) with the env's own key stream, from reset states or injected ones."""
    import jax
    import jax.numpy as jnp
    from craftax.craftax.envs.craftax_symbolic_env import CraftaxSymbolicEnv

    upstream_env = CraftaxSymbolicEnv()
    params = upstream_env.default_params.replace(max_timesteps=max_t)
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=n, backend="c", seed=7, max_timesteps=max_t)
    env.reset(seed=3)
    if inject_seed is None:
        reset_keys = jax_random.split(jax_random.prng_key(3), n)
        _, j_state = jax.jit(jax.vmap(upstream_env.reset, in_axes=(0, None)))(jnp.asarray(reset_keys), params)
    else:
        injected = ref.mutate(ref.reset_states(inject_seed % 4, n), np.random.default_rng(inject_seed))
        env.set_state(injected)
        j_state = ref.to_env_state(injected)
    vstep = jax.jit(jax.vmap(upstream_env.step, in_axes=(0, 0, 0, None)))
    key = jax_random.prng_key(3)  # reset(seed=3) restarts the step key stream at PRNGKey(3)
    rng = np.random.default_rng(0)
    returns = np.zeros(n, np.float32)
    lengths = np.zeros(n, np.int32)
    ended = {"terminated": 0, "truncated": 0}
    for t in range(steps):
        actions = rng.integers(0, 43, size=n)
        key, sub = jax_random.split(key, 2)
        keys = jax_random.split(sub, n)
        timestep_before = env.get_state()["timestep"]
        out = env.step(actions)
        obs, reward, terminated, truncated, info = out
        j_obs, j_state, j_rew, j_done, j_info = vstep(jnp.asarray(keys), j_state, jnp.asarray(actions, jnp.int32),
                                                      params)
        where = f"step {t} (inject seed {inject_seed})"
        j_done = ref.assert_env_step_matches(where, env, out, j_state, j_obs, j_rew, j_done, j_info)
        assert np.all(timestep_before[truncated] + 1 >= max_t), where
        returns += reward
        lengths += 1
        np.testing.assert_array_equal(info["episode_return"], np.where(j_done, returns, 0).astype(np.float32))
        np.testing.assert_array_equal(info["episode_length"], np.where(j_done, lengths, 0))
        returns[j_done] = 0
        lengths[j_done] = 0
        ended["terminated"] += int(terminated.sum())
        ended["truncated"] += int(truncated.sum())
    return ended


def test_autoreset_step_matches_upstream_env_step():
    """From reset states; a short max_timesteps makes episodes end by truncation."""
    ended = check_autoreset(n=4, steps=24, max_t=9)
    assert ended["truncated"] >= 8


def test_autoreset_step_from_injected_states():
    """From injected states: dying players (health <= 0) and timesteps at the limit end
    episodes by termination and truncation in the first steps."""
    ended = check_autoreset(n=ref.NUM_INJECT_ENVS, steps=6, max_t=100_000, inject_seed=11)
    assert ended["terminated"] > 0 and ended["truncated"] > 0, ended


# -- action validation ----------------------------------------------------------------------

@pytest.mark.parametrize(
    "bad, exc",
    [
        ([1, 2], TypeError),
        (np.array([1.0, 2.0]), TypeError),
        (np.array([True, False]), TypeError),
        (np.array([1, 2, 3]), ValueError),
        (np.array([[1, 2]]), ValueError),
        (np.array([0, 43]), ValueError),
        (np.array([-1, 0]), ValueError),
    ],
)
def test_step_rejects_bad_actions_and_leaves_state(bad, exc):
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=2, backend="c", seed=0)
    env.reset(seed=0)
    before = env.get_state()
    with pytest.raises(exc, match="actions"):
        env.step(bad)
    with pytest.raises(exc, match="actions"):
        env.step_with_keys(bad, np.zeros((2, 2), np.uint32))
    after = env.get_state()
    for name in before:
        np.testing.assert_array_equal(before[name], after[name], err_msg=name)
