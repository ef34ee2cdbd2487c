"""C reference throughput on this CPU: world generation (reset), the auto-reset env step and
observation rendering, on one thread and on every usable core, at several batch sizes.

The timed calls are pycraftax.bench's (the same ones `pycraftax bench` times). Per-core
figures divide by the cores used, min(threads, usable cores).
"""

from __future__ import annotations

import pytest

from pycraftax.bench import StepLoop, c_threads, reset_call, usable_cores

THREADS = sorted({1, usable_cores()})
SIZES = {
    "reset_envs": ([64, 1024], [16]),
    "step_envs": ([64, 256, 4096], [64, 256]),
    "obs_envs": ([1024], [256]),
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


@pytest.mark.parametrize("obs_threads", THREADS)
def test_observe(throughput, obs_envs, obs_threads):
    loop = StepLoop(obs_envs)
    for _ in range(16):  # states past their first step, not all fresh worlds
        loop.step()
    with c_threads(obs_threads):
        rate = throughput(loop.observe, items=obs_envs, unit="observations/s", backend="c", num_envs=obs_envs,
                          **_per_core(obs_threads))
    assert rate > 0 and loop.obs.any()
