"""pycraftax: Craftax 1.6.1 as a bit-faithful C reference (and CUDA build), batch-first.

    import pycraftax
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=1024, seed=0)
    obs, info = env.reset()
"""

from __future__ import annotations

from pycraftax.params import EnvParams, StaticEnvParams
from pycraftax.registry import cuda_available, list_envs, make
from pycraftax.rules import rules_fingerprint
from pycraftax.vec_env import CraftaxVecEnv

__version__ = "0.1.0"

__all__ = ["make", "list_envs", "cuda_available", "CraftaxVecEnv", "EnvParams", "StaticEnvParams", "rules_fingerprint",
           "__version__"]

# The gymnasium ids (pycraftax/<env id>) resolve to make().
from pycraftax.gymnasium_env import register_envs  # noqa: E402

register_envs()
