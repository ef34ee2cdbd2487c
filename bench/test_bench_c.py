"""C reference throughput on this CPU: world generation (reset), the auto-reset env step and
observation rendering, on one thread and on every usable core, at several batch sizes; and
pycraftax's Classic env (the peer of upstream Classic and of EnvPool's Craftax): its step in the
auto-reset and optimistic modes, and its world generation.

The timed calls are pycraftax.bench's (the same ones `pycraftax bench` times). Per-core
figures divide by the cores used, min(threads, usable cores).
"""

from __future__ import annotations

import numpy as np
import pytest

import pycraftax

from pycraftax import jax_random
from pycraftax.bench import StepLoop, c_threads, reset_call, usable_cores

THREADS = sorted({1, usable_cores()})
# The Classic id, the hook that sets these rows beside EnvPool and upstream Classic in the report.
CLASSIC_ENV_ID = "Craftax-Classic-Symbolic-v1"
# upstream's modes (bench/test_bench_upstream.py): the official auto-reset and the optimistic wrapper
CLASSIC_MODES = ("auto", "optimistic")
SIZES = {
    "reset_envs": ([64, 1024], [16]),
    "step_envs": ([64, 256, 4096], [64, 256]),
    "obs_envs": ([1024], [256]),
    "classic_envs": ([64, 256, 4096], [64]),
    "classic_reset_envs": ([64, 1024], [16]),
    "threads": (THREADS, THREADS),
}


def _per_core(threads: int) -> dict:
    cores = min(threads, usable_cores())
    return {"threads": threads, "cores_used": cores}


def test_reset(throughput, reset_envs, threads):
    one_call = reset_call(reset_envs)
    with c_threads(threads):
        rate = throughput(one_call, items=reset_envs, unit="worlds/s", backend="c", num_envs=reset_envs,
                          **_per_core(threads))
    assert rate > 0


def test_step(throughput, step_envs, threads):
    loop = StepLoop(step_envs)
    with c_threads(threads):
        rate = throughput(loop.step, items=step_envs, unit="env steps/s", backend="c", mode="auto-reset",
                          num_envs=step_envs, **_per_core(threads))
    throughput.benchmark.extra_info["episodes_finished"] = loop.episodes_finished
    assert rate > 0 and loop.calls > 0


def test_observe(throughput, obs_envs, threads):
    loop = StepLoop(obs_envs)
    for _ in range(16):  # states past their first step, not all fresh worlds
        loop.step()
    with c_threads(threads):
        rate = throughput(loop.observe, items=obs_envs, unit="observations/s", backend="c", num_envs=obs_envs,
                          **_per_core(threads))
    assert rate > 0 and loop.obs.any()


@pytest.mark.parametrize("mode", CLASSIC_MODES)
def test_step_classic(throughput, classic_envs, threads, mode):
    """Through env.step (validation included), uniformly random actions, observations every
    step, in upstream's two reset modes (optimistic: reset_ratio min(16, num_envs))."""
    env = pycraftax.make(CLASSIC_ENV_ID, num_envs=classic_envs, backend="c", seed=0, resets=mode)
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, env.single_action_space.n, size=(64, classic_envs), dtype=np.int32)
    count = [0]

    def call() -> None:
        env.step(actions[count[0] % 64])
        count[0] += 1

    with c_threads(threads):
        rate = throughput(call, items=classic_envs, unit="env steps/s", backend="c", env=CLASSIC_ENV_ID, mode=mode,
                          num_envs=classic_envs, **_per_core(threads))
    assert rate > 0 and count[0] > 0


def test_reset_classic(throughput, classic_reset_envs, threads):
    """Classic world generation (reset_env of every env, observations included), worlds/s."""
    n = classic_reset_envs
    env = pycraftax.make(CLASSIC_ENV_ID, num_envs=n, backend="c", seed=0)
    key = [jax_random.prng_key(0)]

    def call() -> None:
        key[0], sub = jax_random.split(key[0], 2)
        env.reset_with_keys(jax_random.split(sub, n))

    with c_threads(threads):
        rate = throughput(call, items=n, unit="worlds/s", backend="c", env=CLASSIC_ENV_ID, num_envs=n,
                          **_per_core(threads))
    assert rate > 0
