"""pytest-benchmark suite: the PPO-RNN training loop of examples/jax_ppo_rnn.py (one jitted
program, env inside) with pycraftax.jax and with craftax 1.6.1 on the same device, and the
loop's env steps alone. extra_info gives env steps/s (unit "env steps/s") and the env's share.

    python -m pytest bench/test_bench_jax_loop.py --benchmark-only
    PYCRAFTAX_BENCH_ENVS=64 PYCRAFTAX_BENCH_STEPS=64 python -m pytest bench/test_bench_jax_loop.py
"""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path

import pytest

pytest.importorskip("jax")
pytest.importorskip("craftax")

_SPEC = importlib.util.spec_from_file_location(
    "jax_ppo_rnn", Path(__file__).resolve().parent.parent / "examples" / "jax_ppo_rnn.py"
)
ppo = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ppo)  # sets the XLA flag before jax is imported

import jax  # noqa: E402

CONFIG = {
    "NUM_ENVS": int(os.environ.get("PYCRAFTAX_BENCH_ENVS", 16)),
    "NUM_STEPS": int(os.environ.get("PYCRAFTAX_BENCH_STEPS", 32)),
    "NUM_UPDATES": 2, "LAYER_SIZE": 64, "NUM_MINIBATCHES": 4, "UPDATE_EPOCHS": 1,
    "GAMMA": 0.99, "GAE_LAMBDA": 0.8, "CLIP_EPS": 0.2, "ENT_COEF": 0.01, "VF_COEF": 0.5,
    "MAX_GRAD_NORM": 1.0, "LR": 2e-4,
}
ENV_STEPS = CONFIG["NUM_ENVS"] * CONFIG["NUM_STEPS"] * CONFIG["NUM_UPDATES"]


@functools.lru_cache(maxsize=None)
def compiled(env_name: str, part: str):
    env = ppo.make_env(env_name)
    make = ppo.make_train if part == "train" else ppo.make_env_only_loop
    key = jax.random.PRNGKey(0)
    return jax.jit(make(CONFIG, env)).lower(key).compile(), key


@pytest.mark.parametrize("part", ["train", "env_only"])
@pytest.mark.parametrize("env_name", ["pycraftax", "craftax"])
def test_bench_jax_loop(benchmark, env_name, part):
    fn, key = compiled(env_name, part)
    benchmark.pedantic(lambda: jax.block_until_ready(fn(key)), rounds=3, iterations=1, warmup_rounds=1)
    benchmark.extra_info.update({
        "env": env_name, "part": part, "device": jax.devices()[0].device_kind, "env_steps": ENV_STEPS,
        "unit": "env steps/s", "env_steps_per_s": ENV_STEPS / benchmark.stats.stats.mean,
    })
