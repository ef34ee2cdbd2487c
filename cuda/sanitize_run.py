"""cuda/sanitize_run.py: a small C-vs-CUDA run for compute-sanitizer (memcheck).

    compute-sanitizer --tool memcheck --leak-check full python3 cuda/sanitize_run.py

7 envs, 40 auto-reset steps with a short time limit and injected deaths (so the done list,
the dense reset kernel and the two-stream chunked path all run: chunks=3, min 2 envs), by step()
and by step_async() on a twin env, then
8 step_with_keys steps, then 10 optimistic-reset steps of 8 envs, then 12 god-mode steps of 8
envs with many descents (lazy floors: pending_floors_kernel before the steps and on get_state);
then Craftax-Classic (cuda/classic_cuda.cu): 30 auto-reset steps of 7 envs with a short time
limit and injected deaths (done list and world kernel), 6 step_with_keys steps, 10 optimistic
steps of 8 envs (2 worlds), with obs="compact" and step_async for the auto-reset part's twin env; then the
pixel envs of both games (cuda/env_pixels.cuh, classic_pixels.cuh: the shared view and the warp's
pixels): 12 auto-reset steps of 5 envs with final_obs, 4 step_with_keys steps, 6 optimistic steps of
4 envs; every output and the final state are compared with the C reference (the pixel part is
skipped, saying so, where the craftax distribution's textures are missing).
Prints OK and exits 0 when all match.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pycraftax  # noqa: E402
from pycraftax import cuda_env, jax_random  # noqa: E402


def same(a, b) -> bool:
    a = np.asarray(a)
    b = b.numpy() if isinstance(b, cuda_env.CudaArray) else np.asarray(b)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def classic_run(rng) -> tuple[int, int]:
    """The Craftax-Classic part: (mismatches, episode ends)."""
    classic = "Craftax-Classic-Symbolic-v1"
    n, bad, ends = 7, 0, 0
    c = pycraftax.make(classic, num_envs=n, backend="c", seed=3, max_timesteps=9)
    g = pycraftax.make(classic, num_envs=n, backend="cuda", seed=3, max_timesteps=9)
    k = pycraftax.make(classic, num_envs=n, backend="cuda", seed=3, max_timesteps=9, obs="compact")  # step_async
    for e in (c, g, k):
        e.reset(seed=3)
    for t in range(30):
        if t % 5 == 2:
            st = c.get_state()
            st["player_health"] = np.where(rng.random(n) < 0.3, 0, st["player_health"]).astype(np.int32)
            for e in (c, g, k):
                e.set_state(st)
        a = rng.integers(0, 17, n).astype(np.int32)
        k.step_async(a)
        co, go, ko = c.step(a), g.step(a), k.step_wait()
        ends += int(np.sum(co[2]) + np.sum(co[3]))
        bad += sum(not same(x, y) for x, y in zip(co[:4], go[:4]))
        bad += sum(not same(x, y) for x, y in zip(co[1:4], ko[1:4]))
        bad += not same(co[0], k.expand_obs())
    keys = jax_random.split(jax_random.prng_key(9), n)
    c.reset_with_keys(keys)
    g.reset_with_keys(keys)
    for t in range(6):
        a = rng.integers(0, 17, n).astype(np.int32)
        kk = rng.integers(0, 2**32, size=(n, 2), dtype=np.uint32)
        co, go = c.step_with_keys(a, kk), g.step_with_keys(a, kk)
        bad += sum(not same(x, y) for x, y in zip(co[:3], go[:3]))
    cs, gs = c.get_state(), g.get_state()
    bad += sum(not same(cs[name], gs[name]) for name in cs)
    g.close()
    k.close()
    kw = dict(num_envs=8, seed=4, max_timesteps=4, resets="optimistic", reset_ratio=4)
    c, g = (pycraftax.make(classic, backend=b, **kw) for b in ("c", "cuda"))
    c.reset(seed=4)
    g.reset(seed=4)
    for t in range(10):
        a = rng.integers(0, 17, 8).astype(np.int32)
        co, go = c.step(a), g.step(a)
        ends += int(np.sum(co[2]) + np.sum(co[3]))
        bad += sum(not same(x, y) for x, y in zip(co[:4], go[:4]))
    cs, gs = c.get_state(), g.get_state()
    bad += sum(not same(cs[name], gs[name]) for name in cs)
    g.close()
    return bad, ends


def pixels_run(rng) -> tuple[int, int]:
    """The pixel envs' part: (mismatches, episode ends)."""
    bad, ends = 0, 0
    for env_id in ("Craftax-Pixels-v1", "Craftax-Classic-Pixels-v1"):
        n = 5
        c, g = (pycraftax.make(env_id, num_envs=n, backend=b, seed=6, max_timesteps=5, day_length=8)
                for b in ("c", "cuda"))
        for e in (c, g):
            e.report_final_obs = True
            e.reset(seed=6)
        for t in range(12):
            a = rng.integers(0, c.num_actions, n).astype(np.int32)
            co, go = c.step(a), g.step(a)
            ends += int(np.sum(co[2]) + np.sum(co[3]))
            bad += sum(not same(x, y) for x, y in zip(co[:4], go[:4]))
            bad += not same(co[4]["final_obs"], go[4]["final_obs"])
        for t in range(4):
            a = rng.integers(0, c.num_actions, n).astype(np.int32)
            k = rng.integers(0, 2**32, size=(n, 2), dtype=np.uint32)
            bad += sum(not same(x, y) for x, y in zip(c.step_with_keys(a, k)[:3], g.step_with_keys(a, k)[:3]))
        bad += not same(c.observe(), g.observe())
        cs, gs = c.get_state(), g.get_state()
        bad += sum(not same(cs[k], gs[k]) for k in cs)
        g.close()
        kw = dict(num_envs=4, seed=7, max_timesteps=3, resets="optimistic", reset_ratio=2)
        c, g = (pycraftax.make(env_id, backend=b, **kw) for b in ("c", "cuda"))
        for e in (c, g):
            e.report_final_obs = True
            e.reset(seed=7)
        for t in range(6):
            a = rng.integers(0, c.num_actions, 4).astype(np.int32)
            co, go = c.step(a), g.step(a)
            ends += int(np.sum(co[2]) + np.sum(co[3]))
            bad += sum(not same(x, y) for x, y in zip(co[:4], go[:4]))
            bad += not same(co[4]["final_obs"], go[4]["final_obs"])
        g.close()
    return bad, ends


