"""pycraftax.jax's pixel envs, Craftax-Pixels-v1 and Craftax-Classic-Pixels-v1
(make_craftax_env_from_name(id, ...)), inside jax.jit, jax.vmap and lax.scan against the C
backend's pixel envs, whose obs conformance/test_pixels.py checks against craftax 1.6.1 pixel
for pixel: reset worlds (from the key itself, as upstream's pixel envs), step_env and the
auto-reset step (episodes ended by the time limit), every obs pixel, reward, done and the state
bytes. (Upstream's pixel envs are not compiled here: that takes minutes; the C env stands in.)"""

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
# env id: (upstream's NoAutoReset name, obs shape, actions, the C API's auto-reset step, params)
GAMES = {
    "Craftax-Pixels-v1": ("Craftax-Pixels-NoAutoReset-v1", (130, 110, 3), 43, "craftax_pixels_step_autoreset",
                          pjax.EnvParams),
    "Craftax-Classic-Pixels-v1": ("Craftax-Classic-Pixels-NoAutoReset-v1", (63, 63, 3), 17,
                                  "craftax_classic_pixels_step_autoreset", pjax.ClassicEnvParams),
}


def c_step_autoreset(env, env_id: str, actions: np.ndarray, keys: np.ndarray):
    """The C API's pixel auto-reset step on the C env's states with explicit per-env keys."""
    _, shape, _, function, _ = GAMES[env_id]
    obs = np.empty((N, *shape), np.float32)
    reward, done = np.empty(N, np.float32), np.empty(N, np.uint8)
    states = env._native_host_states()
    rc = getattr(lib, function)(ptr(states, "void *"), ptr(actions, "int32_t *"), ptr(keys, "uint32_t *"), N,
                                env._c_params, ptr(obs, "float *"), ffi.NULL, ptr(reward, "float *"),
                                ptr(done, "uint8_t *"), ffi.NULL, ffi.NULL, ffi.NULL, ptr(env._atlas, "float *"))
    assert rc == 0
    return obs, reward, done.astype(bool)


@pytest.mark.parametrize("env_id", list(GAMES))
@pytest.mark.parametrize("auto_reset", [False, True])
def test_jax_pixel_env_equals_the_c_pixel_env(env_id, auto_reset):
    no_reset_name, shape, num_actions, _, params_cls = GAMES[env_id]
    env = pjax.make_craftax_env_from_name(env_id, auto_reset=auto_reset)
    assert env.name == (env_id if auto_reset else no_reset_name)
    assert env.observation_space(env.default_params).shape == shape
    assert env.num_actions == num_actions
    params = params_cls(max_timesteps=MAX_T)
    keys = jax.random.split(jax.random.PRNGKey(3), N)
    obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    assert state.env_id == env_id
    c_env = pycraftax.make(env_id, num_envs=N, backend="c", max_timesteps=MAX_T)
    c_obs, _ = c_env.reset_with_keys(np.asarray(keys, np.uint32))
    assert obs.shape == (N, *shape)
    np.testing.assert_array_equal(np.asarray(obs), c_obs)
    np.testing.assert_array_equal(np.asarray(state.data), c_env._native_host_states())

    rng = np.random.default_rng(0)
    actions = rng.integers(0, num_actions, (STEPS, N)).astype(np.int32)
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
            c_obs, c_reward, c_done = c_step_autoreset(c_env, env_id, actions[t], keys_t)
        else:
            c_obs, c_reward, c_done, _ = c_env.step_with_keys(actions[t], keys_t)
        np.testing.assert_array_equal(np.asarray(obs[t]), c_obs, err_msg=f"step {t}")
        np.testing.assert_array_equal(np.asarray(reward[t]), c_reward, err_msg=f"step {t}")
        np.testing.assert_array_equal(np.asarray(done[t]), c_done, err_msg=f"step {t}")
        np.testing.assert_array_equal(np.asarray(data[t]), c_env._native_host_states(), err_msg=f"step {t}")
    c_env.close()


@pytest.mark.parametrize("pixel_id, symbolic_id", [("Craftax-Pixels-v1", "Craftax-Symbolic-v1"),
                                                   ("Craftax-Classic-Pixels-v1", "Craftax-Classic-Symbolic-v1")])
def test_pixel_and_symbolic_states_do_not_mix(pixel_id, symbolic_id):
    pixel = pjax.make_craftax_env_from_name(pixel_id, auto_reset=False)
    symbolic = pjax.make_craftax_env_from_name(symbolic_id, auto_reset=False)
    _, state = pixel.reset(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match=f"is a state of '{pixel_id}'"):
        symbolic.step(jax.random.PRNGKey(1), state, 0)
    upstream_state = pjax.to_upstream_state(state)  # the same EnvState leaves as the symbolic env's
    assert type(upstream_state).__module__ == ("craftax.craftax_classic.envs.craftax_state" if "Classic" in pixel_id
                                               else "craftax.craftax.craftax_state")
    again = pjax.from_upstream_state(upstream_state, pixel_id)
    assert again.env_id == pixel_id
    np.testing.assert_array_equal(np.asarray(again.data), np.asarray(state.data))
    with pytest.raises(ValueError, match="unknown or unsupported env"):
        pjax.make_craftax_env_from_name(pixel_id.replace("-v1", "-AutoReset-v1"), auto_reset=False)
    assert pjax.make_craftax_env_from_name(pixel_id.replace("-v1", "-AutoReset-v1"), auto_reset=True).name == pixel_id
