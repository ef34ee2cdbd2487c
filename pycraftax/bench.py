"""Throughput measurements of the C reference, shared by `pycraftax bench` and bench/."""

from __future__ import annotations

import os
import platform
import subprocess
import time

import numpy as np

from pycraftax import jax_random
from pycraftax._native import lib


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_commit() -> str:
    """The source commit: $PYCRAFTAX_COMMIT where the tree was copied without its git
    history (e.g. to a GPU machine), else git's HEAD."""
    if os.environ.get("PYCRAFTAX_COMMIT"):
        return os.environ["PYCRAFTAX_COMMIT"]
    try:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        out = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        commit = out.stdout.strip()
        return commit if out.returncode == 0 and len(commit) == 40 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine_info() -> dict:
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "commit": git_commit(),
    }


def bench_worldgen(num_envs: int = 64, threads: int = 1, min_seconds: float = 2.0, seed: int = 0,
                   progress=None) -> dict:
    """Worlds per second of the C reference's reset_env over `num_envs`-wide batches."""
    import pycraftax

    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=num_envs, backend="c", seed=seed)
    env.reset(seed=seed)  # warm-up: page in the state buffer
    key = [jax_random.prng_key(seed)]

    def one_call() -> None:
        key[0], sub = jax_random.split(key[0], 2)
        env.reset_with_keys(jax_random.split(sub, num_envs))

    calls, elapsed = _timed(one_call, threads, min_seconds, min_calls=3,
                            progress=progress and (lambda c, t: progress(c * num_envs, t)))
    worlds = calls * num_envs
    return {
        "num_envs": num_envs,
        "threads": threads,
        "worlds": worlds,
        "seconds": elapsed,
        "worlds_per_s": worlds / elapsed,
        "worlds_per_s_per_core": worlds / elapsed / threads,
    }


def _timed(one_call, threads: int, min_seconds: float, min_calls: int, progress=None) -> tuple[int, float]:
    """Run one_call() on `threads` C threads until min_seconds and min_calls have passed;
    progress(calls, elapsed) after each call. Returns (calls, elapsed seconds)."""
    lib.craftax_set_num_threads(threads)
    try:
        calls, start = 0, time.perf_counter()
        while True:
            one_call()
            calls += 1
            elapsed = time.perf_counter() - start
            if progress is not None:
                progress(calls, elapsed)
            if elapsed >= min_seconds and calls >= min_calls:
                return calls, elapsed
    finally:
        lib.craftax_set_num_threads(0)


def keys_for(num: int, seed: int) -> np.ndarray:
    return jax_random.split(jax_random.prng_key(seed), num)


def bench_step(num_envs: int = 1024, threads: int = 1, min_seconds: float = 3.0, seed: int = 0,
               progress=None) -> dict:
    """Env steps per second of the C reference's auto-reset step with uniformly random
    actions (the official CraftaxSymbolicEnv.step semantics, resets included), observations
    written every step. Calls the C API directly with preallocated buffers, so the figure is
    the engine's, without Python-side validation."""
    import pycraftax
    from pycraftax._native import check, ffi, ptr

    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=num_envs, backend="c", seed=seed)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    obs = np.empty((num_envs, int(lib.craftax_obs_size())), dtype=np.float32)
    rewards = np.empty(num_envs, dtype=np.float32)
    dones = np.empty(num_envs, dtype=np.uint8)
    key = jax_random.prng_key(seed)
    # Pre-drawn action and key blocks keep the timed loop inside C.
    block = 64
    actions = rng.integers(0, 43, size=(block, num_envs), dtype=np.int32)
    key_block = jax_random.split(key, block * num_envs).reshape(block, num_envs, 2)
    states = env._states
    episodes, done_calls = [0], [0]

    def one_call() -> None:
        b = done_calls[0] % block
        done_calls[0] += 1
        check(lib.craftax_step_autoreset(ptr(states, "void *"), ptr(actions[b], "int32_t *"),
                                         ptr(key_block[b], "uint32_t *"), num_envs, env._c_params,
                                         ptr(obs, "float *"), ptr(rewards, "float *"), ptr(dones, "uint8_t *"),
                                         ffi.NULL, ffi.NULL, ffi.NULL), "step")
        episodes[0] += int(dones.sum())

    calls, elapsed = _timed(one_call, threads, min_seconds, min_calls=8,
                            progress=progress and (lambda c, t: progress(c * num_envs, t)))
    steps, episodes = calls * num_envs, episodes[0]
    return {
        "num_envs": num_envs,
        "threads": threads,
        "steps": steps,
        "episodes_finished": episodes,
        "seconds": elapsed,
        "steps_per_s": steps / elapsed,
        "steps_per_s_per_core": steps / elapsed / threads,
    }
