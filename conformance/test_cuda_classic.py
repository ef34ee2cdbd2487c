"""C vs CUDA for Craftax-Classic: the CUDA build (backend="cuda", cuda/classic_cuda.cu) is
bit-identical to the C reference (pycraftax.classic_env, itself checked against craftax 1.6.1).

Runs on a machine with a GPU and cuda/build/libcraftax_cuda.so (`make -C cuda`); elsewhere the
whole module is skipped with the reason (which says "GPU").

  * the pinned Classic anchors of test_classic_anchors.py reproduced by backend="cuda", with
    the float obs and with compact records expanded in numpy;
  * worlds from 1,024 keys: every leaf and the obs equal C's;
  * lockstep C vs CUDA through env.step (auto and optimistic resets, short time limits and
    injected deaths so that both endings happen) and env.step_with_keys: every leaf, obs,
    reward, flags and info every step;
  * compact records expand (GPU and numpy) to the float obs;
  * final_obs of craftax_classic_cuda_env_step: the obs of the state each ended env ended in;
  * the trainer's *_stream calls against the C API's auto-reset and optimistic steps;
  * bad actions (host or device) raise ValueError naming `actions` and change nothing.

    /work/venv/bin/python -m pytest conformance/test_cuda_classic.py
"""

from __future__ import annotations

import numpy as np
import pytest

import pycraftax
from conformance import classic_c as cc
from pycraftax import anchors, classic_state, jax_random

from conftest import compare_obs, compare_states, record_summary  # noqa: E402

if not pycraftax.cuda_available():
    from pycraftax import cuda_env

    pytest.skip(f"needs a GPU and the CUDA build: {cuda_env.unavailable_reason()}", allow_module_level=True)

from conformance.test_classic_anchors import CLASSIC_ANCHORS, classic_action_stream  # noqa: E402
from pycraftax import classic_cuda_env, cuda_env  # noqa: E402

pytestmark = pytest.mark.cuda
ENV_ID = "Craftax-Classic-Symbolic-v1"
COMPACT = classic_cuda_env.COMPACT_SIZE
VIEW_CELLS, CHANNELS, BLOCKS = 63, 21, 17
MAP_FLOATS = VIEW_CELLS * CHANNELS


def make_pair(num_envs: int, seed: int = 0, **kwargs):
    c = pycraftax.make(ENV_ID, num_envs=num_envs, backend="c", seed=seed, **kwargs)
    g = pycraftax.make(ENV_ID, num_envs=num_envs, backend="cuda", seed=seed, **kwargs)
    return c, g


def host(x) -> np.ndarray:
    return x.numpy() if isinstance(x, cuda_env.CudaArray) else np.asarray(x)


def expand_numpy(records: np.ndarray) -> np.ndarray:
    """The record layout of cuda/classic_obs.cuh, expanded independently of the library."""
    records = np.asarray(records, dtype=np.uint8)
    n = records.shape[0]
    scalars = records[:, :88].copy().view(np.float32)
    blocks = records[:, 88:88 + VIEW_CELLS].astype(np.int64)
    mobs = records[:, 88 + VIEW_CELLS:88 + 2 * VIEW_CELLS]
    view = np.zeros((n, VIEW_CELLS, CHANNELS), dtype=np.float32)
    view[np.arange(n)[:, None], np.arange(VIEW_CELLS)[None, :], blocks] = 1.0
    for c in range(4):
        view[:, :, BLOCKS + c] = (mobs >> c) & 1
    return np.concatenate([view.reshape(n, MAP_FLOATS), scalars], axis=1)


def device_array(host_array: np.ndarray) -> cuda_env.CudaArray:
    """A device copy of a host array (the library's allocation helpers)."""
    lib = cuda_env.load()
    host_array = np.ascontiguousarray(host_array)
    ptr = lib.ffi.new("void **")
    lib.check(lib.lib.craftax_cuda_malloc(ptr, max(host_array.nbytes, 1)), "malloc")
    buf = cuda_env._DeviceBuffer(lib, int(lib.ffi.cast("uintptr_t", ptr[0])), max(host_array.nbytes, 1))
    lib.check(lib.lib.craftax_cuda_memcpy_htod(ptr[0], lib.ffi.from_buffer(host_array), host_array.nbytes), "copy")
    return cuda_env.CudaArray(buf, host_array.shape, host_array.dtype)


