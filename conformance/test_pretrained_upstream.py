"""The shipped policy (pycraftax.pretrained) played in the official craftax 1.6.1 env and in
pycraftax's C env from the same keys: the same obs at every step, so the same actions, rewards,
ends and episode returns. The policy's actions come from each env's own obs (pycraftax.train.policy,
NumPy), so any difference in an obs would show as diverging actions and returns.

    python -m conformance.test_pretrained_upstream [NUM_ENVS] [MAX_STEPS]   # full episodes, printed
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

pytest.importorskip("craftax")
pytestmark = pytest.mark.jax

from conformance import upstream  # noqa: E402  (sets JAX's flags before jax is imported)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import pycraftax  # noqa: E402
from pycraftax import pretrained  # noqa: E402
from pycraftax.train.policy import Policy  # noqa: E402


def play_both(name: str, num_envs: int, max_steps: int, seed: int = 0) -> dict:
    """Each env's first episode in both envs (or max_steps steps): returns, lengths, and whether
    every step's obs, reward and done were equal."""
    policy = Policy(pretrained.load(name))
    env, params = upstream.ENV, upstream.DEFAULT_PARAMS
    step = jax.jit(jax.vmap(env.step_env, in_axes=(0, 0, 0, None)))
    keys = np.asarray(jax.random.split(jax.random.PRNGKey(seed), num_envs))
    up_obs, up_state = jax.jit(jax.vmap(env.reset_env, in_axes=(0, None)))(jnp.asarray(keys), params)
    ours = pycraftax.make(policy.env_id, num_envs=num_envs, backend="c")
    our_obs, _ = ours.reset_with_keys(keys)
    rngs = [np.random.default_rng(seed), np.random.default_rng(seed)]
    hs = [policy.initial_state(num_envs), policy.initial_state(num_envs)]
    dones = [np.zeros(num_envs, bool), np.zeros(num_envs, bool)]
    returns, lengths = np.zeros((2, num_envs)), np.zeros(num_envs, np.int64)
    finished = np.zeros(num_envs, bool)
    equal = bool(np.array_equal(np.asarray(up_obs), our_obs))
    for t in range(max_steps):
        acts = []
        for side, obs in enumerate((np.asarray(up_obs), our_obs)):
            hs[side], logits = policy.step(obs, dones[side], hs[side])
            acts.append(policy.act(rngs[side], logits, greedy=False))
        step_keys = np.asarray(jax.random.split(jax.random.PRNGKey(10_000 + t), num_envs))
        up_obs, up_state, up_reward, up_done, _ = step(jnp.asarray(step_keys), up_state, jnp.asarray(acts[0]), params)
        our_obs, our_reward, our_done, _ = ours.step_with_keys(acts[1], step_keys)
        up_reward, up_done = np.asarray(up_reward), np.asarray(up_done)
        equal &= bool(np.array_equal(acts[0], acts[1]) and np.array_equal(np.asarray(up_obs), our_obs)
                      and np.array_equal(up_reward, our_reward) and np.array_equal(up_done, our_done))
        live = ~finished
        returns[0, live] += up_reward[live]
        returns[1, live] += our_reward[live]
        lengths[live] += 1
        finished |= up_done | our_done
        dones = [up_done, our_done]
        if finished.all():
            break
    ours.close()
    return dict(equal=equal, upstream_returns=returns[0], pycraftax_returns=returns[1], lengths=lengths,
                finished=finished)


def test_shipped_policy_plays_the_same_in_the_official_env():
    r = play_both("fast-1e9", num_envs=3, max_steps=250)
    assert r["equal"]
    np.testing.assert_array_equal(r["upstream_returns"], r["pycraftax_returns"])
    assert r["upstream_returns"].max() > 5  # the policy plays (random actions score about 1)


def test_unknown_pretrained_name_is_refused():
    with pytest.raises(ValueError, match=r"pretrained policy must be one of \['fast-1e9'\]"):
        pretrained.load("fast-2e9")


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    res = play_both("fast-1e9", n, steps)
    print(f"every step equal: {res['equal']}; finished {int(res['finished'].sum())}/{n}")
    print("upstream returns: ", np.round(res["upstream_returns"], 2).tolist())
    print("pycraftax returns:", np.round(res["pycraftax_returns"], 2).tolist())
    print("lengths:", res["lengths"].tolist())
