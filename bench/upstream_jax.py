"""Upstream craftax 1.6.1 (JAX) env throughput on JAX's default device (the GPU where there
is one): the figure our CUDA sweep is divided by, measured in the same run. bench/step.py
calls measure() too, in a process pinned to the CPU cores it measures.

    python bench/upstream_jax.py --out bench/results/upstream-gpu.json \
        --config auto:8192 --config optimistic:65536

Every mode steps Craftax-Symbolic-v1 with uniformly random actions inside one jitted
lax.scan of T steps, observations produced every step:
- auto: the official `env.step` (auto-reset; JAX generates a fresh world for every env
  every step and selects it where done) - the exact game, what our CUDA env matches.
- no_reset: `step_env` alone (no world is generated; an episode that ends keeps stepping):
  an upper bound for any reset strategy.
- optimistic: Craftax_Baselines' OptimisticResetVecEnvWrapper (conformance/wrappers.py):
  `step_env` plus N/16 fresh worlds per step taken by the envs that ended, the official
  PPO-RNN's setting and upstream's fastest, used for the 0.96 M steps/s anchor; pycraftax's
  resets="optimistic" is the same game (conformance/test_optimistic.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS_PER_CALL = 32
RESET_RATIO = 16
MODES = ("auto", "optimistic", "no_reset")


def build(mode: str, num_envs: int):
    import jax
    from craftax.craftax_env import make_craftax_env_from_name

    env = make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=False)
    # Only the auto_reset=True env's `step` resets: the other's `step` is step_env alone.
    official = make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=True)
    params = env.default_params
    vstep_env = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))
    vstep = jax.vmap(official.step, in_axes=(0, 0, 0, None))
    vreset = jax.vmap(env.reset_env, in_axes=(0, None))

    from conformance.wrappers import optimistic_reset_step

    wrapper_step = optimistic_reset_step(env, num_envs, min(RESET_RATIO, num_envs), params)

    def optimistic_step(key, state, actions):
        obs, state, reward, done, info, _ = wrapper_step(key, state, actions)
        return obs, state, reward, done

    def official_step(key, state, actions):
        obs, state, reward, done, info = vstep(jax.random.split(key, num_envs), state, actions, params)
        return obs, state, reward, done

    def no_reset_step(key, state, actions):
        obs, state, reward, done, info = vstep_env(jax.random.split(key, num_envs), state, actions, params)
        return obs, state, reward, done

    one_step = {"auto": official_step, "optimistic": optimistic_step, "no_reset": no_reset_step}[mode]

    @jax.jit
    def rollout(key, state):
        def body(carry, _):
            key, state = carry
            key, k_act, k_step = jax.random.split(key, 3)
            actions = jax.random.randint(k_act, (num_envs,), 0, 43)
            obs, state, reward, done = one_step(k_step, state, actions)
            return (key, state), obs.sum() + reward.sum() + done.sum()

        (key, state), out = jax.lax.scan(body, (key, state), None, length=STEPS_PER_CALL)
        return key, state, out.sum()

    _, state = vreset(jax.random.split(jax.random.PRNGKey(0), num_envs), params)
    return rollout, state


def measure(mode: str, num_envs: int, seconds: float) -> dict:
    import jax

    rollout, state = build(mode, num_envs)
    key = jax.random.PRNGKey(1)
    t0 = time.perf_counter()
    key, state, _ = jax.block_until_ready(rollout(key, state))
    compile_s = time.perf_counter() - t0
    calls, start = 0, time.perf_counter()
    while True:
        key, state, _ = jax.block_until_ready(rollout(key, state))
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and calls >= 2:
            break
    steps = calls * STEPS_PER_CALL * num_envs
    return {"mode": mode, "num_envs": num_envs, "steps": steps, "seconds": elapsed, "steps_per_s": steps / elapsed,
            "first_call_seconds": compile_s, "device": str(jax.devices()[0]), "jax": jax.__version__}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", action="append", default=None,
                        help="MODE:NUM_ENVS with MODE auto|optimistic|no_reset (repeatable; default auto:8192 "
                             "optimistic:16384)")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    configs = args.config or ["auto:8192", "optimistic:16384"]
    results = []
    for config in configs:
        mode, _, envs = config.partition(":")
        if mode not in MODES or not envs.isdigit():
            parser.error(f"--config must be MODE:N with MODE one of {MODES}, got {config!r}")
        r = measure(mode, int(envs), args.seconds)
        print(f"upstream {mode} {int(envs):,} envs: {r['steps_per_s']:,.0f} steps/s "
              f"(first call {r['first_call_seconds']:.0f} s, {r['device']})", flush=True)
        results.append(r)
        # after every config: a later one that runs out of memory or time keeps the earlier ones
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"benchmark": "upstream-jax-env", "env": "Craftax-Symbolic-v1",
                                        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                        "results": results}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    main()
