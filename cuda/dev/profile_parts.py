"""cuda/dev/profile_parts.py: where a CUDA env step's time goes, part by part.

    python cuda/dev/profile_parts.py --num-envs 1024 16384 262144 --out parts.json
    PYCRAFTAX_CUDA_LIB=/path/to/other/libcraftax_cuda.so python cuda/dev/profile_parts.py ...

Per batch size, with the library's own entry points (each synchronizes; the median of
repeated calls, host wall clock): reset (world generation + obs of every env), observe (obs
render alone), step_with_keys without obs (game logic alone) and with obs, and env.step
(auto-reset) on fresh episodes. World-generation latency: reset of 1 and of 132 envs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import pycraftax  # noqa: E402
from pycraftax import cuda_env  # noqa: E402


def timed(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3


def profile(n: int, reps: int) -> dict:
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=n, backend="cuda", seed=0)
    lib, ffi = env._lib.lib, env._lib.ffi
    out = {"num_envs": n}
    out["reset_ms"] = timed(lambda: env.reset(seed=1), max(2, reps // 4))
    out["observe_ms"] = timed(env.observe, reps)
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 2**32, (n, 2), dtype=np.uint32)
    acts = rng.integers(0, 43, n).astype(np.int32)
    env._lib.check(lib.craftax_cuda_memcpy_htod(env._p("keys"), ffi.from_buffer(keys), keys.nbytes), "keys")
    env._lib.check(lib.craftax_cuda_memcpy_htod(env._p("actions"), ffi.from_buffer(acts), acts.nbytes), "acts")

    def step_keys(obs):
        env._lib.check(lib.craftax_cuda_step_with_keys_scratch(
            env._p("states"), env._p("actions", "int32_t *"), env._p("keys", "uint32_t *"), n, env._params,
            env._p("obs", "float *") if obs else ffi.NULL, env._p("reward", "float *"), env._p("done", "uint8_t *"),
            env._p("scratch")), "step_with_keys")

    env.reset(seed=2)
    out["step_logic_ms"] = timed(lambda: step_keys(False), reps)
    out["step_logic_obs_ms"] = timed(lambda: step_keys(True), reps)
    env.reset(seed=3)
    a = np.asarray(acts)
    out["autoreset_step_fresh_ms"] = timed(lambda: env.step(a), reps)
    env.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--num-envs", type=int, nargs="+", default=[1024, 16384, 262144])
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    lib = cuda_env.load()
    result = {"library": str(lib.path), "device": lib.device_name, "latency": {}, "sizes": []}
    for n in (1, 132):
        env = pycraftax.make("Craftax-Symbolic-v1", num_envs=n, backend="cuda", seed=0)
        env.reset(seed=0)
        result["latency"][f"reset_{n}_envs_ms"] = timed(lambda: env.reset(seed=1), 5)
        env.close()
    print(json.dumps(result["latency"]), flush=True)
    for n in args.num_envs:
        r = profile(n, args.reps)
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()}), flush=True)
        result["sizes"].append(r)
        if args.out:
            with open(args.out, "w") as f:
                json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
