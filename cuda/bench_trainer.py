"""cuda/bench_trainer.py: training steps/s of the CUDA PPO-RNN trainer (cuda/ppo_cuda.cu).

For each recipe variant (recipe x precision x encoder): build the env and trainer, run two
iterations (the first eager, the second captures the CUDA graph), time `--iters` graph
iterations (rollout + GAE + update, with the env), then time the trainer's own work alone,
each part graph-captured and replayed `--reps` times with CUDA events:
  policy_s: the rollout's policy work (obs nonzero lists, forward, sampling, bootstrap, GAE)
            over the stored obs, without env steps;
  update_s: update_epochs x num_minibatches of forward, loss, BPTT backward, clip, Adam.
rollout_s = iteration device time - update_s (env + policy); env_s = rollout_s - policy_s.
policy_only_steps_per_s = steps / (policy_s + update_s): the trainer's throughput if the env
were free. The env's step (another branch speeds it up) dominates train_steps_per_s today.

    python cuda/bench_trainer.py                       # -> bench/results/trainer-<date>.json
    python cuda/bench_trainer.py --variants paper:fp32:sparse,fast:tf32:sparse --out x.json
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
    # the env's step costs about the same up to ~65k envs, so more envs per step; half the
    # epochs, a quarter of the GEMM work per sample (256 wide). Measured 2026-11-30: 5.8x the
    # paper recipe's steps/s but it learns ~3-5x less per env-step (12.1% of max at 1e9 steps;
    # the paper recipe had 9.9% after 72M), so it is a throughput probe, not a better recipe
    "fast": dict(num_envs=8192, num_steps=32, update_epochs=2, num_minibatches=4, width=256, hidden=256),
}
DEFAULT_VARIANTS = "paper:fp32:sparse,paper:tf32:sparse,paper:tf32:dense,fast:tf32:sparse,fast:fp32:sparse"


def commit() -> str | None:
    if os.environ.get("PYCRAFTAX_COMMIT"):
        return os.environ["PYCRAFTAX_COMMIT"]
    try:
        return subprocess.check_output(["git", "-C", str(ROOT), "rev-parse", "HEAD"], text=True,
                                       stderr=subprocess.DEVNULL).strip()
    except Exception:
        return None


def bench(recipe: str, precision: str, encoder: str, iters: int, reps: int, phase_reps: int = 5,
          resets: str = "optimistic") -> dict:
    import numpy as np

    import pycraftax
    from pycraftax import cuda_env
    from pycraftax.train import cuda_trainer as ct
    from pycraftax.train import numpy_ppo as npp
    from pycraftax.train.trainer import TrainConfig

    sizes = RECIPES[recipe]
    cfg = TrainConfig(total_timesteps=10**12, resets=resets, **sizes)
    lib = cuda_env.load()
    free0, _ = lib.mem_info()
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=cfg.num_envs, backend="cuda", seed=0, resets=cfg.resets,
                         reset_ratio=cfg.reset_ratio)
    env.reset()
    ppo = ct.PPO(cfg, env, tf32=precision == "tf32", use_graph=True, encoder=encoder)
    ppo.begin(env._key)
    ppo.set_params(npp.init_params(ppo.model_config, seed=0, dtype=np.float32))
    free1, _ = lib.mem_info()
    steps = cfg.num_envs * cfg.num_steps
    t0 = time.perf_counter()
    for _ in range(2):
        ppo.iterate()
    warm_s = time.perf_counter() - t0
    wall, dev = [], []
    for _ in range(iters):
        t = time.perf_counter()
        ppo.iterate()
        wall.append(time.perf_counter() - t)
        dev.append(ppo.last_iterate_ms / 1e3)
    losses = ppo.losses()
    overflow = ppo.nnz_overflow
    policy_s = ppo.profile(ct.PROFILE_POLICY, reps) / 1e3
    update_s = ppo.profile(ct.PROFILE_UPDATE, reps) / 1e3
    phases = {}
    if phase_reps:
        for name, part in ct.PROFILE_PHASES.items():
            try:
                phases[name] = ppo.profile(part, phase_reps)
            except (ValueError, RuntimeError):
                phases[name] = None  # e.g. the other dW0 method where it needs TF32
    iteration_s, device_s = float(np.median(wall)), float(np.median(dev))
    rollout_s = device_s - update_s
    res = dict(recipe=recipe, precision=precision, encoder=encoder, resets=resets, **sizes, steps_per_iteration=steps,
               iters=iters, warmup_s=warm_s, iteration_s=iteration_s, iteration_device_s=device_s,
               train_steps_per_s=steps / iteration_s, rollout_s=rollout_s, update_s=update_s, policy_s=policy_s,
               env_s=rollout_s - policy_s, policy_only_steps_per_s=steps / (policy_s + update_s),
               update_steps_per_s=steps / update_s, trainer_bytes=int(free0 - free1),
               env_bytes=int(env.device_bytes), nnz_overflow=overflow, last_losses=losses,
               update_phases_ms=phases,
               minibatch_ms=update_s * 1e3 / (cfg.update_epochs * cfg.num_minibatches))
    ppo.close()
    env.close()
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variants", default=DEFAULT_VARIANTS,
                    help=f"comma list of recipe:precision:encoder[:resets], recipe in {sorted(RECIPES)}, precision "
                         "fp32|tf32, encoder sparse|dense, resets optimistic (default, as ppo_rnn.py)|auto")
    ap.add_argument("--iters", type=int, default=1, help="timed full iterations (with env) per variant")
    ap.add_argument("--reps", type=int, default=3, help="graph replays of the policy / update parts")
    ap.add_argument("--phase-reps", type=int, default=5,
                    help="graph replays of each phase of one minibatch's update (0: skip the split)")
    ap.add_argument("--out", default=None, help="default bench/results/trainer-<date>.json")
    args = ap.parse_args()
    from pycraftax import cuda_env

    lib = cuda_env.load()
    date = time.strftime("%Y-%m-%d", time.gmtime())
    path = args.out or str(ROOT / "bench" / "results" / f"trainer-{date}.json")
    out = dict(gpu=lib.device_name, commit=commit(), date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               settings={k: v for k, v in sorted(os.environ.items())
                         if k.startswith("PYCRAFTAX_") and k != "PYCRAFTAX_COMMIT"},
               recipes=RECIPES, results=[])
    print(f"{'variant':<22} {'train steps/s':>13} {'policy-only':>12} {'iter s':>7} {'rollout s':>9} "
          f"{'policy s':>8} {'env s':>7} {'update s':>8}", flush=True)
    for v in args.variants.split(","):
        recipe, precision, encoder, *rest = v.split(":")
        resets = rest[0] if rest else "optimistic"
        try:
            r = bench(recipe, precision, encoder, args.iters, args.reps, args.phase_reps, resets=resets)
            print(f"{v:<22} {r['train_steps_per_s']:13,.0f} {r['policy_only_steps_per_s']:12,.0f} "
                  f"{r['iteration_s']:7.3f} {r['rollout_s']:9.3f} {r['policy_s']:8.4f} {r['env_s']:7.3f} "
                  f"{r['update_s']:8.4f}", flush=True)
            if r["update_phases_ms"]:
                split = ", ".join(f"{k} {ms:.3f}" for k, ms in r["update_phases_ms"].items() if ms is not None)
                print(f"  one minibatch {r['minibatch_ms']:.3f} ms: {split}", flush=True)
        except Exception as exc:  # keep going: one failing variant should not hide the others
            traceback.print_exc()
            r = dict(recipe=recipe, precision=precision, encoder=encoder, resets=resets,
                     error=f"{type(exc).__name__}: {exc}")
        out["results"].append(r)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
    print(f"wrote {path}")
    return 0 if all("error" not in r for r in out["results"]) else 1


if __name__ == "__main__":
    sys.exit(main())
