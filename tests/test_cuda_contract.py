"""The env contract (pycraftax.vec_env.CraftaxVecEnv) on backend="cuda": the same seeding,
reset-before-step, threads, copy refusal and bad-input behaviour as the C env, plus the public
interface for native callers (native_handles, key) and actions read in place on the GPU.
Skipped, with the reason (which says "GPU"), where there is no GPU or CUDA build."""

from __future__ import annotations

import copy
import threading

import numpy as np
import pytest

import pycraftax
from pycraftax.params import EnvParams, to_c

if not pycraftax.cuda_available():
    from pycraftax import cuda_env

    pytest.skip(f"needs a GPU and the CUDA build: {cuda_env.unavailable_reason()}", allow_module_level=True)

from pycraftax import cuda_env  # noqa: E402

pytestmark = pytest.mark.cuda
ENV_ID = "Craftax-Symbolic-v1"


def make(backend, num_envs=4, seed=0, **kw):
    return pycraftax.make(ENV_ID, num_envs=num_envs, backend=backend, seed=seed, **kw)


def rollout(env, seed, actions):
    out = [np.asarray(env.reset(seed=seed)[0])]
    for a in actions:
        obs, reward, terminated, truncated, _ = env.step(a)
        out += [np.asarray(obs), np.asarray(reward), np.asarray(terminated), np.asarray(truncated)]
    return out


def test_reset_seed_fixes_the_trajectory_and_matches_the_c_env():
    actions = np.random.default_rng(0).integers(0, 43, size=(15, 4)).astype(np.int32)
    c = rollout(make("c", seed=1), 7, actions)
    g_env = make("cuda", seed=99)
    for run in range(2):  # the second run after the env has stepped: reset(seed) restarts everything
        for x, y in zip(c, rollout(g_env, 7, actions)):
            np.testing.assert_array_equal(x, y)


def test_step_before_reset_raises():
    env = make("cuda")
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(4, np.int32))


def test_native_handles_and_key():
    env = make("cuda", seed=3)
    handles = env.native_handles()
    assert isinstance(handles, cuda_env.NativeHandles)
    assert handles.states and handles.scratch and handles.params
    assert handles.params_size == env._lib.ffi.sizeof("CraftaxParams")
    ffi = env._lib.ffi
    host = bytes(ffi.buffer(ffi.cast("char *", handles.params), handles.params_size))
    ref = to_c(EnvParams())
    from pycraftax._native import ffi as c_ffi

    assert host == bytes(c_ffi.buffer(ref))
    np.testing.assert_array_equal(env.key, [0, 3])
    env.key = np.array([1, 2], np.uint32)
    np.testing.assert_array_equal(env.key, [1, 2])
    with pytest.raises(TypeError, match="key must be"):
        env.key = np.zeros(2, np.int64)
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.native_handles()


def test_device_actions_are_read_in_place():
    """A device int32 array (the env's own CudaArray stands in for a torch/CuPy tensor)."""
    host = np.array([1, 5, 0, 42], np.int32)
    ref = make("cuda", seed=2)
    ref.reset(seed=2)
    expected = [np.asarray(x) for x in ref.step(host)[:4]]
    env = make("cuda", seed=2)
    env.reset(seed=2)
    buf = env._buffers["actions"]
    env._lib.check(env._lib.lib.craftax_cuda_memcpy_htod(env._p("actions"), env._lib.ffi.from_buffer(host),
                                                         host.nbytes), "copy")
    device = cuda_env.CudaArray(buf, (4,), np.int32, device_id=env._lib.device_id)
    got = [np.asarray(x) for x in env.step(device)[:4]]
    for x, y in zip(expected, got):
        np.testing.assert_array_equal(x, y)


def test_torch_cuda_int64_actions():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA: no GPU tensor to pass")
    host = np.array([1, 5, 0, 42], np.int32)
    ref = make("cuda", seed=2)
    ref.reset(seed=2)
    expected = [np.asarray(x) for x in ref.step(host)[:4]]
    env = make("cuda", seed=2)
    env.reset(seed=2)
    got = [np.asarray(x) for x in env.step(torch.tensor(host.tolist(), device="cuda"))[:4]]
    for x, y in zip(expected, got):
        np.testing.assert_array_equal(x, y)


def test_close_while_another_thread_steps():
    for round_ in range(20):
        env = make("cuda", num_envs=256, seed=round_)
        env.reset()
        errors, started = [], threading.Event()

        def loop():
            try:
                while True:
                    env.step(np.zeros(256, np.int32))
                    started.set()
            except RuntimeError as exc:
                errors.append(exc)
            finally:
                started.set()

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        started.wait(60)
        env.close()
        thread.join(60)
        assert not thread.is_alive() and len(errors) == 1 and "closed" in str(errors[0])


def test_copies_refused_and_repr():
    env = make("cuda")
    with pytest.raises(TypeError, match="get_state"):
        copy.deepcopy(env)
    assert repr(env).startswith("CudaCraftaxEnv('Craftax-Symbolic-v1', num_envs=4, backend='cuda', device=")
    compact = make("cuda", obs="compact")
    assert compact.single_observation_space.dtype == np.uint8
    assert compact.observation_space.shape == (4, 1008)
