"""Training throughput: one PPO-RNN iteration (rollout with the env, GAE, the update epochs)
of the NumPy trainer on this CPU, and of the PyTorch engine on a GPU (skipped, saying why,
without one): model gru at the paper recipe's sizes, gru-256 on both games (Classic's GPU
config), and the fast recipe over several env counts. The unit is training steps/s: env steps
consumed per second of training. The first iteration (buffer allocation; CUDA graph capture on
the GPU) is timed apart.

    python -m pytest bench/test_bench_trainer.py -k "gru_recipe and paper"   # the paper recipe
"""

from __future__ import annotations

import time

import pytest

from pycraftax.train.config import RECIPES
from pycraftax.train.trainer import TrainConfig, Trainer, set_blas_threads

# The CPU trainer's default config, and a small one for --bench-quick.
NUMPY_CONFIGS = {"default": {}, "quick": dict(num_envs=16, num_steps=16, width=64, hidden=64)}
# Model gru on the GPU: the Craftax paper's PPO-RNN (the paper recipe), and a throughput config
# with 8x the envs, half the epochs and a quarter of the GEMM work per sample (gru-256), on the
# full game and on Classic (Classic's GPU config: 60 M env steps in 18 s, 3.39 M training steps/s,
# on the hand-written CUDA trainer this engine replaced).
GRU_RECIPES = {
    "paper": dict(RECIPES["paper"]),
    "gru-256": dict(num_envs=8192, num_steps=32, update_epochs=2, num_minibatches=4, width=256, hidden=256),
    "classic-gru-256": dict(num_envs=8192, num_steps=32, update_epochs=2, num_minibatches=4, width=256, hidden=256,
                            env_id="Craftax-Classic-Symbolic-v1"),
}
# The fast recipe's env counts (its other sizes as the recipe has them, minibatches of the recipe's
# envs per minibatch).
FAST_ENVS = (4096, 16384, 65536, 131072)
FAST_MINIBATCH_ENVS = RECIPES["fast"]["num_envs"] // RECIPES["fast"]["num_minibatches"]
SIZES = {"recipe": (list(GRU_RECIPES), ["paper"]), "fast_envs": (list(FAST_ENVS), [16384])}


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


def _gpu_reason() -> str | None:
    try:
        from pycraftax.train import torch_trainer
    except ImportError as e:
        return str(e)
    return torch_trainer.unavailable_reason("cuda")


@pytest.mark.skipif(_gpu_reason() is not None, reason=f"model gru on the GPU not measured: {_gpu_reason()}")
def test_gru_recipe(throughput, recipe):
    from pycraftax.train.torch_trainer import TorchTrainer

    sizes = dict(GRU_RECIPES[recipe], total_timesteps=10**12)
    trainer = TorchTrainer(TrainConfig(**sizes), device="cuda")
    try:
        assert _iterations(throughput, trainer, recipe, "torch-cuda", precision="tf32",
                           env_id=trainer.config.env_id) > 0
    finally:
        trainer.env.close()


@pytest.mark.skipif(_gpu_reason() is not None, reason=f"fast recipe not measured: {_gpu_reason()}")
def test_fast_recipe(throughput, fast_envs):
    from pycraftax.train.torch_trainer import TorchTrainer

    config = TrainConfig.from_recipe("fast", total_timesteps=10**12, num_envs=fast_envs,
                                     num_minibatches=max(1, fast_envs // FAST_MINIBATCH_ENVS))
    trainer = TorchTrainer(config, device="cuda")
    try:
        assert _iterations(throughput, trainer, "fast", "torch-cuda", precision="bf16", encoder="cells") > 0
    finally:
        trainer.env.close()
