"""pycraftax.jax's Craftax-Pixels-v1 (make_craftax_env_from_name("Craftax-Pixels-v1", ...))
inside jax.jit, jax.vmap and lax.scan against the C backend's pixel env, whose obs
conformance/test_pixels.py checks against craftax 1.6.1 pixel for pixel: reset worlds (from
the key itself, as upstream's pixel env), step_env and the auto-reset step (episodes ended by
the time limit), every obs pixel, reward, done and the state bytes."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("craftax")

from conformance import upstream  # noqa: E402,F401  (sets XLA_FLAGS before jax is imported)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import pycraftax  # noqa: E402
import pycraftax.jax as pjax  # noqa: E402
from pycraftax._native import ffi, lib, ptr  # noqa: E402

pytestmark = pytest.mark.jax

N, STEPS, MAX_T = 4, 12, 5


def c_step_autoreset(env, actions: np.ndarray, keys: np.ndarray):
    """craftax_pixels_step_autoreset on the C env's states with explicit per-env keys."""
    obs = np.empty((N, 130, 110, 3), np.float32)
    reward, done = np.empty(N, np.float32), np.empty(N, np.uint8)
    states = env._native_host_states()
    rc = lib.craftax_pixels_step_autoreset(ptr(states, "void *"), ptr(actions, "int32_t *"), ptr(keys, "uint32_t *"),
                                           N, env._c_params, ptr(obs, "float *"), ffi.NULL, ptr(reward, "float *"),
                                           ptr(done, "uint8_t *"), ffi.NULL, ffi.NULL, ffi.NULL, ptr(env._atlas,
                                                                                                    "float *"))
    assert rc == 0
    return obs, reward, done.astype(bool)


@pytest.mark.parametrize("auto_reset", [False, True])
def test_jax_pixel_env_equals_the_c_pixel_env(auto_reset):
    env = pjax.make_craftax_env_from_name("Craftax-Pixels-v1", auto_reset=auto_reset)
    assert env.name == ("Craftax-Pixels-v1" if auto_reset else "Craftax-Pixels-NoAutoReset-v1")
    assert env.observation_space(env.default_params).shape == (130, 110, 3)
    params = pjax.EnvParams(max_timesteps=MAX_T)
    keys = jax.random.split(jax.random.PRNGKey(3), N)
    obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    c_env = pycraftax.make("Craftax-Pixels-v1", num_envs=N, backend="c", max_timesteps=MAX_T)
    c_obs, _ = c_env.reset_with_keys(np.asarray(keys, np.uint32))
    np.testing.assert_array_equal(np.asarray(obs), c_obs)
    np.testing.assert_array_equal(np.asarray(state.data), c_env._native_host_states())

    rng = np.random.default_rng(0)
    actions = rng.integers(0, 43, (STEPS, N)).astype(np.int32)
    step_keys = jax.random.split(jax.random.PRNGKey(9), STEPS * N).reshape(STEPS, N, 2)

    def body(state, xs):
        k, a = xs
        obs, state, reward, done, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(k, state, a, params)
        return state, (obs, reward, done, state.data)

    _, (obs, reward, done, data) = jax.jit(lambda s: jax.lax.scan(body, s, (step_keys, jnp.asarray(actions))))(state)
    assert int(np.asarray(done).sum()) >= N  # every episode hit the time limit
    for t in range(STEPS):
        keys_t = np.asarray(step_keys[t], np.uint32)
        if auto_reset:
            c_obs, c_reward, c_done = c_step_autoreset(c_env, actions[t], keys_t)
        else:
            c_obs, c_reward, c_done, _ = c_env.step_with_keys(actions[t], keys_t)
        np.testing.assert_array_equal(np.asarray(obs[t]), c_obs, err_msg=f"step {t}")
        np.testing.assert_array_equal(np.asarray(reward[t]), c_reward, err_msg=f"step {t}")
        np.testing.assert_array_equal(np.asarray(done[t]), c_done, err_msg=f"step {t}")
        np.testing.assert_array_equal(np.asarray(data[t]), c_env._native_host_states(), err_msg=f"step {t}")
    c_env.close()


def test_pixel_and_symbolic_states_do_not_mix():
    pixel = pjax.make_craftax_env_from_name("Craftax-Pixels-v1", auto_reset=False)
    symbolic = pjax.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=False)
    _, state = pixel.reset(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="is a state of 'Craftax-Pixels-v1'"):
        symbolic.step(jax.random.PRNGKey(1), state, 0)
    assert pjax.to_upstream_state(state).player_level.shape == ()  # the same EnvState leaves
    with pytest.raises(ValueError, match="unknown or unsupported env"):
        pjax.make_craftax_env_from_name("Craftax-Pixels-AutoReset-v1", auto_reset=False)