def main() -> int:
    lib = cuda_env.load()
    lib.check(lib.lib.craftax_cuda_set_autoreset_chunks(3, 2), "set_autoreset_chunks")
    n, steps = 7, 40
    c = pycraftax.make("Craftax-Symbolic-v1", num_envs=n, backend="c", seed=3, max_timesteps=9)
    g = pycraftax.make("Craftax-Symbolic-v1", num_envs=n, backend="cuda", seed=3, max_timesteps=9)
    ga = pycraftax.make("Craftax-Symbolic-v1", num_envs=n, backend="cuda", seed=3, max_timesteps=9)  # step_async
    for e in (c, g, ga):
        e.reset(seed=3)
    rng = np.random.default_rng(0)
    bad, ends = 0, 0
    for t in range(steps):
        if t % 5 == 2:
            st = c.get_state()
            st["player_health"] = np.where(rng.random(n) < 0.3, np.float32(0), st["player_health"]).astype(np.float32)
            for e in (c, g, ga):
                e.set_state(st)
        a = rng.integers(0, 43, n).astype(np.int32)
        ga.step_async(a)
        co, go, ao = c.step(a), g.step(a), ga.step_wait()
        ends += int(np.sum(co[2]) + np.sum(co[3]))
        bad += sum(not same(x, y) for x, y in zip(co[:4], go[:4]))
        bad += sum(not same(x, y) for x, y in zip(co[:4], ao[:4]))
    ga.close()
    keys = jax_random.split(jax_random.prng_key(9), n)
    c.reset_with_keys(keys)
    g.reset_with_keys(keys)
    for t in range(8):
        a = rng.integers(0, 43, n).astype(np.int32)
        k = rng.integers(0, 2**32, size=(n, 2), dtype=np.uint32)
        co, go = c.step_with_keys(a, k), g.step_with_keys(a, k)
        bad += sum(not same(x, y) for x, y in zip(co[:3], go[:3]))
    cs, gs = c.get_state(), g.get_state()
    bad += sum(not same(cs[k], gs[k]) for k in cs)
    g.close()
    # optimistic resets: order keys, radix sort, worlds generated into their first takers and
    # copied to the envs that share them (8 envs, 2 worlds, all ending together)
    kw = dict(num_envs=8, seed=4, max_timesteps=4, resets="optimistic", reset_ratio=4)
    c, g = (pycraftax.make("Craftax-Symbolic-v1", backend=b, **kw) for b in ("c", "cuda"))
    c.reset(seed=4)
    g.reset(seed=4)
    for t in range(10):
        a = rng.integers(0, 43, 8).astype(np.int32)
        co, go = c.step(a), g.step(a)
        ends += int(np.sum(co[2]) + np.sum(co[3]))
        bad += sum(not same(x, y) for x, y in zip(co[:4], go[:4]))
    cs, gs = c.get_state(), g.get_state()
    bad += sum(not same(cs[k], gs[k]) for k in cs)
    g.close()
    # lazy floors: god-mode descents (DESCEND works anywhere) generate floors before the step,
    # no state read until the end, which completes the rest
    kw = dict(num_envs=8, seed=5, max_timesteps=6, god_mode=True)
    c, g = (pycraftax.make("Craftax-Symbolic-v1", backend=b, **kw) for b in ("c", "cuda"))
    c.reset(seed=5)
    g.reset(seed=5)
    for t in range(12):
        a = np.where(rng.random(8) < 0.5, 18, rng.integers(0, 43, 8)).astype(np.int32)
        co, go = c.step(a), g.step(a)
        bad += sum(not same(x, y) for x, y in zip(co[:4], go[:4]))
    cs, gs = c.get_state(), g.get_state()
    bad += sum(not same(cs[k], gs[k]) for k in cs)
    g.close()
    classic_bad, classic_ends = classic_run(rng)
    bad += classic_bad
    ends += classic_ends
    from pycraftax import textures

    try:
        pixel_bad, pixel_ends = pixels_run(rng)
        pixel_note = "; pixels: 12 + 4 steps of 5 envs and 6 optimistic steps of 4 envs, both games"
    except textures.TexturesMissing as exc:
        pixel_bad, pixel_ends, pixel_note = 0, 0, f"; pixel envs skipped ({exc})"
    bad += pixel_bad
    ends += pixel_ends
    print(f"{'OK' if bad == 0 else 'MISMATCH'}: {bad} mismatches, {ends} episode ends, {steps} + 8 steps of {n} envs, "
          "10 optimistic steps of 8 envs, 12 god-mode descent steps of 8 envs; Classic: 30 + 6 steps of 7 envs, "
          "10 optimistic steps of 8 envs" + pixel_note)
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
