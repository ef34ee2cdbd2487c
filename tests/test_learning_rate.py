"""One learning-rate schedule: numpy_ppo.learning_rate is what both the NumPy trainer and the
baseline-shaped linear_schedule use, and the CUDA library's craftax_ppo_learning_rate gives
the same doubles, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from pycraftax.train import numpy_ppo as npp
from pycraftax.train.config import TrainConfig
from pycraftax.train.trainer import Trainer, set_blas_threads

BASE_LRS = (2e-4, 2.5e-4, float(np.float32(2e-4)), 3e-4, 0.1, 1.0, 7.0)
NUM_UPDATES = (1, 2, 3, 7, 240, 15_258, 1_000_003, 2**40 + 5)


def schedule_points(num_updates: int) -> list[int]:
    """Every update of short runs; the ends and a spread of interior updates of long ones."""
    if num_updates <= 2_000:
        return list(range(num_updates + 1))
    rng = np.random.default_rng(num_updates)
    inner = rng.integers(0, num_updates, 2_000).tolist()
    return sorted({0, 1, num_updates - 1, num_updates, *inner})


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


def test_cuda_library_schedule_is_bitwise_the_python_one():
    from cffi import FFI

    from pycraftax import cuda_env

    path = cuda_env.library_path()
    if path is None:
        pytest.skip("the CUDA library libcraftax_cuda.so is not built (make -C cuda, or pip install with nvcc)")
    ffi = FFI()
    ffi.cdef("double craftax_ppo_learning_rate(double base_lr, int anneal, int64_t update, int64_t num_updates);")
    lib = ffi.dlopen(str(path))  # ABI mode: no GPU needed for a host function
    checked = 0
    for num_updates in NUM_UPDATES:
        points = schedule_points(num_updates)
        for base_lr in BASE_LRS:
            for anneal in (1, 0):
                want = np.array([npp.learning_rate(base_lr, bool(anneal), u, num_updates) for u in points])
                got = np.array([lib.craftax_ppo_learning_rate(base_lr, anneal, u, num_updates) for u in points])
                bad = np.flatnonzero(want.view(np.uint64) != got.view(np.uint64))
                assert not bad.size, (f"base_lr {base_lr}, anneal {anneal}, num_updates {num_updates}: update "
                                      f"{points[bad[0]]} gives {got[bad[0]]!r} in CUDA, {want[bad[0]]!r} in Python")
                checked += len(points)
    assert checked > 50_000
