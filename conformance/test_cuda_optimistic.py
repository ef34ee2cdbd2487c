"""Optimistic resets on the GPU (make(..., backend="cuda", resets="optimistic")) against the C
reference, whose optimistic step is checked against Craftax_Baselines' wrapper over upstream
(conformance/test_optimistic.py): every output and state leaf, every step, float and compact
obs; and the trainer's path (worlds generated ahead by craftax_cuda_generate_worlds_stream,
taken by craftax_cuda_step_optimistic_stream) equal to the env's, which generates only the
taken worlds after the step. Runs where a GPU is present."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pycraftax
from pycraftax import jax_random, obs_compact

from conftest import FEW_EXAMPLES, compare_states  # noqa: E402

if not pycraftax.cuda_available():
    pytest.skip("no usable CUDA backend (GPU, driver or libcraftax_cuda.so)", allow_module_level=True)

from pycraftax import cuda_env  # noqa: E402
from conformance.test_cuda import STEP_LAYOUTS, host, kill_some, step_layout, step_pair  # noqa: E402

pytestmark = pytest.mark.cuda
ENV_ID = "Craftax-Symbolic-v1"
SETTINGS = settings(max_examples=max(FEW_EXAMPLES, 4), deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), worlds=st.integers(1, 9), ratio=st.sampled_from([1, 2, 4, 7, 16]),
       stream=st.integers(0, 2**32 - 1), max_timesteps=st.sampled_from([5, 13, 100000]), kill=st.floats(0.0, 0.6),
       layout=st.sampled_from(sorted(STEP_LAYOUTS)))
def test_optimistic_lockstep(seed, worlds, ratio, stream, max_timesteps, kill, layout):
    num_envs = worlds * ratio
    kw = dict(num_envs=num_envs, seed=seed, max_timesteps=max_timesteps, resets="optimistic", reset_ratio=ratio)
    c = pycraftax.make(ENV_ID, backend="c", **kw)
    g = pycraftax.make(ENV_ID, backend="cuda", **kw)
    c.reset(seed=seed)
    g.reset(seed=seed)
    rng = np.random.default_rng(stream)
    with step_layout(layout):
        for t in range(20):
            if t % 6 == 2 and kill > 0:
                kill_some((c, g), rng, kill)
            actions = rng.integers(0, 43, size=num_envs).astype(np.int32)
            step_pair(t, c, g, actions)
    g.close()


def test_optimistic_compact_obs_lockstep():
    kw = dict(num_envs=96, seed=3, max_timesteps=7, resets="optimistic", reset_ratio=16)
    c = pycraftax.make(ENV_ID, backend="c", **kw)
    g = pycraftax.make(ENV_ID, backend="cuda", obs="compact", **kw)
    c.reset(seed=3)
    g.reset(seed=3)
    rng = np.random.default_rng(3)
    ends = 0
    for t in range(16):
        if t == 4:
            kill_some((c, g), rng, 0.3)
        actions = rng.integers(0, 43, size=96).astype(np.int32)
        c_obs, c_rew, c_term, c_trunc, _ = c.step(actions)
        g_rec, g_rew, g_term, g_trunc, _ = g.step(actions)
        records = host(g_rec)
        np.testing.assert_array_equal(obs_compact.expand(records).view(np.uint32), c_obs.view(np.uint32),
                                      err_msg=f"step {t}")
        np.testing.assert_array_equal(host(g.expand_obs()).view(np.uint32), c_obs.view(np.uint32), err_msg=f"step {t}")
        np.testing.assert_array_equal(host(g_rew).view(np.uint32), c_rew.view(np.uint32))
        np.testing.assert_array_equal(host(g_term), c_term)
        np.testing.assert_array_equal(host(g_trunc), c_trunc)
        compare_states(c.get_state(), g.get_state(), context=f"step {t}")
        ends += int((c_term | c_trunc).sum())
    assert ends > 96


def test_pregenerated_worlds_equal_generated_after_the_step():
    """The trainer's path: a rollout's worlds generated ahead from its future keys (one
    generate call for several steps), then taken by the stream step, equals env.step."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    lib = cuda_env.load()
    ffi = lib.ffi
    num_envs, ratio, steps, seed = 80, 8, 12, 5
    num_worlds = num_envs // ratio
    kw = dict(num_envs=num_envs, seed=seed, max_timesteps=6, resets="optimistic", reset_ratio=ratio)
    ref, ahead = (pycraftax.make(ENV_ID, backend="cuda", **kw) for _ in range(2))
    ref.reset(seed=seed)
    ahead.reset(seed=seed)
    key = ref._key.copy()
    subs = []
    for _ in range(steps):
        key, sub = jax_random.split(key, 2)
        subs.append(sub)
    dev = torch.device("cuda")
    keys = torch.as_tensor(np.stack(subs).view(np.int32), device=dev)
    state_size = int(lib.lib.craftax_cuda_state_size())
    worlds = torch.zeros(steps * num_worlds * state_size, dtype=torch.uint8, device=dev)
    scratch = torch.zeros(steps * num_worlds * int(lib.lib.craftax_cuda_scratch_size()), dtype=torch.uint8,
                          device=dev)
    lib.check(lib.lib.craftax_cuda_generate_worlds_stream(
        ffi.cast("void *", worlds.data_ptr()), ffi.cast("uint32_t *", keys.data_ptr()), steps, num_worlds,
        ahead._params, ffi.cast("void *", scratch.data_ptr()), 0), "generate_worlds")
    actions = torch.zeros(num_envs, dtype=torch.int32, device=dev)
    taken = torch.zeros(num_envs, dtype=torch.int32, device=dev)
    rng = np.random.default_rng(seed)
    ends = 0
    for t in range(steps):
        if t == 2:
            kill_some((ref, ahead), rng, 0.4)
        a = rng.integers(0, 43, size=num_envs).astype(np.int32)
        ref.step(a)
        actions.copy_(torch.as_tensor(a, device=dev))
        p = ahead._p
        lib.check(lib.lib.craftax_cuda_step_optimistic_stream(
            p("states"), ffi.cast("int32_t *", actions.data_ptr()), ffi.cast("uint32_t *", keys[t].data_ptr()),
            num_envs, ratio, ahead._params, ffi.cast("void *", worlds.data_ptr() + t * num_worlds * state_size),
            p("obs", "float *"), ffi.NULL, p("reward", "float *"), p("done", "uint8_t *"),
            p("terminated", "uint8_t *"), p("truncated", "uint8_t *"), p("final_achievements", "uint8_t *"),
            ffi.cast("int32_t *", taken.data_ptr()), p("scratch"), p("optimistic_work"), 0), "step_optimistic_stream")
        lib.check(lib.lib.craftax_cuda_synchronize(), "synchronize")
        for name in ("obs", "reward", "done", "terminated", "truncated", "final_achievements"):
            a_, b_ = host(ref._views[name]), host(ahead._views[name])
            assert np.array_equal(a_.view(np.uint8), b_.view(np.uint8)), f"step {t}: {name} differs"
        compare_states(ref.get_state(), ahead.get_state(), context=f"step {t}")
        done = host(ref._views["done"])
        w = taken.cpu().numpy()
        assert np.all((w >= 0) == done) and np.all(w < num_worlds), f"step {t}: taken worlds {w}"
        ends += int(done.sum())
    assert ends > num_envs


def test_rejected_device_actions_change_nothing():
    """Out-of-range actions on the GPU: ValueError naming the actions, and the env (state, key
    stream, episode accumulators) exactly as before: lockstep with C goes on after it."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    kw = {"num_envs": 32, "seed": 5, "max_timesteps": 6, "resets": "optimistic", "reset_ratio": 4}
    c = pycraftax.make(ENV_ID, backend="c", **kw)
    g = pycraftax.make(ENV_ID, backend="cuda", **kw)
    c.reset(seed=5)
    g.reset(seed=5)
    rng = np.random.default_rng(5)
    for t in range(4):
        step_pair(t, c, g, rng.integers(0, 43, size=32).astype(np.int32))
    before = g.get_state()
    with pytest.raises(ValueError, match="actions"):
        g.step(torch.full((32,), 43, dtype=torch.int32, device="cuda"))
    compare_states(before, g.get_state(), context="a rejected step changed the state")
    for t in range(4, 12):  # ends at steps 6 and 12 compare the episode returns and lengths too
        step_pair(t, c, g, rng.integers(0, 43, size=32).astype(np.int32))
    g.close()
