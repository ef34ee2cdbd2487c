"""cuda/bench_step.py: env steps/s of backend="cuda" (random actions, same-step auto-reset)
over a sweep of batch sizes, and device memory per env; writes one JSON file.

    python cuda/bench_step.py --out bench/results/cuda-step-$(date -u +%Y-%m-%d).json \
        --num-envs 4096 16384 65536 262144 524288 max [--obs compact]

"max" is the largest num_envs whose buffers fit in the GPU memory free after init (97% of it,
by CudaCraftaxEnv.bytes_per_env and .scratch_bytes). Each step's device time is split (CUDA events in the library,
craftax_cuda_set_profiling) into the step kernel (game logic of every env), the obs kernel (the
not-done envs' obs) and the reset kernel (world generation + obs of the done envs, overlapping
the obs kernel); medians over the fresh and steady windows are reported.

Random actions are drawn on the GPU with PyTorch when it has CUDA (handed over zero-copy),
else with numpy (then copied to the GPU each step). Each size: one reset (timed), 2 warm-up
steps, then steps until --min-seconds have passed (at least --min-steps, default 800). Reported:
"fresh" = the first 40 timed steps (no episode has ended yet), "steady" = the last 100 steps.
Random play ends ~0.38% of episodes a step once it settles (steps 700-799), fewer before
(0.12% over steps 50-149), and world generation scales with the ends: the default window is a
settled one so that sizes compare at the same rate (v13); the JSON records the rate. Every library call synchronizes, so host
wall-clock time is device time plus launch overhead.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pycraftax  # noqa: E402
from pycraftax import cuda_env  # noqa: E402
from pycraftax.bench import machine_info  # noqa: E402


def nvidia_smi() -> dict:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20,
        ).stdout.strip()
        name, driver, memory, clock = [x.strip() for x in out.splitlines()[0].split(",")]
        return {"gpu": name, "driver": driver, "memory_total": memory, "sm_clock_max": clock}
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return {}


FRESH_STEPS = 40  # steps 0..39 after reset: (almost) no episode has ended yet
STEADY_STEPS = 100  # the last 100 steps of the run (>= 300 steps): episodes end regularly


def bench_size(num_envs: int, min_seconds: float, min_steps: int, seed: int = 0, obs: str = "float",
               resets: str = "auto") -> dict:
    lib = cuda_env.load()
    free0, total = lib.mem_info()
    profiling = hasattr(lib.lib, "craftax_cuda_set_profiling") and resets == "auto"
    try:
        kw = {"obs": obs} if obs != "float" else {}
        env = pycraftax.make("Craftax-Symbolic-v1", num_envs=num_envs, backend="cuda", seed=seed, resets=resets,
                             **kw)
    except MemoryError as exc:
        return {"num_envs": num_envs, "error": str(exc)}
    free1, _ = lib.mem_info()
    t0 = time.perf_counter()
    env.reset(seed=seed)
    reset_s = time.perf_counter() - t0

    try:
        import torch

        use_torch = torch.cuda.is_available()
    except ImportError:
        use_torch = False
    rng = np.random.default_rng(seed)

    def actions():
        if use_torch:
            return torch.randint(0, 43, (num_envs,), dtype=torch.int32, device="cuda")
        return rng.integers(0, 43, num_envs).astype(np.int32)

    for _ in range(2):
        env.step(actions())
    if profiling:
        lib.check(lib.lib.craftax_cuda_set_profiling(1), "set_profiling")
        prof = lib.ffi.new("float[4]")
    splits = []
    steps, dones, times, done_counts = 0, 0, [], []
    start = time.perf_counter()
    while True:
        a = actions()
        t = time.perf_counter()
        _, _, _, _, info = env.step(a)
        times.append(time.perf_counter() - t)
        if profiling:
            lib.check(lib.lib.craftax_cuda_last_profile(prof), "last_profile")
            splits.append([prof[k] for k in range(4)])
        steps += 1
        if use_torch:
            ended = int(torch.as_tensor(info["done"], device="cuda").sum().item())
        else:
            ended = int(info["done"].numpy().sum())
        dones += ended
        done_counts.append(ended)
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds and steps >= min_steps:
            break
    free2, _ = lib.mem_info()
    # lazy levels: how much of the world the envs have needed so far (random play seldom descends)
    generated = 9 - np.array([bin(int(p)).count("1") for p in env.pending_levels()])
    if profiling:
        lib.check(lib.lib.craftax_cuda_set_profiling(0), "set_profiling")
    env.close()
    step_s = float(np.median(times))
    q = max(len(times) // 4, 1)  # the last quarter: episodes are no longer all fresh
    f = min(FRESH_STEPS, len(times))
    s = min(STEADY_STEPS, len(times))
    split = {}
    if splits:
        arr = np.asarray(splits, dtype=np.float64)
        for window, rows in (("fresh", arr[:f]), ("steady", arr[-s:])):
            med = np.median(rows, axis=0)
            split[window] = {"step_kernel_ms": med[0], "obs_kernel_ms": med[1], "reset_kernel_ms": med[2],
                             "device_total_ms": med[3], "mean_reset_kernel_ms": float(rows[:, 2].mean()),
                             "mean_device_total_ms": float(rows[:, 3].mean())}
    return {
        "obs": obs,
        "device_time_split": split,
        "fresh_steps": f"0..{f - 1}",
        "fresh_env_steps_per_s": num_envs * f / float(np.sum(times[:f])),
        "fresh_episode_ends_per_env_step": float(np.sum(done_counts[:f])) / (f * num_envs),
        "steady_steps": f"{len(times) - s}..{len(times) - 1}",
        "steady_env_steps_per_s": num_envs * s / float(np.sum(times[-s:])),
        "steady_episode_ends_per_env_step": float(np.sum(done_counts[-s:])) / (s * num_envs),
        "steady_median_step_ms": float(np.median(times[-s:])) * 1e3,
        "num_envs": num_envs,
        "reset_seconds": reset_s,
        "worlds_per_s_reset": num_envs / reset_s,
        "steps": steps,
        "seconds": elapsed,
        "env_steps_per_s": num_envs * steps / elapsed,
        "median_step_ms": step_s * 1e3,
        "env_steps_per_s_median": num_envs / step_s,
        "episode_ends_per_env_step": dones / (steps * num_envs),
        "last_quarter_env_steps_per_s": num_envs * q / float(np.sum(times[-q:])),
        "last_quarter_episode_ends_per_env_step": float(np.sum(done_counts[-q:])) / (q * num_envs),
        "max_step_ms": float(np.max(times)) * 1e3,
        "buffers_bytes_per_env": env.device_bytes // num_envs,
        "allocated_bytes_per_env": (free0 - free1) / num_envs,
        "used_bytes_per_env_after_steps": (free0 - free2) / num_envs,
        "gpu_free_before_bytes": free0,
        "gpu_total_bytes": total,
        "actions_from": "torch (device)" if use_torch else "numpy (host, copied)",
        "levels_generated_per_env_at_end": float(generated.mean()),
        "envs_past_level_0_at_end": float(np.mean(generated > 1)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", nargs="+", default=["4096", "16384", "65536", "262144", "524288", "max"])
    parser.add_argument("--obs", choices=["float", "compact"], default="float")
    parser.add_argument("--resets", choices=["auto", "optimistic"], default="auto",
                        help="optimistic: make(..., resets='optimistic'), N/16 worlds per step, only taken ones "
                             "generated (the device split then times nothing: its events cover the auto path)")
    parser.add_argument("--min-seconds", type=float, default=3.0)
    parser.add_argument("--min-steps", type=int, default=800, help="at least this many timed steps (the steady "
                        "window is their last 100; 800 puts it where random play's episode ends have settled)")
    parser.add_argument("--chunks", type=int, default=None,
                        help="craftax_cuda_set_autoreset_chunks(chunks, 16384); default: the library's (1)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    lib = cuda_env.load()
    if args.chunks is not None:
        lib.check(lib.lib.craftax_cuda_set_autoreset_chunks(args.chunks, 16384), "set_autoreset_chunks")
    free, total = lib.mem_info()
    result = {
        "autoreset_chunks": args.chunks if args.chunks is not None else "default (1)",
        "benchmark": "cuda-step",
        "time_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine_info(),
        "device": lib.device_name,
        "nvidia_smi": nvidia_smi(),
        "library": str(lib.path),
        "build": "nvcc -O3 -fmad=false -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 "
                 "-cudart static (cuda/Makefile); one thread per env, AoS CraftaxState in global memory; "
                 "v2: auto-reset split (step kernel, done list, dense reset kernel on a second stream, chunked); "
                 "v3: warp per env for world generation and obs, spawn_mobs without per-cell arrays; "
                 "v4: obs through the compact record (one coalesced float4 write per 4 floats), ores drawn only "
                 "where the requirement block is",
        "env": "Craftax-Symbolic-v1, default EnvParams, random actions, same-step auto-reset (env.step)",
        "settings": {k: v for k, v in sorted(os.environ.items())
                     if k.startswith("PYCRAFTAX_") and k != "PYCRAFTAX_COMMIT"},
        "gpu_free_after_init_bytes": free,
        "gpu_total_bytes": total,
        "results": [],
    }
    print(f"{'envs':>8} {'reset s':>8} {'steps':>6} {'fresh/s':>12} {'steady/s':>12} {'steady ms':>10} "
          f"{'ends/step':>10} {'KiB/env':>8}", flush=True)
    sizes = []
    for n in args.num_envs:
        if n == "max":
            kw = {"obs": args.obs} if args.obs != "float" else {}
            per_env = cuda_env.CudaCraftaxEnv.bytes_per_env(**kw) + 5  # + the library's done list and flag
            fixed = cuda_env.CudaCraftaxEnv.scratch_bytes(1 << 30)  # the batch's world-gen scratch, at most
            n = (int(free * 0.97) - fixed) // per_env // 1024 * 1024
            result["max_num_envs"] = n
        sizes.append(int(n))
    result["obs"] = args.obs
    result["resets"] = args.resets
    for n in sizes:
        r = bench_size(n, args.min_seconds, args.min_steps, obs=args.obs, resets=args.resets)
        result["results"].append(r)
        if args.out:  # after every size, so a run cut short keeps what it measured
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            with open(args.out, "w") as f:
                json.dump(result, f, indent=2)
        if "error" in r:
            print(f"{n:>8} {r['error']}", flush=True)
            continue
        print(f"{n:>8} {r['reset_seconds']:>8.2f} {r['steps']:>6} {r['fresh_env_steps_per_s']:>12.0f} "
              f"{r['steady_env_steps_per_s']:>12.0f} {r['steady_median_step_ms']:>10.2f} "
              f"{r['steady_episode_ends_per_env_step']:>10.5f} "
              f"{r['allocated_bytes_per_env'] / 1024:>8.1f}", flush=True)
        for window, sp in r.get("device_time_split", {}).items():
            print(f"{'':>8} {window}: step {sp['step_kernel_ms']:.3f} ms, obs {sp['obs_kernel_ms']:.3f} ms, "
                  f"reset {sp['reset_kernel_ms']:.3f} ms (mean {sp['mean_reset_kernel_ms']:.3f}), "
                  f"device {sp['device_total_ms']:.3f} ms", flush=True)
    if args.out:
        print("wrote", args.out)


if __name__ == "__main__":
    main()
