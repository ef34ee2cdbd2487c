"""pycraftax.jax on a GPU (the CUDA FFI handlers): a jitted lax.scan of vmapped step_env from jitted
vmapped resets against the C backend (obs, reward and done every step, every state leaf at the end);
the native auto-reset step against the CPU handlers (the C reference) over a scan where episodes end,
every output and the state bytes; params as the FFI attribute (closed over) against params as the
operand (traced); out-of-range actions (NOOP on the device, reported by raise_if_invalid_actions and
by the next call); concurrent calls from two threads. Skipped, saying why, where JAX has no GPU or
the CUDA handlers were not built (cuda/gpu_checks.sh runs it on a GPU machine)."""

from __future__ import annotations

import threading

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
CPU = jax.devices("cpu")[0]
GPU = jax.devices("gpu")[0]


def _keys(seed: int, shape: tuple) -> np.ndarray:
    return np.asarray(jax.random.split(jax.random.PRNGKey(seed), int(np.prod(shape)))).reshape(shape + (2,))


def _auto_reset_rollout(env, params, closed_over: bool):
    """jit((reset keys [n, 2], step keys [t, n, 2], actions [t, n]) -> (reset obs, final state, per-step
    outputs)), with params closed over (the FFI attribute) or as a jit argument (the operand)."""

    def rollout(keys, step_keys, actions, params):
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)

        def body(s, xs):
            k, a = xs
            o, s, r, d, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(k, s, a, params)
            return s, (o, r, d, info)

        final, outs = jax.lax.scan(body, state, (step_keys, actions))
        return obs, final, outs

    if closed_over:
        return jax.jit(lambda k, sk, a: rollout(k, sk, a, params))
    return jax.jit(lambda k, sk, a, p: rollout(k, sk, a, p))


def _by_leaf(out):
    """`out` with each CraftaxState as {leaf name: value} (its bytes hold struct padding too, which
    no leaf reads)."""
    from pycraftax import _state

    return jax.tree.map(lambda s: {leaf.name: s.leaf(leaf.name) for leaf in _state.LEAVES} if isinstance(
        s, pj.CraftaxState) else s, out, is_leaf=lambda x: isinstance(x, pj.CraftaxState))


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

    scan = jax.jit(lambda s: jax.lax.scan(body, s, (step_keys, jnp.asarray(actions))))
    assert _ffi.OPERAND_SUFFIX not in scan.lower(state).as_text()  # closed-over params: the attribute
    final, (obs, rewards, dones) = scan(state)
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


def test_native_auto_reset_scan_equals_the_cpu_handlers():
    """The GPU's native auto-reset step against the CPU handlers (the C reference's auto-reset)
    over a scan in which every env ends several times: every output of every step and every leaf
    of the final states, bit for bit."""
    env = pj.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=True)
    params = env.default_params.replace(max_timesteps=20)
    steps = 70
    inputs = (_keys(2, (N,)), _keys(3, (steps, N)),
              np.random.default_rng(4).integers(0, 43, size=(steps, N)).astype(np.int32))
    run = _auto_reset_rollout(env, params, closed_over=True)
    on_gpu = _by_leaf(run(*jax.device_put(inputs, GPU)))
    on_cpu = _by_leaf(run(*jax.device_put(inputs, CPU)))
    assert list(on_cpu[0].devices())[0].platform == "cpu" and list(on_gpu[0].devices())[0].platform == "gpu"
    dones = np.asarray(on_cpu[2][2])
    assert dones.sum() >= 3 * N  # every env reached the 20-step limit at least three times
    names = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(on_cpu)[0]]
    for name, a, b in zip(names, jax.tree.leaves(on_gpu), jax.tree.leaves(on_cpu)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)


def test_params_as_attribute_equal_params_as_operand():
    env = pj.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=True)
    params = pj.EnvParams(max_timesteps=15)
    inputs = (_keys(5, (N,)), _keys(6, (40, N)), np.random.default_rng(7).integers(0, 43, size=(40, N)).astype(np.int32))
    closed = _auto_reset_rollout(env, params, closed_over=True)
    traced = _auto_reset_rollout(env, params, closed_over=False)
    assert _ffi.OPERAND_SUFFIX not in closed.lower(*inputs).as_text()
    assert _ffi.OPERAND_SUFFIX in traced.lower(*inputs, params).as_text()
    a, b = closed(*inputs), traced(*inputs, params)
    assert np.asarray(a[2][2]).sum() >= 2 * N
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("auto_reset", [True, False], ids=["auto_reset", "no_auto_reset"])
def test_out_of_range_actions_run_as_noop_and_are_reported(auto_reset):
    env = pj.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=auto_reset)
    keys = jax.random.split(jax.random.PRNGKey(8), 3)
    _, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, env.default_params)
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    pj.raise_if_invalid_actions()  # nothing pending from other tests
    good = step(keys, state, jnp.array([0, 0, 1], jnp.int32), env.default_params)
    bad = step(keys, state, jnp.array([0, 43, 1], jnp.int32), env.default_params)
    jax.block_until_ready(bad)
    for x, y in zip(jax.tree.leaves(good), jax.tree.leaves(bad)):  # env 1 took NOOP; nothing else moved
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    with pytest.raises(ValueError, match=r"action 43 of env 1 is outside \[0, 43\)"):
        pj.raise_if_invalid_actions()
    pj.raise_if_invalid_actions()  # reported once
    # not asked for: the next call reports it (its host part runs after the bad step finished)
    jax.block_until_ready(step(keys, state, jnp.array([0, 1, -1], jnp.int32), env.default_params))
    with pytest.raises(Exception, match=r"action -1 of env 2 is outside \[0, 43\).*earlier GPU step"):
        jax.block_until_ready(step(keys, state, jnp.zeros(3, jnp.int32), env.default_params))
    pj.raise_if_invalid_actions()


def test_concurrent_calls_from_two_threads_do_not_share_memory():
    """Two different rollouts at once (on whatever streams XLA gives them) equal each run alone."""
    env = pj.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=True)
    runs = [(_auto_reset_rollout(env, pj.EnvParams(max_timesteps=m), closed_over=True),
             (_keys(10 + m, (N,)), _keys(20 + m, (30, N)), np.full((30, N), m % 43, np.int32))) for m in (9, 13)]
    alone = [jax.tree.map(np.asarray, run(*inputs)) for run, inputs in runs]
    together = [None, None]

    def work(i):
        run, inputs = runs[i]
        together[i] = jax.tree.map(np.asarray, jax.block_until_ready(run(*inputs)))

    for _ in range(3):
        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for a, b in zip(alone, together):
            for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
                np.testing.assert_array_equal(x, y)
