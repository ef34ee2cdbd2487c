"""pycraftax.jax against craftax 1.6.1 inside jax.jit(jax.lax.scan(jax.vmap(step))): every
state leaf (through to_upstream_state), obs, reward, done and info of every step, bit for bit,
from the same keys and actions; with auto-reset (episodes ending by death, from injected dying
players, and by the time limit) and without; and the official wrappers (OptimisticResetVecEnv
as conformance/wrappers.py restates it, under Craftax_Baselines' LogWrapper) over both envs.

The jitted lockstep functions are built once per module (lru_cache): upstream's compiles are
the cost of this file.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("craftax")

from conformance import upstream  # noqa: E402,F401  (sets XLA_FLAGS before jax is imported)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from craftax import craftax_env  # noqa: E402

import pycraftax.jax as pjax  # noqa: E402
from conformance.wrappers import optimistic_reset_step  # noqa: E402

pytestmark = pytest.mark.jax

NUM_ENVS = 4
NUM_STEPS = 200
MAX_TIMESTEPS = 50
DYING_ENVS = 2


def leaves_by_name(tree) -> dict:
    """{dotted path: leaf} of a pytree (EnvState, info dicts, LogEnvState)."""
    out = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        out[".".join(str(getattr(p, "name", getattr(p, "key", getattr(p, "idx", p)))) for p in path)] = leaf
    return out


def _bits(x):
    x = jnp.asarray(x)
    return jax.lax.bitcast_convert_type(x, jnp.int32) if x.dtype == jnp.float32 else x


def mismatches(ours: dict, theirs: dict, prefix: str, ulps: dict | None = None) -> dict:
    """{prefix/name: bool, True where the values differ in any bit (or by more than ulps[name]
    units in the last place)}; the names, shapes and dtypes are checked at trace time."""
    assert sorted(ours) == sorted(theirs), (prefix, sorted(set(ours) ^ set(theirs)))
    out = {}
    for name, theirs_value in theirs.items():
        a, b = jnp.asarray(ours[name]), jnp.asarray(theirs_value)
        assert (a.shape, a.dtype) == (b.shape, b.dtype), (prefix, name, a.shape, a.dtype, b.shape, b.dtype)
        allowed = (ulps or {}).get(name, 0)
        out[f"{prefix}/{name}"] = jnp.any(jnp.abs(_bits(a) - _bits(b)) > allowed) if allowed else jnp.any(
            _bits(a) != _bits(b))
    return out


# Upstream's auto-reset step stores light_level either fused or unfused (1 - (a*a)*a), as XLA
# fuses the program it sits in: the two differ by 1 ulp on ~40% of steps (CONFORMANCE.md,
# quirk 5). The C reference reproduces the standalone jit(vmap(env.step)); inside this test's
# larger program XLA fuses it the other way, so that one leaf is compared to 1 ulp there.
AUTO_RESET_ULPS = {"light_level": 1}


def step_mismatches(ours_out, theirs_out, ulps: dict | None = None) -> dict:
    (o1, s1, r1, d1, i1), (o2, s2, r2, d2, i2) = ours_out, theirs_out
    flags = mismatches(leaves_by_name(pjax.to_upstream_state(s1)), leaves_by_name(s2), "state", ulps)
    flags.update(mismatches({"obs": o1, "reward": r1, "done": d1}, {"obs": o2, "reward": r2, "done": d2}, "out"))
    flags.update(mismatches(i1, i2, "info"))
    return flags


def first_failure(flags: dict) -> str | None:
    """'step t: names' of the first step where any flag [T] is set, else None."""
    names = sorted(flags)
    table = np.stack([np.asarray(flags[n]) for n in names], axis=1)
    bad = np.argwhere(table)
    if len(bad) == 0:
        return None
    t = int(bad[0, 0])
    return f"step {t}: " + ", ".join(names[j] for j in np.flatnonzero(table[t]))


@functools.lru_cache(maxsize=None)
def lockstep_fn(auto_reset: bool):
    """jit((key, our state, upstream state, actions [T, N], our params, upstream params) ->
    (per-step mismatch flags, upstream dones [T, N], ended-by-death [T, N]))."""
    ours = pjax.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=auto_reset)
    theirs = craftax_env.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=auto_reset)
    our_step = jax.vmap(ours.step, in_axes=(0, 0, 0, None))
    their_step = jax.vmap(theirs.step, in_axes=(0, 0, 0, None))

    def run(key, our_state, their_state, actions, our_params, their_params):
        def body(carry, action):
            key, s_ours, s_theirs = carry
            key, sub = jax.random.split(key)
            keys = jax.random.split(sub, NUM_ENVS)
            out_ours = our_step(keys, s_ours, action, our_params)
            out_theirs = their_step(keys, s_theirs, action, their_params)
            done = out_theirs[3]
            by_death = done & (s_theirs.timestep + 1 < their_params.max_timesteps)
            flags = step_mismatches(out_ours, out_theirs, AUTO_RESET_ULPS if auto_reset else None)
            return (key, out_ours[1], out_theirs[1]), (flags, done, by_death)

        _, outs = jax.lax.scan(body, (key, our_state, their_state), actions)
        return outs

    return jax.jit(run)


@functools.lru_cache(maxsize=None)
def reset_fns():
    ours = pjax.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=True)
    theirs = craftax_env.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=True)
    return (jax.jit(jax.vmap(ours.reset, in_axes=(0, None))), jax.jit(jax.vmap(theirs.reset, in_axes=(0, None))))


def start_states(seed: int, dying: int):
    """(our state, upstream state) of NUM_ENVS fresh worlds, the first `dying` of them with a
    starving player on 1 health (they die within a few steps whatever the actions)."""
    our_reset, their_reset = reset_fns()
    keys = jax.random.split(jax.random.PRNGKey(seed), NUM_ENVS)
    params = upstream.DEFAULT_PARAMS
    our_obs, our_state = our_reset(keys, pjax.EnvParams())
    their_obs, their_state = their_reset(keys, params)
    flags = mismatches(leaves_by_name(pjax.to_upstream_state(our_state)), leaves_by_name(their_state), "reset")
    flags.update(mismatches({"obs": our_obs}, {"obs": their_obs}, "reset"))
    assert not any(bool(v) for v in flags.values()), [k for k, v in flags.items() if bool(v)]
    dying_mask = jnp.arange(NUM_ENVS) < dying
    their_state = their_state.replace(
        player_health=jnp.where(dying_mask, jnp.float32(1.0), their_state.player_health),
        player_food=jnp.where(dying_mask, 0, their_state.player_food),
        player_drink=jnp.where(dying_mask, 0, their_state.player_drink),
        player_hunger=jnp.where(dying_mask, jnp.float32(0.0), their_state.player_hunger),
    )
    return pjax.from_upstream_state(their_state), their_state


@pytest.mark.parametrize("auto_reset", [True, False], ids=["auto_reset", "no_auto_reset"])
def test_scan_of_vmapped_steps_matches_upstream(auto_reset):
    our_state, their_state = start_states(seed=3, dying=DYING_ENVS)
    actions = jnp.asarray(np.random.default_rng(7).integers(0, 43, size=(NUM_STEPS, NUM_ENVS)), jnp.int32)
    their_params = upstream.DEFAULT_PARAMS.replace(max_timesteps=MAX_TIMESTEPS)
    our_params = pjax.EnvParams(max_timesteps=MAX_TIMESTEPS)
    flags, done, by_death = lockstep_fn(auto_reset)(
        jax.random.PRNGKey(11), our_state, their_state, actions, our_params, their_params
    )
    failure = first_failure(flags)
    assert failure is None, f"pycraftax.jax differs from craftax at {failure}"
    done, by_death = np.asarray(done), np.asarray(by_death)
    if auto_reset:
        # both ways an episode ends, several times, and play continues after each
        assert by_death.sum() >= DYING_ENVS, by_death.sum()
        assert (done & ~by_death).sum() >= NUM_ENVS * (NUM_STEPS // MAX_TIMESTEPS - 1), (done & ~by_death).sum()
    else:
        # without resets an ended episode stays ended
        assert done[-1].all() and by_death.any()


def log_wrapper_step(step):
    """Craftax_Baselines' LogWrapper.step (wrappers.py) around `step` (rng, state, action) ->
    (obs, state, reward, done, info, ...), restated for the test: the log state is
    (env_state, episode_returns, episode_lengths, returned_episode_returns,
    returned_episode_lengths, timestep) as a dict."""

    def wrapped(rng, state, action):
        obs, env_state, reward, done, info, *_ = step(rng, state["env_state"], action)
        new_episode_return = state["episode_returns"] + reward
        new_episode_length = state["episode_lengths"] + 1
        state = {
            "env_state": env_state,
            "episode_returns": new_episode_return * (1 - done),
            "episode_lengths": new_episode_length * (1 - done),
            "returned_episode_returns": state["returned_episode_returns"] * (1 - done) + new_episode_return * done,
            "returned_episode_lengths": state["returned_episode_lengths"] * (1 - done) + new_episode_length * done,
            "timestep": state["timestep"] + 1,
        }
        info = dict(info)
        info["returned_episode_returns"] = state["returned_episode_returns"]
        info["returned_episode_lengths"] = state["returned_episode_lengths"]
        info["timestep"] = state["timestep"]
        info["returned_episode"] = done
        return obs, state, reward, done, info

    return wrapped


def log_state(env_state):
    zeros_f, zeros_i = jnp.zeros(NUM_ENVS, jnp.float32), jnp.zeros(NUM_ENVS, jnp.int32)
    return {"env_state": env_state, "episode_returns": zeros_f, "episode_lengths": zeros_i,
            "returned_episode_returns": zeros_f, "returned_episode_lengths": zeros_i, "timestep": zeros_i}


WRAPPER_STEPS = 60
WRAPPER_MAX_TIMESTEPS = 12
RESET_RATIO = 2


@functools.lru_cache(maxsize=None)
def wrapped_lockstep_fn():
    ours = pjax.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=False)
    theirs = craftax_env.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=False)
    our_step = log_wrapper_step(optimistic_reset_step(
        ours, NUM_ENVS, RESET_RATIO, pjax.EnvParams(max_timesteps=WRAPPER_MAX_TIMESTEPS)))
    their_step = log_wrapper_step(optimistic_reset_step(
        theirs, NUM_ENVS, RESET_RATIO, upstream.DEFAULT_PARAMS.replace(max_timesteps=WRAPPER_MAX_TIMESTEPS)))

    def run(key, our_state, their_state, actions):
        def body(carry, action):
            key, s_ours, s_theirs = carry
            key, sub = jax.random.split(key)
            o1, s1, r1, d1, i1 = our_step(sub, s_ours, action)
            o2, s2, r2, d2, i2 = their_step(sub, s_theirs, action)
            flags = step_mismatches((o1, s1["env_state"], r1, d1, i1), (o2, s2["env_state"], r2, d2, i2))
            logs = {k: v for k, v in s1.items() if k != "env_state"}
            flags.update(mismatches(logs, {k: v for k, v in s2.items() if k != "env_state"}, "log"))
            return (key, s1, s2), (flags, d2, i2["returned_episode_returns"])

        _, outs = jax.lax.scan(body, (key, our_state, their_state), actions)
        return outs

    return jax.jit(run)


def test_log_and_optimistic_wrappers_over_our_env_match_upstream():
    our_state, their_state = start_states(seed=5, dying=1)
    actions = jnp.asarray(np.random.default_rng(9).integers(0, 43, size=(WRAPPER_STEPS, NUM_ENVS)), jnp.int32)
    flags, done, returned = wrapped_lockstep_fn()(
        jax.random.PRNGKey(13), log_state(our_state), log_state(their_state), actions
    )
    failure = first_failure(flags)
    assert failure is None, f"the wrappers over pycraftax.jax differ from those over craftax at {failure}"
    assert np.asarray(done).sum() >= NUM_ENVS * (WRAPPER_STEPS // WRAPPER_MAX_TIMESTEPS - 1)
