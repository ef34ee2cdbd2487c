"""cuda/sanitize_trainer.py: one small CUDA trainer iteration for compute-sanitizer, per env.

    compute-sanitizer --tool memcheck --leak-check full python3 cuda/sanitize_trainer.py [ENV_ID ...]

16 envs x 4 steps, hidden 32 (so the update's GRU forward takes the persistent kernel), debug mode
(every kernel checked and synchronised, so a fault names its kernel), without the CUDA graph, in
fp32 and in TF32, with optimistic resets. The envs: the ids given, else every id with
a CUDA env (pycraftax.list_envs(backend="cuda")). Prints a line naming the envs that ran and exits 0
when the iterations ran.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pycraftax  # noqa: E402
from pycraftax.train import cuda_trainer, numpy_ppo  # noqa: E402
from pycraftax.train.config import TrainConfig  # noqa: E402

env_ids = sys.argv[1:] or pycraftax.list_envs(backend="cuda")
for env_id in env_ids:
    config = TrainConfig(total_timesteps=10**9, num_envs=16, num_steps=4, width=32, hidden=32, num_minibatches=2,
                         update_epochs=1, env_id=env_id)
    env = pycraftax.make(env_id, num_envs=config.num_envs, backend="cuda", seed=0)
    env.reset()
    for tf32 in (False, True):
        ppo = cuda_trainer.PPO(config, env, tf32=tf32, use_graph=False, debug=True)
        assert ppo.gru_seq_blocks > 0, "the persistent GRU kernel was not selected"
        ppo.begin(env.key)
        ppo.set_params(numpy_ppo.init_params(ppo.model_config, seed=0))
        ppo.iterate()
        ppo.close()
    env.close()
print(f"sanitize_trainer: fp32 and tf32 iterations ran on {', '.join(env_ids)}")
