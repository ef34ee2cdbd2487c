"""Env-step benchmark: C reference vs upstream craftax, same CPU, same run.

    python bench/step.py [--envs 1024] [--seconds 5] [--upstream-envs 64]

Both sides step Craftax-Symbolic-v1 with uniformly random actions and the official
auto-reset semantics (CraftaxSymbolicEnv.step: a finished episode restarts in the same step;
upstream generates a world every step and selects it where done, we generate only where
done — same results). Observations are produced every step on both sides. Upstream runs
a jitted lax.scan of vmapped env.step; it is measured on one core (process pinned) and on
all cores. Writes bench/results/step-<UTC time>.json.
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

# Runs in a fresh process pinned to the measured cores, so that XLA sizes its thread pool
# to them; conformance.upstream sets the XLA flag of the reference semantics first.
UPSTREAM_SNIPPET = r"""
import json, os, sys
cores = json.loads(sys.argv[1]); num_envs = int(sys.argv[2]); seconds = float(sys.argv[3]); mode = sys.argv[5]
os.sched_setaffinity(0, set(cores))
sys.path.insert(0, sys.argv[4])
from conformance import upstream  # noqa: F401
from bench.upstream_jax import measure
r = measure(mode, num_envs, seconds)
r.update(cores=len(cores), auto_reset=mode == "auto", steps_per_s_per_core=r["steps_per_s"] / len(cores))
print(json.dumps(r))
"""


def run_upstream(cores: list[int], num_envs: int, seconds: float, auto_reset: bool) -> dict | None:
    try:
        import craftax  # noqa: F401
        import jax  # noqa: F401
    except ImportError:
        return None
    out = subprocess.run(
        [sys.executable, "-c", UPSTREAM_SNIPPET, json.dumps(cores), str(num_envs), str(seconds), str(ROOT),
         "auto" if auto_reset else "no_reset"],
        capture_output=True, text=True, timeout=3000,
    )
    if out.returncode != 0:
        raise RuntimeError(f"upstream benchmark failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=1024)
    parser.add_argument("--upstream-envs", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()

    from pycraftax.bench import bench_step, machine_info

    cores = sorted(os.sched_getaffinity(0))
    result = {"benchmark": "step", "env": "Craftax-Symbolic-v1", "actions": "uniform random",
              "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine_info(),
              "c": [], "upstream": []}
    for threads in sorted({1, len(cores)}):
        r = bench_step(num_envs=args.envs, threads=threads, min_seconds=args.seconds)
        print(f"C reference, {threads} thread(s), {args.envs} envs: {r['steps_per_s']:,.0f} steps/s "
              f"({r['steps_per_s_per_core']:,.0f} per core, {r['episodes_finished']} episodes ended)", flush=True)
        result["c"].append(r)
    for auto in (True, False):
        for use in sorted({1, len(cores)}):
            r = run_upstream(cores[:use], args.upstream_envs, args.seconds, auto)
            if r is None:
                print("upstream craftax/jax not importable: no ratio", flush=True)
                break
            label = "env.step (auto-reset, official)" if auto else "step_env (no reset)"
            print(f"upstream {label}, {use} core(s), {args.upstream_envs} envs: {r['steps_per_s']:,.0f} steps/s "
                  f"(first call {r['first_call_seconds']:.0f} s)", flush=True)
            result["upstream"].append(r)
    if result["upstream"]:
        ours = next(r for r in result["c"] if r["threads"] == 1)["steps_per_s_per_core"]
        official = next(r for r in result["upstream"] if r["cores"] == 1 and r["auto_reset"])["steps_per_s_per_core"]
        result["ratio_per_core_vs_official_step"] = ours / official
        print(f"per-core ratio C / upstream official step: {ours / official:,.0f}x", flush=True)
        no_reset = [r for r in result["upstream"] if r["cores"] == 1 and not r["auto_reset"]]
        if no_reset:
            result["ratio_per_core_vs_step_env"] = ours / no_reset[0]["steps_per_s_per_core"]
            print(f"per-core ratio C / upstream step_env without resets: "
                  f"{result['ratio_per_core_vs_step_env']:,.0f}x", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"step-{result['time_utc'].replace(':', '')}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
