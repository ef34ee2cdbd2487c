"""pycraftax.jax on a GPU (the CUDA FFI handlers) against the C backend: a jitted lax.scan of vmapped
step_env from jitted vmapped resets, obs, reward and done every step and every state leaf at the end;
then the auto-reset env inside a scan. Skipped, saying why, where JAX has no GPU or the CUDA handlers
were not built (cuda/gpu_checks.sh runs it on a GPU machine)."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
if jax.default_backend() != "gpu":
    pytest.skip(f"JAX has no GPU backend here (default backend: {jax.default_backend()})", allow_module_level=True)

import jax.numpy as jnp  # noqa: E402

import pycraftax  # noqa: E402

pj = pytest.importorskip("pycraftax.jax", reason="pycraftax.jax's FFI library is not built")
from pycraftax.jax import _ffi  # noqa: E402

if not _ffi.CUDA_AVAILABLE:
    pytest.skip("pycraftax.jax's CUDA handlers were not built (pip install with nvcc and jax visible)",
                allow_module_level=True)

N, T = 256, 120


def test_scan_of_step_env_equals_the_c_backend():
    env = pj.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=False)
    params = env.default_params
    keys = jax.random.split(jax.random.PRNGKey(0), N)
    obs0, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    assert list(jax.tree.leaves(state)[0].devices())[0].platform == "gpu"
    actions = np.random.default_rng(0).integers(0, 43, size=(T, N)).astype(np.int32)
    step_keys = jax.random.split(jax.random.PRNGKey(1), T * N).reshape(T, N, 2)

    def body(s, xs):
        k, a = xs
        o, s, r, d, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(k, s, a, params)
        return s, (o, r, d)

    final, (obs, rewards, dones) = jax.jit(lambda s: jax.lax.scan(body, s, (step_keys, jnp.asarray(actions))))(state)
    c = pycraftax.make("Craftax-Symbolic-v1", num_envs=N, backend="c")
    c_obs, _ = c.reset_with_keys(np.asarray(keys))
    np.testing.assert_array_equal(np.asarray(obs0), c_obs)
    for t in range(T):
        c_obs, c_reward, c_done, _ = c.step_with_keys(actions[t], np.asarray(step_keys[t]))
        np.testing.assert_array_equal(np.asarray(obs[t]), c_obs, err_msg=f"obs, step {t}")
        np.testing.assert_array_equal(np.asarray(rewards[t]), c_reward, err_msg=f"reward, step {t}")
        np.testing.assert_array_equal(np.asarray(dones[t]), c_done, err_msg=f"done, step {t}")
    for name, value in c.get_state().items():
        np.testing.assert_array_equal(np.asarray(final.leaf(name)), value, err_msg=name)


def test_auto_reset_scan_runs_and_ends_episodes():
    env = pj.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=True)
    params = env.default_params.replace(max_timesteps=50)
    keys = jax.random.split(jax.random.PRNGKey(2), N)
    _, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    step_keys = jax.random.split(jax.random.PRNGKey(3), 60 * N).reshape(60, N, 2)

    def body(s, k):
        o, s, r, d, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(k, s, jnp.zeros(N, jnp.int32), params)
        return s, d.sum()

    _, ends = jax.jit(lambda s: jax.lax.scan(body, s, step_keys))(state)
    assert int(ends.sum()) >= N  # every env reached the 50-step limit at least once
