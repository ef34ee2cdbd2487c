"""C reference throughput on this CPU: world generation (reset), the auto-reset env step and
observation rendering, on one thread and on every usable core, at several batch sizes; and
pycraftax's Classic env (the peer of EnvPool's Craftax), skipped until the package provides it.

The timed calls are pycraftax.bench's (the same ones `pycraftax bench` times). Per-core
figures divide by the cores used, min(threads, usable cores).
"""

from __future__ import annotations

import numpy as np
import pytest

import pycraftax

from pycraftax.bench import StepLoop, c_threads, reset_call, usable_cores

THREADS = sorted({1, usable_cores()})
# The id pycraftax's Classic port registers; the hook that sets it beside EnvPool and upstream Classic.
CLASSIC_ENV_ID = "Craftax-Classic-Symbolic-v1"
SIZES = {
    "reset_envs": ([64, 1024], [16]),
    "step_envs": ([64, 256, 4096], [64, 256]),
    "obs_envs": ([1024], [256]),
    "classic_envs": ([64, 256, 4096], [64]),
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


def test_step_classic(throughput, classic_envs):
    """Through env.step (validation included) on every usable core, as EnvPool is stepped."""
    try:
        env = pycraftax.make(CLASSIC_ENV_ID, num_envs=classic_envs, backend="c", seed=0)
    except ValueError as exc:
        pytest.skip(f"pycraftax Classic not measured: {exc}")
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, env.single_action_space.n, size=(64, classic_envs), dtype=np.int32)
    count = [0]

    def call() -> None:
        env.step(actions[count[0] % 64])
        count[0] += 1

    rate = throughput(call, items=classic_envs, unit="env steps/s", backend="c", env=CLASSIC_ENV_ID, mode="auto-reset",
                      num_envs=classic_envs, **_per_core(usable_cores()))
    assert rate > 0
