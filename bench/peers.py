"""The peers the suites measure beside pycraftax: upstream craftax 1.6.1 (JAX, jit + vmap on
JAX's default device) and EnvPool's native Craftax, each built the way their users run them.

Import this module before anything imports jax: it sets the XLA flag under which jaxlib
0.10.2 computes craftax's batched noise correctly (the reference semantics the conformance
tests use), so the upstream figures are of the same game.

Upstream modes, every one a jitted lax.scan of `steps_per_call` steps with uniformly random
actions and observations produced every step:
- auto: the official auto-reset `env.step` (a fresh world is generated for every env every
  step and selected where done): the exact game pycraftax's C and CUDA envs play.
- optimistic: Craftax_Baselines' OptimisticResetVecEnvWrapper over `step_env` (num_envs /
  reset_ratio fresh worlds a step, taken by the envs that ended): the official PPO-RNN's
  setting and upstream's fastest; pycraftax's resets="optimistic" is the same game.
"""

from __future__ import annotations

import os
import sys
import time

_FLAG = "--xla_cpu_experimental_ynn_fusion_type="
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:  # the wrapper is the conformance tests' (the suites run from bench/)
    sys.path.append(_ROOT)
from conformance.wrappers import optimistic_reset_step  # noqa: E402  (imports JAX only when called)

UPSTREAM_MODES = ("auto", "optimistic")
RESET_RATIO = 16
# Upstream env ids and their action counts; EnvPool's Craftax is Classic, so Classic is measured
# upstream too (pycraftax's own Classic joins the comparison where the package provides it).
UPSTREAM_ENVS = {"Craftax-Symbolic-v1": 43, "Craftax-Classic-Symbolic-v1": 17, "Craftax-Pixels-v1": 43,
                 "Craftax-Classic-Pixels-v1": 17}


def jax_device() -> str:
    import jax

    return str(jax.devices()[0])


def upstream_rollout(env_name: str, mode: str, num_envs: int, steps_per_call: int):
    """(call, compile_seconds): call() runs `steps_per_call` env steps of `num_envs` upstream
    envs and waits for the device; the first call (JIT compilation) is made and timed here."""
    if env_name not in UPSTREAM_ENVS:
        raise ValueError(f"env_name must be one of {sorted(UPSTREAM_ENVS)}, got {env_name!r}")
    if mode not in UPSTREAM_MODES:
        raise ValueError(f"mode must be one of {UPSTREAM_MODES}, got {mode!r}")
    import jax
    from craftax.craftax_env import make_craftax_env_from_name

    num_actions = UPSTREAM_ENVS[env_name]
    plain = make_craftax_env_from_name(env_name, auto_reset=False)  # its `step` is step_env alone
    params = plain.default_params
    if mode == "auto":
        official = make_craftax_env_from_name(env_name, auto_reset=True)
        vstep = jax.vmap(official.step, in_axes=(0, 0, 0, None))

        def one_step(key, state, actions):
            obs, state, reward, done, _ = vstep(jax.random.split(key, num_envs), state, actions, params)
            return obs, state, reward, done
    else:
        wrapped = optimistic_reset_step(plain, num_envs, min(RESET_RATIO, num_envs), params)

        def one_step(key, state, actions):
            obs, state, reward, done, _, _ = wrapped(key, state, actions)  # jit drops the unused outputs
            return obs, state, reward, done

    @jax.jit
    def rollout(key, state):
        def body(carry, _):
            key, state = carry
            key, k_act, k_step = jax.random.split(key, 3)
            actions = jax.random.randint(k_act, (num_envs,), 0, num_actions)
            obs, state, reward, done = one_step(k_step, state, actions)
            return (key, state), obs.sum() + reward.sum() + done.sum()

        (key, state), out = jax.lax.scan(body, (key, state), None, length=steps_per_call)
        return key, state, out.sum()

    _, state = jax.vmap(plain.reset_env, in_axes=(0, None))(jax.random.split(jax.random.PRNGKey(0), num_envs), params)
    carry = [jax.random.PRNGKey(1), state]

    def call() -> None:
        key, state, _ = jax.block_until_ready(rollout(*carry))
        carry[0], carry[1] = key, state

    t0 = time.perf_counter()
    call()
    return call, time.perf_counter() - t0


def upstream_reset(env_name: str, num_envs: int):
    """(call, compile_seconds): call() generates `num_envs` worlds with jit(vmap(reset_env))."""
    import jax
    from craftax.craftax_env import make_craftax_env_from_name

    env = make_craftax_env_from_name(env_name, auto_reset=False)
    params = env.default_params
    reset = jax.jit(jax.vmap(env.reset_env, in_axes=(0, None)))
    key = [jax.random.PRNGKey(0)]

    def call() -> None:
        key[0], sub = jax.random.split(key[0])
        jax.block_until_ready(reset(jax.random.split(sub, num_envs), params))

    t0 = time.perf_counter()
    call()
    return call, time.perf_counter() - t0


def envpool_craftax_ids() -> list[str]:
    """EnvPool's registered Craftax task ids (raises ImportError without EnvPool)."""
    import envpool

    return [name for name in envpool.list_all_envs() if "craftax" in name.lower()]


def envpool_step(task_id: str, num_envs: int, threads: int):
    """(call, setup_seconds): call() steps EnvPool's `num_envs` envs once, synchronously, with
    uniformly random actions (EnvPool resets finished episodes itself)."""
    import envpool
    import numpy as np

    t0 = time.perf_counter()
    env = envpool.make(task_id, env_type="gymnasium", num_envs=num_envs, num_threads=threads, seed=0)
    env.reset()
    num_actions = env.action_space.n
    actions = np.random.default_rng(0).integers(0, num_actions, size=(64, num_envs), dtype=np.int32)
    count = [0]

    def call() -> None:
        env.step(actions[count[0] % 64])
        count[0] += 1

    return call, time.perf_counter() - t0
