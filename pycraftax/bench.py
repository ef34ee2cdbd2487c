"""Throughput measurements of the C reference: the timed calls that `pycraftax bench` and the
pytest-benchmark suites in bench/ share, and the machine description both record."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import time
from collections.abc import Callable

import numpy as np

from pycraftax import jax_random
from pycraftax._native import lib

NUM_ACTIONS = 43
# Actions and keys are drawn ahead in blocks of this many calls, so a timed call stays inside C.
PREDRAWN_CALLS = 64


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask), which can be fewer than the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


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
    from pycraftax import rules

    return {
        "cpu": cpu_model(),
        "cores": usable_cores(),
        "python": platform.python_version(),
        "commit": git_commit(),
        "rules_fingerprint": rules.rules_fingerprint(),  # the rules measured (pycraftax.rules)
        "rules": rules.describe(),
    }


@contextlib.contextmanager
def c_threads(threads: int):
    """Run the C reference's batched calls on `threads` OpenMP threads inside the block."""
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    lib.craftax_set_num_threads(threads)
    try:
        yield
    finally:
        lib.craftax_set_num_threads(0)


def _env(num_envs: int, seed: int):
    import pycraftax

    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=num_envs, backend="c", seed=seed)
    env.reset(seed=seed)  # also pages in the state buffer before anything is timed
    return env


def reset_call(num_envs: int, seed: int = 0) -> Callable[[], None]:
    """One call generates `num_envs` fresh worlds (reset_env of every env, observations included)."""
    env = _env(num_envs, seed)
    key = [jax_random.prng_key(seed)]

    def one_call() -> None:
        key[0], sub = jax_random.split(key[0], 2)
        env.reset_with_keys(jax_random.split(sub, num_envs))

    return one_call


class StepLoop:
    """`num_envs` C-reference envs stepped with uniformly random actions under the official
    auto-reset semantics (CraftaxSymbolicEnv.step: a finished episode restarts in the same
    step), observations written every step. The calls go to the C API with preallocated
    buffers, so a figure is the engine's, without the Python-side validation of env.step."""

    def __init__(self, num_envs: int, seed: int = 0):
        from pycraftax._native import ffi, ptr

        self.num_envs = num_envs
        self.env = _env(num_envs, seed)
        rng = np.random.default_rng(seed)
        self.obs = np.empty((num_envs, int(lib.craftax_obs_size())), dtype=np.float32)
        self.rewards = np.empty(num_envs, dtype=np.float32)
        self.dones = np.empty(num_envs, dtype=np.uint8)
        actions = rng.integers(0, NUM_ACTIONS, size=(PREDRAWN_CALLS, num_envs), dtype=np.int32)
        keys = jax_random.split(jax_random.prng_key(seed), PREDRAWN_CALLS * num_envs)
        keys = keys.reshape(PREDRAWN_CALLS, num_envs, 2)
        self._states = ptr(self.env._states, "void *")
        self._actions = [ptr(actions[b], "int32_t *") for b in range(PREDRAWN_CALLS)]
        self._keys = [ptr(keys[b], "uint32_t *") for b in range(PREDRAWN_CALLS)]
        self._outputs = (ptr(self.obs, "float *"), ffi.NULL, ptr(self.rewards, "float *"),
                         ptr(self.dones, "uint8_t *"), ffi.NULL, ffi.NULL, ffi.NULL)
        self._arrays = (actions, keys)  # the pointers above borrow these buffers
        self.calls = 0
        self.episodes_finished = 0

    def step(self) -> None:
        from pycraftax._native import check

        b = self.calls % PREDRAWN_CALLS
        self.calls += 1
        check(lib.craftax_step_autoreset(self._states, self._actions[b], self._keys[b], self.num_envs,
                                         self.env._c_params, *self._outputs), "step")
        self.episodes_finished += int(self.dones.sum())

    def observe(self) -> None:
        """Render every env's symbolic observation again: the obs work of a step alone."""
        from pycraftax._native import check

        check(lib.craftax_observe(self._states, self.num_envs, self._outputs[0]), "observe")


def _timed(one_call: Callable[[], None], threads: int, min_seconds: float, min_calls: int,
           progress=None) -> tuple[int, float]:
    """Run one_call() on `threads` C threads until min_seconds and min_calls have passed;
    progress(calls, elapsed) after each call. Returns (calls, elapsed seconds)."""
    with c_threads(threads):
        calls, start = 0, time.perf_counter()
        while True:
            one_call()
            calls += 1
            elapsed = time.perf_counter() - start
            if progress is not None:
                progress(calls, elapsed)
            if elapsed >= min_seconds and calls >= min_calls:
                return calls, elapsed


def _cores_used(threads: int) -> int:
    """Threads beyond the usable cores share them: a per-core rate divides by the cores used."""
    return min(threads, usable_cores())


def bench_worldgen(num_envs: int = 64, threads: int = 1, min_seconds: float = 2.0, seed: int = 0,
                   progress=None) -> dict:
    """Worlds per second of the C reference's reset_env over `num_envs`-wide batches."""
    one_call = reset_call(num_envs, seed)
    calls, elapsed = _timed(one_call, threads, min_seconds, min_calls=3,
                            progress=progress and (lambda c, t: progress(c * num_envs, t)))
    worlds = calls * num_envs
    cores = _cores_used(threads)
    return {
        "num_envs": num_envs,
        "threads": threads,
        "cores_used": cores,
        "worlds": worlds,
        "seconds": elapsed,
        "worlds_per_s": worlds / elapsed,
        "worlds_per_s_per_core": worlds / elapsed / cores,
    }


def bench_step(num_envs: int = 1024, threads: int = 1, min_seconds: float = 3.0, seed: int = 0,
               progress=None) -> dict:
    """Env steps per second of StepLoop.step."""
    loop = StepLoop(num_envs, seed)
    calls, elapsed = _timed(loop.step, threads, min_seconds, min_calls=8,
                            progress=progress and (lambda c, t: progress(c * num_envs, t)))
    steps = calls * num_envs
    cores = _cores_used(threads)
    return {
        "num_envs": num_envs,
        "threads": threads,
        "cores_used": cores,
        "steps": steps,
        "episodes_finished": loop.episodes_finished,
        "seconds": elapsed,
        "steps_per_s": steps / elapsed,
        "steps_per_s_per_core": steps / elapsed / cores,
    }
