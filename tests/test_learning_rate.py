"""One learning-rate schedule: numpy_ppo.learning_rate is what the NumPy trainer, the PyTorch
engine and the baseline-shaped linear_schedule use."""

from __future__ import annotations

import pytest

from pycraftax.train import numpy_ppo as npp
from pycraftax.train.config import TrainConfig
from pycraftax.train.trainer import Trainer, set_blas_threads


def test_python_schedule():
    assert npp.learning_rate(2e-4, True, 0, 240) == 2e-4
    assert npp.learning_rate(2e-4, False, 239, 240) == 2e-4
    assert npp.learning_rate(1.0, True, 60, 240) == 0.75
    rates = [npp.learning_rate(2e-4, True, u, 240) for u in range(240)]
    assert all(a > b for a, b in zip(rates, rates[1:])) and rates[-1] > 0
    # the baseline's form counts optimiser steps: every minibatch step of an update has its rate
    for step in range(0, 4 * 8 * 240, 13):
        assert npp.linear_schedule(2e-4, step, 8, 4, 240) == npp.learning_rate(2e-4, True, step // 32, 240)


def test_trainer_applies_the_schedule():
    set_blas_threads(1)
    cfg = TrainConfig(num_envs=4, num_steps=4, total_timesteps=4 * 4 * 3, update_epochs=1, num_minibatches=1,
                      width=8, hidden=8)
    t = Trainer(cfg)
    for update in range(cfg.num_updates):
        m = t.step()
        assert m["lr"] == npp.learning_rate(cfg.lr, True, update, cfg.num_updates)  # one minibatch: no mean


def test_pytorch_engine_applies_the_schedule():
    pytest.importorskip("torch")
    from pycraftax.train.torch_trainer import TorchTrainer

    cfg = TrainConfig(num_envs=4, num_steps=4, total_timesteps=4 * 4 * 3, update_epochs=1, num_minibatches=1,
                      width=8, hidden=8)
    t = TorchTrainer(cfg, device="cpu")
    for update in range(cfg.num_updates):
        m = t.step()
        assert m["lr"] == npp.learning_rate(cfg.lr, True, update, cfg.num_updates)
        assert t.opt.param_groups[0]["lr"] == m["lr"]