def compare_step(t: int, c_out, g_out, c_env, g_env) -> None:
    context = f"step {t}"
    names = ("obs", "reward", "terminated", "truncated") if len(c_out) == 5 else ("obs", "reward", "done")
    for name, a, b in zip(names, c_out[:-1], g_out[:-1]):
        if name == "obs":
            compare_obs(a, host(b), context=context)
        else:
            compare_states({name: np.asarray(a)}, {name: host(b)}, context=context)
    c_info, g_info = c_out[-1], g_out[-1]
    assert set(c_info) == set(g_info), f"{context}: info keys differ: {set(c_info) ^ set(g_info)}"
    compare_states({k: np.asarray(v) for k, v in c_info.items()}, {k: host(v) for k, v in g_info.items()},
                   context=context + " info")
    compare_states(c_env.get_state(), g_env.get_state(), context=context + " state")


def kill_some(envs, rng, fraction: float) -> None:
    state = envs[0].get_state()
    dead = rng.random(state["player_health"].shape[0]) < fraction
    state["player_health"] = np.where(dead, 0, state["player_health"]).astype(state["player_health"].dtype)
    for e in envs:
        e.set_state(state)


# -- anchors ------------------------------------------------------------------------------------
def cuda_trajectory_hash(num_envs: int, steps: int, seed: int, obs: str) -> str:
    env = pycraftax.make(ENV_ID, num_envs=num_envs, backend="cuda", seed=seed, obs=obs)
    env.reset(seed=seed)
    actions = classic_action_stream(num_envs, steps, seed)
    h = anchors.FNV_OFFSET
    for t in range(steps):
        o, reward, terminated, truncated, _ = env.step(actions[t])
        o = expand_numpy(host(o)) if obs == "compact" else host(o)
        h = anchors.fnv1a(h, o.astype(np.float32))
        h = anchors.fnv1a(h, host(reward).astype(np.float32))
        h = anchors.fnv1a(h, (host(terminated) | host(truncated)).astype(np.uint8))
    env.close()
    return f"{h:016x}"


@pytest.mark.parametrize("obs", ["float", "compact"])
@pytest.mark.parametrize("case", sorted(CLASSIC_ANCHORS))
def test_pinned_classic_anchor_cuda(case, obs):
    assert cuda_trajectory_hash(*case, obs=obs) == anchors.pinned(ENV_ID)[case]


# -- worlds -------------------------------------------------------------------------------------
def test_worlds_from_1024_keys_equal_c():
    keys = np.random.default_rng(7).integers(0, 2**32, size=(1024, 2), dtype=np.uint32)
    c, g = make_pair(1024)
    c_obs, _ = c.reset_with_keys(keys)
    g_obs, _ = g.reset_with_keys(keys)
    compare_obs(c_obs, host(g_obs), keys, context="reset")
    compare_states(c.get_state(), g.get_state(), keys, context="reset")
    compare_obs(c.observe(), host(g.observe()), keys, context="observe after reset")
    record_summary("test_cuda_classic: 1,024 worlds equal C's on every leaf and the obs")


# -- lockstep -----------------------------------------------------------------------------------
@pytest.mark.parametrize("num_envs, resets, reset_ratio", [(33, "auto", None), (129, "auto", None),
                                                          (64, "optimistic", 4), (30, "optimistic", 30)])
def test_lockstep_step(num_envs, resets, reset_ratio):
    c, g = make_pair(num_envs, seed=3, max_timesteps=25, resets=resets, reset_ratio=reset_ratio)
    c_obs, _ = c.reset(seed=5)
    g_obs, _ = g.reset(seed=5)
    compare_obs(c_obs, host(g_obs), context="reset")
    rng = np.random.default_rng(num_envs)
    ended = {"terminated": 0, "truncated": 0}
    for t in range(70):
        if t % 10 == 3:
            kill_some([c, g], rng, 0.2)
        actions = rng.integers(0, 17, num_envs).astype(np.int32)
        c_out = c.step(actions)
        compare_step(t, c_out, g.step(actions), c, g)
        ended["terminated"] += int(np.sum(c_out[2]))
        ended["truncated"] += int(np.sum(c_out[3]))
    assert ended["terminated"] > 0 and ended["truncated"] > 0, ended
    record_summary(f"test_cuda_classic: {resets} lockstep, {num_envs} envs x 70 steps equal; {ended}")


def test_lockstep_step_with_keys():
    num_envs = 65
    c, g = make_pair(num_envs)
    keys0 = jax_random.split(jax_random.prng_key(11), num_envs)
    c.reset_with_keys(keys0)
    g.reset_with_keys(keys0)
    rng = np.random.default_rng(2)
    for t in range(60):
        keys = rng.integers(0, 2**32, size=(num_envs, 2), dtype=np.uint32)
        actions = rng.integers(0, 17, num_envs).astype(np.int32)
        compare_step(t, c.step_with_keys(actions, keys), g.step_with_keys(actions, keys), c, g)


