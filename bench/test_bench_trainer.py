"""Training throughput: one PPO-RNN iteration (rollout with the env, GAE, the update epochs)
of the NumPy trainer on this CPU, and of the CUDA trainer's recipes on a GPU (skipped, saying
why, without one). The unit is training steps/s: env steps consumed per second of training.
The first iteration (buffer allocation; CUDA graph capture on the GPU) is timed apart.
"""

from __future__ import annotations

import time

import pytest

import pycraftax
from pycraftax import cuda_env
from pycraftax.train.trainer import TrainConfig, Trainer, set_blas_threads

# The CPU trainer's default config, and a small one for --bench-quick.
NUMPY_CONFIGS = {"default": {}, "quick": dict(num_envs=16, num_steps=16, width=64, hidden=64)}
# The CUDA recipes of the published runs: the Craftax paper's PPO-RNN, and the throughput
# probe with 8x the envs, half the epochs and a quarter of the GEMM work per sample.
CUDA_RECIPES = {
    "paper": dict(num_envs=1024, num_steps=64, update_epochs=4, num_minibatches=8, width=512, hidden=512),
    "fast": dict(num_envs=8192, num_steps=32, update_epochs=2, num_minibatches=4, width=256, hidden=256),
}
SIZES = {"recipe": (list(CUDA_RECIPES), ["paper"])}


def _iterations(throughput, trainer, recipe: str, backend: str, **info) -> float:
    c = trainer.config
    t0 = time.perf_counter()
    trainer.step()  # first iteration: allocations, and the CUDA graph capture on the GPU
    first_s = time.perf_counter() - t0
    return throughput(trainer.step, items=c.num_envs * c.num_steps, unit="training steps/s", seconds=10.0,
                      min_rounds=5, warmup_rounds=1, setup_seconds=first_s, backend=backend, recipe=recipe,
                      config={k: getattr(c, k) for k in ("num_envs", "num_steps", "update_epochs", "num_minibatches",
                                                         "width", "hidden", "resets")}, **info)


def test_numpy_iteration(throughput, quick):
    name = "quick" if quick else "default"
    set_blas_threads(1)  # as `pycraftax train` runs: the small GEMMs lose to OpenBLAS's spin-waiting threads
    trainer = Trainer(TrainConfig(total_timesteps=10**9, **NUMPY_CONFIGS[name]))
    assert _iterations(throughput, trainer, f"numpy-{name}", "c", blas_threads=1) > 0


@pytest.mark.skipif(not pycraftax.cuda_available(),
                    reason=f"CUDA trainer not measured: {cuda_env.unavailable_reason()}")
def test_cuda_recipe(throughput, recipe):
    from pycraftax.train.cuda_trainer import CudaTrainer

    trainer = CudaTrainer(TrainConfig(total_timesteps=10**12, **CUDA_RECIPES[recipe]))
    try:
        assert _iterations(throughput, trainer, recipe, "cuda", precision="tf32", encoder="sparse") > 0
    finally:
        trainer.close()
