"""cuda/bench_trainer.py: training steps/s of the CUDA PPO-RNN trainer (cuda/ppo_cuda.cu).

For each recipe: build the env and trainer, run `--warmup` iterations (the first is eager,
the second captures the CUDA graph), then time `--iters` graph iterations (rollout + GAE +
update) and, separately, rollouts alone (policy forward + env step + GAE), so the update's
share shows. Writes one JSON (device, commit, per-recipe config, steps/s, ms per iteration,
device memory) and prints a table.

    python cuda/bench_trainer.py --out bench/results/cuda-trainer.json
    python cuda/bench_trainer.py --recipes paper --iters 5 --no-tf32
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RECIPES = {
    # the Craftax paper's PPO-RNN (DESIGN.md "Training")
    "paper": dict(num_envs=1024, num_steps=64, update_epochs=4, num_minibatches=8, width=512, hidden=512),
    # more envs per iteration amortise the env step's latency; fewer epochs per sample
    "fast": dict(num_envs=8192, num_steps=32, update_epochs=2, num_minibatches=4, width=512, hidden=512),
    "wide_batch": dict(num_envs=16384, num_steps=16, update_epochs=1, num_minibatches=4, width=256, hidden=256),
}


def commit() -> str | None:
    try:
        return subprocess.check_output(["git", "-C", str(ROOT), "rev-parse", "HEAD"], text=True).strip()
    except Exception:
        return None


def bench(name: str, sizes: dict, iters: int, warmup: int, tf32: bool, rollout_iters: int) -> dict:
    import numpy as np

    import pycraftax
    from pycraftax import cuda_env
    from pycraftax.train import cuda_trainer as ct
    from pycraftax.train import numpy_ppo as npp
    from pycraftax.train.trainer import TrainConfig

    cfg = TrainConfig(total_timesteps=10**12, **sizes)
    lib = cuda_env.load()
    free0, _ = lib.mem_info()
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=cfg.num_envs, backend="cuda", seed=0)
    env.reset()
    ppo = ct.PPO(cfg, env, tf32=tf32, use_graph=True)
    ppo.begin(env._key)
    ppo.set_params(npp.init_params(ppo.model_config, seed=0, dtype=np.float32))
    free1, _ = lib.mem_info()
    steps = cfg.num_envs * cfg.num_steps
    t0 = time.perf_counter()
    for _ in range(warmup):
        ppo.iterate()
    warm_s = time.perf_counter() - t0
    times, device_ms = [], []
    for _ in range(iters):
        t = time.perf_counter()
        ppo.iterate()
        times.append(time.perf_counter() - t)
        device_ms.append(ppo.last_iterate_ms)
    rollout_times = []
    for _ in range(rollout_iters):
        t = time.perf_counter()
        ppo.rollout()
        rollout_times.append(time.perf_counter() - t)
    losses = ppo.losses()
    res = dict(recipe=name, config=cfg.to_dict(), tf32=tf32, steps_per_iteration=steps, iters=iters,
               warmup_s=warm_s, iteration_ms_median=1e3 * float(np.median(times)),
               device_ms_median=float(np.median(device_ms)),
               sps=steps / float(np.median(times)), sps_mean=steps * iters / float(np.sum(times)),
               rollout_ms_median=1e3 * float(np.median(rollout_times)) if rollout_times else None,
               update_ms_estimate=(1e3 * float(np.median(times) - np.median(rollout_times))) if rollout_times
               else None,
               trainer_bytes=int(free0 - free1), env_bytes=int(env.device_bytes), last_losses=losses)
    ppo.close()
    env.close()
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recipes", default="paper,fast,wide_batch", help=f"comma list of {sorted(RECIPES)}")
    ap.add_argument("--iters", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rollout-iters", type=int, default=2)
    ap.add_argument("--no-tf32", action="store_true")
    ap.add_argument("--also-fp32", action="store_true", help="also run each recipe with TF32 off")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    from pycraftax import cuda_env

    lib = cuda_env.load()
    out = dict(device=lib.device_name, commit=commit(), date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               target_sps=3_000_000, official_jax_sps=96_000, results=[])
    variants = [not args.no_tf32] + ([False] if args.also_fp32 and not args.no_tf32 else [])
    for name in args.recipes.split(","):
        for tf32 in variants:
            print(f"== {name} (tf32={tf32}) {RECIPES[name]}", flush=True)
            try:
                r = bench(name, RECIPES[name], args.iters, args.warmup, tf32, args.rollout_iters)
                print(f"   {r['sps']:,.0f} training steps/s, {r['iteration_ms_median']:.1f} ms/iteration "
                      f"(rollout {r['rollout_ms_median']:.1f} ms, update ~{r['update_ms_estimate']:.1f} ms), "
                      f"trainer memory {r['trainer_bytes'] / 2**30:.2f} GiB", flush=True)
            except Exception as exc:  # keep going: one failing recipe should not hide the others
                traceback.print_exc()
                r = dict(recipe=name, tf32=tf32, error=f"{type(exc).__name__}: {exc}")
            out["results"].append(r)
            if args.out:
                os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
                with open(args.out, "w") as f:
                    json.dump(out, f, indent=1)
    return 0 if all("error" not in r for r in out["results"]) else 1


if __name__ == "__main__":
    sys.exit(main())
