"""The edges of the state domain (docs/STATE_DOMAIN.md) against craftax 1.6.1, bit for bit.

The domain was widened where upstream's own arithmetic goes: god mode walks the player off the
map (positions up to +-32,700 here), counters wrap in int32 as XLA's do (timestep, xp, monsters
killed, plant ages, boss progress), intrinsics reach the caps of attributes at 99 (food, drink
and energy 205, mana 303, health 107), unbounded float counters sit at +-3e38. Each env of one
batch starts at one of those edges; C (step_with_keys) and upstream (jitted vmapped step_env,
one lax.scan) step in lockstep, every leaf (floats bitwise), obs, reward and done compared after
every step, with and without god mode. Upstream runs with the params as an argument of its
jitted rollout (as a training loop passes them), so one compilation serves both.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("craftax")

import pycraftax  # noqa: E402
from conformance import step_reference as ref  # noqa: E402
from conformance.upstream import DEFAULT_PARAMS, ENV  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

pytestmark = pytest.mark.jax

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
STEPS = 40
# every action but DESCEND (18) and ASCEND (19), which would take the far players back onto a
# ladder of the map (the floor changes are the lockstep tests')
ACTIONS = np.array([a for a in range(43) if a not in (18, 19)], np.int32)


def edge_states(n: int = 16) -> dict[str, np.ndarray]:
    s = ref.reset_states(1, n)
    far = [[24, -3000], [-32600, 20], [32700, 24], [-32000, 32000], [-1, 48], [60, 10]]
    for e, pos in enumerate(far):
        s["player_position"][e] = pos
    s["timestep"][6] = INT32_MAX
    s["timestep"][15] = INT32_MIN
    s["monsters_killed"][7] = INT32_MAX
    s["player_xp"][7] = INT32_MAX
    s["player_xp"][14] = INT32_MIN
    s["growing_plants_age"][8] = INT32_MAX
    s["growing_plants_mask"][8] = True
    s["player_level"][9] = 8  # the boss floor: spawns read FLOOR_MOB_MAPPING[boss_progress]
    s["boss_progress"][9] = 9
    s["boss_timesteps_to_spawn_this_round"][9] = 3
    for k in ("player_dexterity", "player_intelligence", "player_strength"):
        s[k][10:12] = 99
    s["player_energy"][10], s["player_mana"][10], s["player_food"][10], s["player_drink"][10] = 205, 303, 205, 205
    s["is_sleeping"][10] = True
    s["player_health"][11] = 107.0
    s["player_recover_mana"][12], s["player_hunger"][12] = np.float32(3e38), np.float32(-3e38)
    s["player_fatigue"][12], s["player_recover"][12] = np.float32(3e38), np.float32(-3e38)
    s["player_recover_mana"][13], s["player_intelligence"][13] = np.float32(29.0), 99
    return s


@pytest.mark.parametrize("god_mode", [True, False], ids=["god_mode", "plain"])
def test_domain_edges_lockstep_with_upstream(god_mode):
    params = DEFAULT_PARAMS.replace(god_mode=god_mode, max_attribute=99, max_timesteps=INT32_MAX)
    init = edge_states()
    n = init["timestep"].shape[0]
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=n, backend="c", god_mode=god_mode, max_attribute=99,
                         max_timesteps=INT32_MAX)
    env.set_state(init)  # every edge is inside the domain
    rng = np.random.default_rng(41)
    keys = rng.integers(0, 2**32, size=(STEPS, n, 2), dtype=np.uint32)
    actions = rng.choice(ACTIONS, size=(STEPS, n)).astype(np.int32)
    dig, odig, rew, done = (np.asarray(x) for x in _rollout()(ref.to_env_state(init), jnp.asarray(keys),
                                                              jnp.asarray(actions), params))
    for t in range(STEPS):
        obs, reward, c_done, _ = env.step_with_keys(actions[t], keys[t])
        state = env.get_state()
        ours = np.stack([ref.digest_np(state[name]) for name in ref.leaf_names()], axis=1)
        same = (np.array_equal(ours, dig[t]) and np.array_equal(ref.digest_np(obs), odig[t])
                and np.array_equal(reward.view(np.uint32), rew[t].astype(np.float32).view(np.uint32))
                and np.array_equal(c_done, done[t]))
        if not same:
            name_the_difference(init, keys, actions, t, params, state, obs)
        env.set_state(state)  # and the state stays inside the domain
    final = env.get_state()
    assert final["timestep"][6] == INT32_MIN + STEPS - 1  # wrapped, as upstream's int32
    if god_mode:
        assert final["player_position"][0, 1] != -3000 or final["player_position"][0, 0] != 24  # it walked


@functools.lru_cache(maxsize=None)
def _rollout():
    """jit(scan of vmapped step_env) with the params an argument: (leaf digests [T, N, L], obs
    digests [T, N], rewards, dones)."""
    vstep = jax.vmap(ENV.step_env, in_axes=(0, 0, 0, None))

    def run(state, keys, actions, params):
        def body(state, xs):
            obs, state, reward, done, _ = vstep(xs[0], state, xs[1], params)
            leaves = jax.tree_util.tree_leaves(state)
            return state, (jnp.stack([ref._digest_jnp(leaf) for leaf in leaves], axis=1), ref._digest_jnp(obs),
                           reward, done)

        return jax.lax.scan(body, state, (keys, actions))[1]

    return jax.jit(run)


def name_the_difference(init, keys, actions, t, params, state, obs):
    flat = init
    for s in range(t + 1):
        j_obs, flat, _, _, _ = ref.step_env(flat, actions[s], keys[s], params)
    diff = ref.first_difference(state, flat)
    if diff is not None:
        name, e, idx, a, b = diff
        pytest.fail(f"step {t}: env {e} (action {actions[t, e]}): leaf {name!r} index {idx}: C {a!r} vs JAX {b!r}")
    bad = np.argwhere(obs.view(np.uint32) != j_obs.view(np.uint32))
    if bad.size:
        e, i = bad[0]
        pytest.fail(f"step {t}: env {e}: obs index {i}: C {obs[e, i]!r} vs JAX {j_obs[e, i]!r}")
    pytest.fail(f"step {t}: reward or done differ")
