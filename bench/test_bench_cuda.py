"""The CUDA env on the GPU (skipped, saying why, without one): env steps/s over a sweep of
num_envs up to the largest batch whose buffers fit, for auto-reset and optimistic resets and
float and compact observations; world generation (a full reset) in worlds/s, from one env
(latency) up; and the parts of a step through the public API: the observation render alone
(env.observe) and the game logic without resets (env.step_with_keys, keys copied each call);
and the auto-reset step by step_async, ACTION_BLOCK steps to a wait.

A step round is one env.step of every env with uniformly random actions (drawn ahead on the
device with PyTorch where it has CUDA, else on the host and copied each step). The first
STEADY_AFTER steps are warm-up: random play ends few episodes early on and settles near 0.4%
a step by then, and world generation scales with the ends, so every size is timed at the same
settled rate. Every library call synchronizes: host time is device time plus launch overhead.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import pycraftax
from pycraftax import cuda_env

pytestmark = pytest.mark.skipif(not pycraftax.cuda_available(),
                                reason=f"CUDA env not measured: {cuda_env.unavailable_reason()}")

STEADY_AFTER = 700  # warm-up steps before the timed ones
TIMED_STEPS = 100
ACTION_BLOCK = 16
SIZES = {
    "num_envs": ([4096, 65536, 262144, "max"], [4096]),
    "reset_envs": ([1, 132, 4096, 65536, 262144], [1, 4096]),
    "part_envs": ([16384, 262144], [4096]),
    "async_envs": ([1024, 4096, 16384, 65536], [4096]),
}


def largest_num_envs(obs: str) -> int:
    """The largest num_envs (a multiple of 1024) whose buffers and the batch's world-generation
    scratch fit in 97% of the GPU memory free now."""
    free, _ = cuda_env.load().mem_info()
    per_env = cuda_env.CudaCraftaxEnv.bytes_per_env(obs=obs) + 5  # + the library's done list and flag
    fixed = cuda_env.CudaCraftaxEnv.scratch_bytes(1 << 30)  # the batch's world-generation scratch, at most
    return (int(free * 0.97) - fixed) // per_env // 1024 * 1024


def _action_block(num_envs: int):
    try:
        import torch

        if torch.cuda.is_available():
            return [torch.randint(0, 43, (num_envs,), dtype=torch.int32, device="cuda") for _ in range(ACTION_BLOCK)], \
                "torch (device)"
    except ImportError:
        pass
    rng = np.random.default_rng(0)
    return [rng.integers(0, 43, num_envs).astype(np.int32) for _ in range(ACTION_BLOCK)], "numpy (host, copied)"


@pytest.mark.parametrize("obs", ["float", "compact"])
@pytest.mark.parametrize("resets", ["auto", "optimistic"])
def test_step(throughput, resets, obs, num_envs):
    n = largest_num_envs(obs) if num_envs == "max" else num_envs
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=n, backend="cuda", seed=0, resets=resets, obs=obs)
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
                          mode=resets, obs=obs, num_envs=n, largest=num_envs == "max", actions_from=source,
                          device=cuda_env.load().device_name, device_bytes_per_env=env.device_bytes // n)
    finally:
        env.close()
    assert rate > 0


def test_step_async(throughput, async_envs):
    """The auto-reset step by step_async: a round is ACTION_BLOCK steps enqueued back to back and
    one step_wait, so the GPU does not idle for the host between steps (compact obs, device
    actions where PyTorch has CUDA); test_step's rows at the same size are the synchronous rate."""
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=async_envs, backend="cuda", seed=0, obs="compact")
    try:
        t0 = time.perf_counter()
        env.reset(seed=0)
        reset_s = time.perf_counter() - t0
        actions, source = _action_block(async_envs)

        def block() -> None:
            for a in actions:
                env.step_async(a)
            env.step_wait()

        rate = throughput(block, items=async_envs * ACTION_BLOCK, unit="env steps/s", seconds=0.0,
                          min_rounds=TIMED_STEPS // ACTION_BLOCK, max_rounds=TIMED_STEPS // ACTION_BLOCK,
                          warmup_rounds=STEADY_AFTER // ACTION_BLOCK, setup_seconds=reset_s, backend="cuda",
                          mode="auto", obs="compact", num_envs=async_envs, calls="step_async", actions_from=source,
                          device=cuda_env.load().device_name)
    finally:
        env.close()
    assert rate > 0


def test_worldgen(throughput, reset_envs):
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=reset_envs, backend="cuda", seed=0)
    try:
        seed = [0]

        def one_reset() -> None:
            seed[0] += 1
            env.reset(seed=seed[0])

        t0 = time.perf_counter()
        one_reset()
        first_s = time.perf_counter() - t0
        rate = throughput(one_reset, items=reset_envs, unit="worlds/s", seconds=2.0, min_rounds=5,
                          setup_seconds=first_s, backend="cuda", num_envs=reset_envs,
                          device=cuda_env.load().device_name)
    finally:
        env.close()
    assert rate > 0


@pytest.mark.parametrize("part", ["observe", "step_with_keys"])
def test_part(throughput, part, part_envs):
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=part_envs, backend="cuda", seed=0)
    try:
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        actions = rng.integers(0, 43, part_envs).astype(np.int32)
        keys = rng.integers(0, 2**32, (part_envs, 2), dtype=np.uint32)
        call = env.observe if part == "observe" else (lambda: env.step_with_keys(actions, keys))
        rate = throughput(call, items=part_envs, unit="observations/s" if part == "observe" else "env steps/s",
                          seconds=2.0, min_rounds=20, backend="cuda", part=part, num_envs=part_envs,
                          device=cuda_env.load().device_name)
    finally:
        env.close()
    assert rate > 0
