"""cuda/sanitize_fast.py: the fast recipe's trainer (PyTorch + the cell encoder of
cuda/fast_cuda.cu) for compute-sanitizer, on the full game.

    compute-sanitizer --tool memcheck python3 cuda/sanitize_fast.py
    compute-sanitizer --tool racecheck --racecheck-report all python3 cuda/sanitize_fast.py

64 envs x 8 steps, hidden 32, two minibatches: one iteration eager (every kernel launched on
its own) and two with the minibatch step captured as a CUDA graph and replayed, then the
encoder's forward and backward on their own with a float32 gradient. No --leak-check: PyTorch's
caching allocator and cuBLAS keep their device memory until the process ends, which the
sanitizer would report as leaks. Prints a line and exits 0 when everything ran.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from pycraftax.train import cuda_ops  # noqa: E402
from pycraftax.train.config import TrainConfig  # noqa: E402
from pycraftax.train.torch_trainer import TorchTrainer  # noqa: E402

config = TrainConfig.from_recipe("fast", total_timesteps=10**9, num_envs=64, num_steps=8, num_minibatches=2,
                                 update_epochs=1, width=32, hidden=32)
for graphs, iterations in ((False, 1), (True, 2)):
    trainer = TorchTrainer(config, device="cuda", graphs=graphs)
    for _ in range(iterations):
        trainer.iterate()
    torch.cuda.synchronize()
    records = trainer.buf["obs"][0].contiguous()
    trainer.env.close()

weight = torch.randn(83, config.cell_dim, device="cuda") * 0.1
bias = torch.randn(config.cell_dim, device="cuda") * 0.1
width = trainer.model_config.feature_width
features = cuda_ops.encode_cells(records, weight, bias, width)
grad_weight, grad_bias = cuda_ops.encode_cells_backward(records, weight, bias, torch.ones_like(features).float(),
                                                        width)
torch.cuda.synchronize()
assert torch.isfinite(grad_weight).all() and torch.isfinite(grad_bias).all()
print(f"sanitize_fast: eager and graph iterations and the encoder ran ({config.num_envs} envs, "
      f"{records.shape[0]} records of {records.shape[1]} bytes)")