def test_compact_obs_expand_to_the_float_obs():
    num_envs = 40
    f = pycraftax.make(ENV_ID, num_envs=num_envs, backend="cuda", seed=1, max_timesteps=20)
    k = pycraftax.make(ENV_ID, num_envs=num_envs, backend="cuda", seed=1, max_timesteps=20, obs="compact")
    assert k.single_observation_space.shape == (COMPACT,) and k.observation_space.shape == (num_envs, COMPACT)
    fo, _ = f.reset(seed=4)
    ko, _ = k.reset(seed=4)
    rng = np.random.default_rng(0)
    for t in range(50):
        records = host(ko)
        assert records.shape == (num_envs, COMPACT) and records.dtype == np.uint8
        compare_obs(host(fo), host(k.expand_obs()), context=f"step {t} expand_obs")
        compare_obs(host(fo), expand_numpy(records), context=f"step {t} numpy expansion")
        assert not records[:, 88 + 2 * VIEW_CELLS:].any()
        actions = rng.integers(0, 17, num_envs)
        fo = f.step(actions)[0]
        ko = k.step(actions)[0]


# -- the C API: final_obs and the trainer's stream calls ------------------------------------------
def _c_terminal_obs(states: np.ndarray, keys: np.ndarray, actions: np.ndarray, params) -> np.ndarray:
    """The obs of the states that the auto-reset step's step part reaches (before any reset)."""
    step_keys = np.stack([jax_random.split(k, 2)[0] for k in keys])
    copy = states.copy()
    return cc.c_step(copy, step_keys, actions, params)[0]


def test_final_obs_is_the_ended_state_obs():
    num_envs, steps = 48, 60
    b = classic_cuda_env.binding()
    ffi, lib = b.ffi, b.lib
    g = pycraftax.make(ENV_ID, num_envs=num_envs, backend="cuda", seed=0, max_timesteps=15)
    g.reset(seed=2)
    c_states = g._host_states()
    params = cc.c_params(max_timesteps=15)
    final = device_array(np.full((num_envs, classic_state.OBS_SIZE), -1.0, dtype=np.float32))
    keys_out = device_array(np.zeros((num_envs, 2), dtype=np.uint32))
    rng = np.random.default_rng(5)
    seen = 0
    for t in range(steps):
        actions = rng.integers(0, 17, num_envs).astype(np.int32)
        key = rng.integers(0, 2**32, size=2, dtype=np.uint32)
        keys = jax_random.split(key, num_envs)
        expected_final = _c_terminal_obs(c_states, keys, actions, params)
        c_obs, c_reward, c_done = cc.c_step(c_states, keys, actions, params, auto_reset=True)
        d_actions = device_array(actions)
        ptr = lambda name, ctype: ffi.cast(ctype, g._buffers[name].ptr)  # noqa: E731
        rc = lib.craftax_classic_cuda_env_step(
            ptr("states", "void *"), ffi.cast("int32_t *", d_actions.ptr), ffi.from_buffer("uint32_t[]", key),
            ffi.cast("uint32_t *", keys_out.ptr), num_envs, g._params, ptr("obs", "float *"), ffi.NULL,
            ffi.cast("float *", final.ptr), ptr("reward", "float *"), ptr("done", "uint8_t *"), ffi.NULL, ffi.NULL,
            ptr("final_achievements", "uint8_t *"), ptr("ret_acc", "float *"), ptr("len_acc", "int32_t *"),
            ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL)
        assert rc == 0, g._lib.last_error()
        np.testing.assert_array_equal(host(keys_out), keys)
        compare_obs(c_obs, host(g._views["obs"]), context=f"step {t} obs")
        done = host(g._views["done"]).astype(bool)
        np.testing.assert_array_equal(done, c_done)
        got = host(final)
        compare_obs(expected_final[done], got[done], context=f"step {t} final_obs")
        seen += int(done.sum())
        final = device_array(np.full((num_envs, classic_state.OBS_SIZE), -1.0, dtype=np.float32))
    assert seen > num_envs  # every env ended at least once (max_timesteps 15)
    record_summary(f"test_cuda_classic: final_obs of {seen} ended episodes equal C's terminal obs")


