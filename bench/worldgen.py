"""World-generation benchmark: C reference vs upstream craftax reset_env, same CPU, same run.

    python bench/worldgen.py [--envs 64] [--seconds 3]

Writes bench/results/worldgen-<UTC time>.json. Upstream runs jit(vmap(reset_env)) in a
subprocess pinned to one core (so its rate is per core, like our single-thread figure)
and, if the machine has more cores, a second time on all of them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

UPSTREAM_SNIPPET = r"""
import os, sys, time, json
cores = json.loads(sys.argv[1]); num_envs = int(sys.argv[2]); seconds = float(sys.argv[3])
os.sched_setaffinity(0, set(cores))
sys.path.insert(0, sys.argv[4])
from conformance import upstream
import jax, numpy as np
from pycraftax.bench import keys_for
fn = upstream._batched_reset(upstream.DEFAULT_PARAMS)
keys = jax.numpy.asarray(keys_for(num_envs, 0))
t0 = time.perf_counter(); jax.block_until_ready(fn(keys, upstream.DEFAULT_PARAMS)); compile_s = time.perf_counter() - t0
worlds, start, seed = 0, time.perf_counter(), 1
while True:
    keys = jax.numpy.asarray(keys_for(num_envs, seed)); seed += 1
    jax.block_until_ready(fn(keys, upstream.DEFAULT_PARAMS)); worlds += num_envs
    el = time.perf_counter() - start
    if el >= seconds and seed > 3: break
print(json.dumps({"cores": len(cores), "num_envs": num_envs, "worlds": worlds, "seconds": el,
                  "worlds_per_s": worlds / el, "worlds_per_s_per_core": worlds / el / len(cores),
                  "compile_seconds": compile_s}))
"""


def run_upstream(cores: list[int], num_envs: int, seconds: float) -> dict | None:
    try:
        import craftax  # noqa: F401
        import jax  # noqa: F401
    except ImportError:
        return None
    out = subprocess.run(
        [sys.executable, "-c", UPSTREAM_SNIPPET, json.dumps(cores), str(num_envs), str(seconds), str(ROOT)],
        capture_output=True, text=True, timeout=1800,
    )
    if out.returncode != 0:
        raise RuntimeError(f"upstream benchmark failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()

    from pycraftax.bench import bench_worldgen, machine_info

    cores = sorted(os.sched_getaffinity(0))
    result = {"benchmark": "worldgen", "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "machine": machine_info(), "c": [], "upstream": []}
    for threads in sorted({1, len(cores)}):
        r = bench_worldgen(num_envs=args.envs, threads=threads, min_seconds=args.seconds)
        print(f"C reference, {threads} thread(s): {r['worlds_per_s']:.0f} worlds/s "
              f"({r['worlds_per_s_per_core']:.0f} per core)", flush=True)
        result["c"].append(r)
    for use in sorted({1, len(cores)}):
        r = run_upstream(cores[:use], args.envs, args.seconds)
        if r is None:
            print("upstream craftax/jax not importable: no ratio", flush=True)
            break
        print(f"upstream jit(vmap(reset_env)), {use} core(s): {r['worlds_per_s']:.1f} worlds/s "
              f"(compile {r['compile_seconds']:.1f} s)", flush=True)
        result["upstream"].append(r)
    if result["upstream"]:
        ours = next(r for r in result["c"] if r["threads"] == 1)["worlds_per_s_per_core"]
        theirs = next(r for r in result["upstream"] if r["cores"] == 1)["worlds_per_s_per_core"]
        result["ratio_per_core"] = ours / theirs
        print(f"per-core ratio C / upstream: {result['ratio_per_core']:.0f}x", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"worldgen-{result['time_utc'].replace(':', '')}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


if __name__ == "__main__":
    main()
