"""The check of step()'s info["final_obs"] on any backend and game: each step's final_obs rows of
the envs that ended must be the obs of the state they ended in, which a second env rebuilds by
loading the states from before the step and running upstream's no-auto-reset step_env on them
with the keys the auto-resetting step used (tests/test_final_obs.py for C,
conformance/test_cuda_final_obs.py for CUDA)."""

from __future__ import annotations

import numpy as np

from pycraftax import jax_random


def _host(array) -> np.ndarray:
    return array if isinstance(array, np.ndarray) else np.asarray(array)


def step_env_keys(env, sub_key: np.ndarray) -> np.ndarray:
    """uint32 [N, 2]: the step_env key of every env in env.step(sub_key): split(k_i)[0] of
    k = split(sub, N) with resets="auto"; split(split(sub)[1], N) (the wrapper's step_parent,
    craftax_optimistic_keys) with resets="optimistic"."""
    n = env.num_envs
    if env.resets == "optimistic":
        return jax_random.split(jax_random.split(sub_key, 2)[1], n)
    return np.stack([jax_random.split(k, 2)[0] for k in jax_random.split(sub_key, n)])


def kill(env, rng, fraction: float) -> None:
    """Health 0 in about `fraction` of the envs, so that they die in their next step."""
    state = env.get_state()
    dead = rng.random(env.num_envs) < fraction
    health = state["player_health"]
    state["player_health"] = np.where(dead, np.zeros_like(health), health).astype(health.dtype)
    env.set_state(state)


def check_final_obs(env, reference, steps: int, seed: int, kill_every: int = 0) -> dict[str, int]:
    """Step `env` (report_final_obs on) `steps` times with random actions and compare every
    step's final_obs with `reference` (a no-auto-reset env of the same game, params and
    num_envs on any backend) stepped from the same states with step_with_keys. Returns how many
    episodes ended by the rules and by the time limit, so that a caller can assert both."""
    rng = np.random.default_rng(seed)
    env.report_final_obs = True
    env.reset(seed=seed)
    counts = {"terminated": 0, "truncated": 0}
    for t in range(steps):
        if kill_every and t % kill_every == kill_every - 1:
            kill(env, rng, 0.3)
        before = env.get_state()
        _, sub = jax_random.split(env.key, 2)
        actions = rng.integers(0, env.num_actions, env.num_envs).astype(np.int32)
        _, _, terminated, truncated, info = env.step(actions)
        ended = _host(terminated) | _host(truncated)
        final_obs = _host(info["final_obs"])
        assert final_obs.shape == (env.num_envs, *env.obs_shape) and final_obs.dtype == np.float32
        reference.set_state(before)
        ref_obs, _, ref_done, _ = reference.step_with_keys(actions, step_env_keys(env, sub))
        ref_obs = _host(ref_obs)
        np.testing.assert_array_equal(_host(ref_done), ended, err_msg=f"step {t}: dones")
        np.testing.assert_array_equal(final_obs[ended], ref_obs[ended], err_msg=f"step {t}: final_obs of ended envs")
        np.testing.assert_array_equal(_host(reference.observe())[ended], ref_obs[ended],
                                      err_msg=f"step {t}: observe() of the terminal states")
        assert not final_obs[~ended].any(), f"step {t}: final_obs rows of envs that did not end are not zero"
        counts["terminated"] += int(_host(terminated).sum())
        counts["truncated"] += int(_host(truncated).sum())
    return counts


def assert_same_without_final_obs(make_env, steps: int, seed: int) -> None:
    """Two envs from make_env(), one reporting final_obs: the same obs, rewards, flags, info
    (final_obs aside) and states at every step."""
    rng = np.random.default_rng(seed)
    plain, reporting = make_env(), make_env()
    reporting.report_final_obs = True
    plain.reset(seed=seed)
    reporting.reset(seed=seed)
    for t in range(steps):
        actions = rng.integers(0, plain.num_actions, plain.num_envs).astype(np.int32)
        a, b = plain.step(actions), reporting.step(actions)
        for name, x, y in zip(("obs", "reward", "terminated", "truncated"), a[:4], b[:4]):
            np.testing.assert_array_equal(_host(x), _host(y), err_msg=f"step {t}: {name}")
        assert "final_obs" not in a[4] and "final_obs" in b[4]
        assert set(a[4]) == set(b[4]) - {"final_obs"}
        for name in a[4]:
            np.testing.assert_array_equal(_host(a[4][name]), _host(b[4][name]), err_msg=f"step {t}: info {name}")
        plain_state, reporting_state = plain.get_state(), reporting.get_state()
        for name in plain_state:
            np.testing.assert_array_equal(plain_state[name], reporting_state[name], err_msg=f"step {t}: {name}")
