"""Craftax-Classic's CUDA env on the GPU (skipped, saying why, without one), the full game's
CUDA sweep (test_bench_cuda.py) for Craftax-Classic-Symbolic-v1: env steps/s over num_envs up
to the largest batch that fits, for auto-reset and optimistic resets and float and compact
observations; world generation (a full reset) in worlds/s, from one env (latency) up; the
observation render alone (env.observe) and the game logic without resets (env.step_with_keys).

A step round is one env.step of every env with uniformly random actions over Classic's 17
(drawn ahead on the device with PyTorch where it has CUDA, else on the host and copied each
step), after STEADY_AFTER warm-up steps so that every size is timed at a settled rate of
episode ends. Every library call synchronizes: host time is device time plus launch overhead.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import pycraftax
from pycraftax import cuda_env

pytestmark = pytest.mark.skipif(not pycraftax.cuda_available(),
                                reason=f"CUDA env not measured: {cuda_env.unavailable_reason()}")

ENV_ID = "Craftax-Classic-Symbolic-v1"
NUM_ACTIONS = 17
STEADY_AFTER = 500  # warm-up steps before the timed ones
TIMED_STEPS = 100
ACTION_BLOCK = 16
SIZES = {
    "num_envs": ([4096, 65536, 262144, 1048576, "max"], [4096]),
    "reset_envs": ([1, 132, 4096, 65536], [1, 4096]),
    "part_envs": ([16384, 262144, 1048576], [4096]),
}
# The library's per-call temporaries (cuda/classic_cuda.cu): the done list and, behind a float
# obs, the compact records, per env; world-generation scratch, 8,192 entries of 99 KB at most.
TEMP_BYTES_PER_ENV = 4 + 224
WORLD_SCRATCH_BYTES = 8192 * 99 * 1024


def largest_num_envs(obs: str) -> int:
    """The largest num_envs (a multiple of 1024) whose buffers and the library's temporaries
    fit in 90% of the GPU memory free now."""
    from pycraftax.classic_cuda_env import CudaClassicEnv

    free, _ = cuda_env.load().mem_info()
    per_env = CudaClassicEnv.bytes_per_env(obs=obs) + TEMP_BYTES_PER_ENV
    return (int(free * 0.90) - WORLD_SCRATCH_BYTES) // per_env // 1024 * 1024


def _action_block(num_envs: int):
    try:
        import torch

        if torch.cuda.is_available():
            return [torch.randint(0, NUM_ACTIONS, (num_envs,), dtype=torch.int32, device="cuda")
                    for _ in range(ACTION_BLOCK)], "torch (device)"
    except ImportError:
        pass
    rng = np.random.default_rng(0)
    return [rng.integers(0, NUM_ACTIONS, num_envs).astype(np.int32) for _ in range(ACTION_BLOCK)], \
        "numpy (host, copied)"


@pytest.mark.parametrize("obs", ["float", "compact"])
@pytest.mark.parametrize("resets", ["auto", "optimistic"])
def test_step(throughput, resets, obs, num_envs):
    n = largest_num_envs(obs) if num_envs == "max" else num_envs
    env = pycraftax.make(ENV_ID, num_envs=n, backend="cuda", seed=0, resets=resets, obs=obs)
    try:
        t0 = time.perf_counter()
        env.reset(seed=0)
        reset_s = time.perf_counter() - t0
        actions, source = _action_block(n)
        count = [0]

        def one_step() -> None:
            env.step(actions[count[0] % ACTION_BLOCK])
            count[0] += 1

        rate = throughput(one_step, items=n, unit="env steps/s", seconds=0.0, min_rounds=TIMED_STEPS,
                          max_rounds=TIMED_STEPS, warmup_rounds=STEADY_AFTER, setup_seconds=reset_s, backend="cuda",
                          env_id=ENV_ID, mode=resets, obs=obs, num_envs=n, largest=num_envs == "max",
                          actions_from=source, device=cuda_env.load().device_name,
                          device_bytes_per_env=env.device_bytes // n)
    finally:
        env.close()
    assert rate > 0


def test_worldgen(throughput, reset_envs):
    env = pycraftax.make(ENV_ID, num_envs=reset_envs, backend="cuda", seed=0)
    try:
        seed = [0]

        def one_reset() -> None:
            seed[0] += 1
            env.reset(seed=seed[0])

        t0 = time.perf_counter()
        one_reset()
        first_s = time.perf_counter() - t0
        rate = throughput(one_reset, items=reset_envs, unit="worlds/s", seconds=2.0, min_rounds=5,
                          setup_seconds=first_s, backend="cuda", env_id=ENV_ID, num_envs=reset_envs,
                          device=cuda_env.load().device_name)
    finally:
        env.close()
    assert rate > 0


@pytest.mark.parametrize("part", ["observe", "step_with_keys"])
def test_part(throughput, part, part_envs):
    env = pycraftax.make(ENV_ID, num_envs=part_envs, backend="cuda", seed=0)
    try:
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        actions = rng.integers(0, NUM_ACTIONS, part_envs).astype(np.int32)
        keys = rng.integers(0, 2**32, (part_envs, 2), dtype=np.uint32)
        call = env.observe if part == "observe" else (lambda: env.step_with_keys(actions, keys))
        rate = throughput(call, items=part_envs, unit="observations/s" if part == "observe" else "env steps/s",
                          seconds=2.0, min_rounds=20, backend="cuda", env_id=ENV_ID, part=part,
                          num_envs=part_envs, device=cuda_env.load().device_name)
    finally:
        env.close()
    assert rate > 0
