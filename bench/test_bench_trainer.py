"""Training throughput: one PPO-RNN iteration (rollout with the env, GAE, the update epochs)
of the NumPy trainer on this CPU, of the CUDA trainer's configs and of the fast recipe's
PyTorch trainer over several env counts on a GPU (skipped, saying why, without one). The unit is training steps/s: env steps consumed per second of training.
The first iteration (buffer allocation; CUDA graph capture on the GPU) is timed apart.
"""

from __future__ import annotations

import time

import pytest

import pycraftax
from pycraftax import cuda_env
from pycraftax.train.config import RECIPES
from pycraftax.train.trainer import TrainConfig, Trainer, set_blas_threads

# The CPU trainer's default config, and a small one for --bench-quick.
NUMPY_CONFIGS = {"default": {}, "quick": dict(num_envs=16, num_steps=16, width=64, hidden=64)}
# The CUDA trainer's configs of the published runs: the Craftax paper's PPO-RNN, and a throughput
# probe with 8x the envs, half the epochs and a quarter of the GEMM work per sample (gru-256).
CUDA_RECIPES = {
    "paper": dict(num_envs=1024, num_steps=64, update_epochs=4, num_minibatches=8, width=512, hidden=512),
    "gru-256": dict(num_envs=8192, num_steps=32, update_epochs=2, num_minibatches=4, width=256, hidden=256),
}
# The fast recipe's env counts (its other sizes as the recipe has them, minibatches of the recipe's
# envs per minibatch).
FAST_ENVS = (4096, 16384, 65536, 131072)
FAST_MINIBATCH_ENVS = RECIPES["fast"]["num_envs"] // RECIPES["fast"]["num_minibatches"]
SIZES = {"recipe": (list(CUDA_RECIPES), ["paper"]), "fast_envs": (list(FAST_ENVS), [16384])}


def _iterations(throughput, trainer, recipe: str, backend: str, **info) -> float:
    c = trainer.config
    t0 = time.perf_counter()
    trainer.step()  # first iteration: allocations, and the CUDA graph capture on the GPU
    first_s = time.perf_counter() - t0
    return throughput(trainer.step, items=c.num_envs * c.num_steps, unit="training steps/s", seconds=10.0,
                      min_rounds=5, warmup_rounds=1, setup_seconds=first_s, backend=backend, recipe=recipe,
                      config={k: getattr(c, k) for k in ("num_envs", "num_steps", "update_epochs", "num_minibatches",
                                                         "width", "hidden", "resets", "model", "cell_dim")}, **info)


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


def _fast_reason() -> str | None:
    try:
        from pycraftax.train import torch_trainer
    except ImportError as e:
        return str(e)
    return torch_trainer.unavailable_reason("cuda")


@pytest.mark.skipif(_fast_reason() is not None, reason=f"fast recipe not measured: {_fast_reason()}")
def test_fast_recipe(throughput, fast_envs):
    from pycraftax.train.torch_trainer import TorchTrainer

    config = TrainConfig.from_recipe("fast", total_timesteps=10**12, num_envs=fast_envs,
                                     num_minibatches=max(1, fast_envs // FAST_MINIBATCH_ENVS))
    trainer = TorchTrainer(config, device="cuda")
    try:
        assert _iterations(throughput, trainer, "fast", "torch-cuda", precision="bf16", encoder="cells") > 0
    finally:
        trainer.env.close()
