"""Training: the NumPy reference PPO-RNN (the spec), the config and recipes, the run loop
the trainers share, the NumPy trainer over the C env and the PyTorch engine (GPU or CPU, one
process or several).

    from pycraftax.train import numpy_ppo, TrainConfig, Trainer

Modules: config (TrainConfig, RECIPES), loop (the run loop, checkpoints), trainer (NumPy, CPU),
torch_trainer (PyTorch) with its models paper_model and fast_model, distributed (several
processes over torch.distributed), evaluation, cli (`pycraftax train` / `pycraftax eval`), interop (weights
by flax name), summary (a run's score), numpy_ppo (model, loss, optimiser, schedule).
"""

from pycraftax.train.numpy_ppo import LossConfig, ModelConfig, init_params  # noqa: F401

_LAZY = {"TrainConfig": "config", "RECIPES": "config", "Trainer": "trainer", "train": "trainer",
         "evaluate": "evaluation", "load_policy": "evaluation"}


def __getattr__(name):  # lazy: the trainers import the env
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"pycraftax.train.{_LAZY[name]}"), name)
    raise AttributeError(name)
