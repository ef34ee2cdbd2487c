"""cuda/sanitize_trainer.py: the PyTorch engine with model gru (the paper recipe's network) for
compute-sanitizer, on every env with a CUDA build.

    compute-sanitizer --tool memcheck python3 cuda/sanitize_trainer.py [ENV_ID ...]
    compute-sanitizer --tool racecheck --racecheck-report all python3 cuda/sanitize_trainer.py

32 envs x 4 steps, hidden 32, two minibatches, optimistic resets: one iteration eager (every
kernel launched on its own) and two with the rollout and the minibatch step captured as CUDA
graphs and replayed, in exact fp32 and in TF32. No --leak-check: PyTorch's caching allocator and
cuBLAS keep their device memory until the process ends. The envs: the ids given, else every id
with a CUDA env (pycraftax.list_envs(backend="cuda")). Prints a line naming the envs that ran and
exits 0 when the iterations ran.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

import pycraftax  # noqa: E402
from pycraftax.train.config import TrainConfig  # noqa: E402
from pycraftax.train.torch_trainer import TorchTrainer  # noqa: E402

env_ids = sys.argv[1:] or pycraftax.list_envs(backend="cuda")
for env_id in env_ids:
    config = TrainConfig(total_timesteps=10**9, num_envs=32, num_steps=4, width=32, hidden=32, num_minibatches=2,
                         update_epochs=1, env_id=env_id)
    for tf32 in (False, True):
        for graphs, iterations in ((False, 1), (True, 2)):
            trainer = TorchTrainer(config, device="cuda", graphs=graphs, tf32=tf32)
            for _ in range(iterations):
                trainer.iterate()
            torch.cuda.synchronize()
            assert all(torch.isfinite(p).all() for p in trainer.model.parameters())
            trainer.env.close()
print(f"sanitize_trainer: eager and graph iterations of model gru, fp32 and tf32, ran on {', '.join(env_ids)}")
