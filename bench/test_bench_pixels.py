"""The pixel envs (Craftax-Pixels-v1, Craftax-Classic-Pixels-v1) on the C backend against
upstream craftax 1.6.1's pixel envs on this CPU, in the same run: env steps with the pixel obs
every step, uniformly random actions, pycraftax's auto-reset step per core (one thread, and
every usable core) beside upstream's fastest mode, the optimistic-reset wrapper over step_env
(a jitted lax.scan, bench/peers.py). Upstream is skipped, saying why, without the [jax] extra.
The CUDA pixel envs (backend="cuda", pycraftax.cuda_pixels_env) are timed in the same run where a
GPU is usable (skipped, saying why, elsewhere): the auto-reset step with the obs rendered on the
device, actions drawn ahead (on the device with PyTorch where it has CUDA); upstream's peer on
the GPU is test_step_pixels_upstream, at GPU batch sizes where a GPU is (JAX's default device).
"""

from __future__ import annotations

import numpy as np
import pytest

import peers  # noqa: F401  (sets the XLA flag before jax is imported)

import pycraftax
from pycraftax.bench import c_threads, usable_cores

PIXEL_IDS = ("Craftax-Pixels-v1", "Craftax-Classic-Pixels-v1")
THREADS = sorted({1, usable_cores()})
UPSTREAM_STEPS_PER_CALL = 8
SIZES = {
    "num_envs": ([16, 64, 256], [16]),
    "threads": (THREADS, THREADS),
    # upstream's pixel env where JAX runs it: its best batch on a GPU is far past a CPU's
    "upstream_envs": ([1024, 4096, 16384] if pycraftax.cuda_available() else [64, 256], [64]),
    "cuda_envs": ([1024, 4096, 16384, 65536], [1024]),
}
CUDA_WARMUP_STEPS = 50
CUDA_TIMED_STEPS = 50
CUDA_ACTION_BLOCK = 16


@pytest.mark.parametrize("env_id", PIXEL_IDS)
def test_step_pixels(throughput, env_id, num_envs, threads):
    env = pycraftax.make(env_id, num_envs=num_envs, backend="c", seed=0)
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, env.num_actions, size=(64, num_envs), dtype=np.int32)
    count = [0]

    def call() -> None:
        env.step(actions[count[0] % 64])
        count[0] += 1

    with c_threads(threads):
        rate = throughput(call, items=num_envs, unit="env steps/s", backend="c", env=env_id, mode="auto-reset",
                          num_envs=num_envs, threads=threads, cores_used=min(threads, usable_cores()))
    env.close()
    assert rate > 0


@pytest.mark.parametrize("env_id", PIXEL_IDS)
def test_step_pixels_upstream(throughput, env_id, upstream_envs):
    pytest.importorskip("jax", reason="upstream peer not measured: jax is not installed (the [jax] extra)")
    pytest.importorskip("craftax", reason="upstream peer not measured: craftax is not installed (the [jax] extra)")
    call, compile_s = peers.upstream_rollout(env_id, "optimistic", upstream_envs, UPSTREAM_STEPS_PER_CALL)
    rate = throughput(call, items=upstream_envs * UPSTREAM_STEPS_PER_CALL, unit="env steps/s",
                      setup_seconds=compile_s, backend="upstream", env=env_id, mode="optimistic",
                      num_envs=upstream_envs, device=peers.jax_device(), steps_per_call=UPSTREAM_STEPS_PER_CALL)
    assert rate > 0


def _cuda_actions(num_envs: int, num_actions: int):
    try:
        import torch

        if torch.cuda.is_available():
            return [torch.randint(0, num_actions, (num_envs,), dtype=torch.int32, device="cuda")
                    for _ in range(CUDA_ACTION_BLOCK)], "torch (device)"
    except ImportError:
        pass
    rng = np.random.default_rng(0)
    return [rng.integers(0, num_actions, num_envs).astype(np.int32) for _ in range(CUDA_ACTION_BLOCK)], \
        "numpy (host, copied)"


@pytest.mark.parametrize("resets", ["auto", "optimistic"])
@pytest.mark.parametrize("env_id", PIXEL_IDS)
def test_step_pixels_cuda(throughput, env_id, resets, cuda_envs):
    from pycraftax import cuda_env

    if not pycraftax.cuda_available():
        pytest.skip(f"CUDA pixel env not measured: {cuda_env.unavailable_reason()}")
    env = pycraftax.make(env_id, num_envs=cuda_envs, backend="cuda", seed=0, resets=resets)
    try:
        env.reset(seed=0)
        actions, source = _cuda_actions(cuda_envs, env.num_actions)
        count = [0]

        def call() -> None:
            env.step(actions[count[0] % CUDA_ACTION_BLOCK])
            count[0] += 1

        rate = throughput(call, items=cuda_envs, unit="env steps/s", seconds=0.0, min_rounds=CUDA_TIMED_STEPS,
                          max_rounds=CUDA_TIMED_STEPS, warmup_rounds=CUDA_WARMUP_STEPS, backend="cuda", env=env_id,
                          mode=resets, num_envs=cuda_envs, actions_from=source, device=cuda_env.load().device_name,
                          device_bytes_per_env=env.device_bytes // cuda_envs)
    finally:
        env.close()
    assert rate > 0