def test_stream_calls_equal_the_c_api():
    """craftax_classic_cuda_step_autoreset_stream and, with generate_worlds_stream's pool,
    craftax_classic_cuda_step_optimistic_stream (legacy stream 0) against the C API."""
    num_envs, ratio = 32, 4
    b = classic_cuda_env.binding()
    ffi, lib = b.ffi, b.lib
    for optimistic in (False, True):
        g = pycraftax.make(ENV_ID, num_envs=num_envs, backend="cuda", seed=0, max_timesteps=12)
        g.reset(seed=9)
        c_states = g._host_states()
        params = cc.c_params(max_timesteps=12)
        ptr = lambda name, ctype: ffi.cast(ctype, g._buffers[name].ptr)  # noqa: E731
        done_list = device_array(np.zeros(num_envs + 1, dtype=np.int32))
        work_bytes = int(lib.craftax_classic_cuda_optimistic_work_size(num_envs))
        work = device_array(np.zeros(work_bytes, dtype=np.uint8))
        pool = device_array(np.zeros((num_envs // ratio, classic_state.STATE_SIZE), dtype=np.uint8))
        reset_worlds = device_array(np.zeros(num_envs, dtype=np.int32))
        rng = np.random.default_rng(1)
        for t in range(40):
            actions = rng.integers(0, 17, num_envs).astype(np.int32)
            d_actions = device_array(actions)
            outs = (ptr("obs", "float *"), ptr("reward", "float *"), ptr("done", "uint8_t *"), ffi.NULL, ffi.NULL,
                    ffi.NULL)
            if optimistic:
                key = rng.integers(0, 2**32, size=2, dtype=np.uint32)
                d_key = device_array(key)
                assert lib.craftax_classic_cuda_generate_worlds_stream(
                    ffi.cast("void *", pool.ptr), ffi.cast("uint32_t *", d_key.ptr), 1, num_envs // ratio,
                    g._params, 0) == 0, g._lib.last_error()
                rc = lib.craftax_classic_cuda_step_optimistic_stream(
                    ptr("states", "void *"), ffi.cast("int32_t *", d_actions.ptr), ffi.cast("uint32_t *", d_key.ptr),
                    num_envs, ratio, g._params, ffi.cast("void *", pool.ptr), *outs,
                    ffi.cast("int32_t *", reset_worlds.ptr), ffi.cast("void *", work.ptr), 0)
                c_obs, c_reward, c_done, c_worlds = cc.c_step_optimistic(c_states, key, actions, ratio, params)
            else:
                keys = rng.integers(0, 2**32, size=(num_envs, 2), dtype=np.uint32)
                d_keys = device_array(keys)
                rc = lib.craftax_classic_cuda_step_autoreset_stream(
                    ptr("states", "void *"), ffi.cast("int32_t *", d_actions.ptr), ffi.cast("uint32_t *", d_keys.ptr),
                    num_envs, g._params, *outs, ffi.cast("int32_t *", done_list.ptr), 0)
                c_obs, c_reward, c_done = cc.c_step(c_states, keys, actions, params, auto_reset=True)
            assert rc == 0, g._lib.last_error()
            assert g._lib.lib.craftax_cuda_synchronize() == 0
            context = f"{'optimistic' if optimistic else 'auto-reset'} stream, step {t}"
            compare_obs(c_obs, host(g._views["obs"]), context=context)
            np.testing.assert_array_equal(host(g._views["reward"]), c_reward, err_msg=context)
            np.testing.assert_array_equal(host(g._views["done"]).astype(bool), c_done, err_msg=context)
            if optimistic:
                np.testing.assert_array_equal(host(reset_worlds), c_worlds, err_msg=context)
            compare_states(classic_state.get_state(c_states), g.get_state(), context=context)
        g.close()


# -- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize("resets", ["auto", "optimistic"])
def test_bad_actions_raise_and_change_nothing(resets):
    g = pycraftax.make(ENV_ID, num_envs=4, backend="cuda", resets=resets, reset_ratio=2 if resets != "auto" else None)
    g.reset(seed=0)
    before = g.get_state()
    with pytest.raises(ValueError, match=r"actions\[1\] = 17 is outside \[0, 17\)"):
        g.step(np.array([0, 17, 0, 0]))
    with pytest.raises(ValueError, match="actions"):  # on the device: the library's check
        g.step(device_array(np.array([0, 0, -1, 3], dtype=np.int32)))
    with pytest.raises(ValueError, match="actions"):
        g.step_with_keys(device_array(np.array([17, 0, 0, 0], dtype=np.int32)), np.zeros((4, 2), np.uint32))
    after = g.get_state()
    assert all(np.array_equal(before[name], after[name]) for name in before)
    g.step(np.zeros(4, dtype=np.int32))  # still usable


def test_native_handles_and_spaces():
    g = pycraftax.make(ENV_ID, num_envs=3, backend="cuda")
    assert type(g).__name__ == "CudaClassicEnv" and g.backend == "cuda"
    assert g.single_observation_space.shape == (1345,) and g.single_action_space.n == 17
    h = g.native_handles()
    assert h.states == g._buffers["states"].ptr and h.scratch == 0
    assert h.params_size == classic_cuda_env.binding().ffi.sizeof("CraftaxClassicParams")
    assert ENV_ID in pycraftax.list_envs("cuda")
