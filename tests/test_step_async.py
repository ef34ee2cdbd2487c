"""step_async / step_wait (pycraftax.vec_env.CraftaxVecEnv): the same steps as step(), on every
backend and both games; on backend="cuda" enqueued on a stream without waits, with invalid
actions reported at the next wait and changing nothing. The CUDA tests skip, saying "GPU",
where there is no GPU or CUDA build."""

from __future__ import annotations

import numpy as np
import pytest

import pycraftax

GAMES = {"Craftax-Symbolic-v1": 43, "Craftax-Classic-Symbolic-v1": 17}
N = 8


def _make(env_id, backend, seed=3, **kw):
    return pycraftax.make(env_id, num_envs=N, backend=backend, seed=seed, **kw)


def _host(out) -> list:
    obs, reward, terminated, truncated, info = out
    return [np.asarray(x).copy() for x in (obs, reward, terminated, truncated, info["done"],
                                           info["episode_return"], info["episode_length"], info["achievements"])]


def _actions(num_actions, steps, seed=0):
    return np.random.default_rng(seed).integers(0, num_actions, size=(steps, N)).astype(np.int32)


def _assert_equal(got, want):
    for x, y in zip(got, want):
        np.testing.assert_array_equal(x, y)


# -- every backend --------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", GAMES)
def test_step_async_then_wait_equals_step_on_the_c_env(env_id):
    env, ref = _make(env_id, "c"), _make(env_id, "c")
    env.reset(seed=5)
    ref.reset(seed=5)
    for a in _actions(GAMES[env_id], 60):
        env.step_async(a)
        _assert_equal(_host(env.step_wait()), _host(ref.step(a)))
    np.testing.assert_array_equal(env.key, ref.key)


@pytest.mark.parametrize("env_id", GAMES)
def test_step_async_refusals_on_the_c_env(env_id):
    env = _make(env_id, "c")
    with pytest.raises(RuntimeError, match="reset"):
        env.step_async(np.zeros(N, np.int32))
    env.reset(seed=0)
    with pytest.raises(RuntimeError, match="step_async"):
        env.step_wait()
    with pytest.raises(ValueError, match=r"actions\[0\] = 99 is outside \[0, "):
        env.step_async(np.full(N, 99, np.int32))
    with pytest.raises(ValueError, match="stream"):
        env.step_async(np.zeros(N, np.int32), stream=7)
    with pytest.raises(TypeError, match="stream"):
        env.step_async(np.zeros(N, np.int32), stream="default")
    env.report_final_obs = True
    with pytest.raises(ValueError, match="report_final_obs"):
        env.step_async(np.zeros(N, np.int32))
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.step_async(np.zeros(N, np.int32))


# -- backend="cuda" ---------------------------------------------------------------------------------
def _cuda_or_skip():
    if not pycraftax.cuda_available():
        from pycraftax import cuda_env

        pytest.skip(f"needs a GPU and the CUDA build: {cuda_env.unavailable_reason()}")


def _torch_cuda_or_skip():
    _cuda_or_skip()
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs PyTorch with a GPU")
    return torch


@pytest.mark.cuda
@pytest.mark.parametrize("env_id", GAMES)
@pytest.mark.parametrize("obs", ["float", "compact"])
def test_async_steps_without_waits_equal_the_c_envs_steps(env_id, obs):
    """40 steps enqueued back to back on a side stream, each step's outputs cloned on that stream
    before the next step overwrites them: every output equals the C env's step, and the final
    wait returns the last step's."""
    torch = _torch_cuda_or_skip()
    actions = _actions(GAMES[env_id], 40, seed=1)
    ref = _make(env_id, "c")
    ref.reset(seed=9)
    want = [_host(ref.step(a)) for a in actions]
    env = _make(env_id, "cuda", obs=obs)
    env.reset(seed=9)
    side = torch.cuda.Stream()
    device_actions = torch.as_tensor(actions, device="cuda")
    side.wait_stream(torch.cuda.current_stream())
    got = []
    with torch.cuda.stream(side):
        for t in range(len(actions)):
            out = env.step_async(device_actions[t], stream=side)
            obs_out, reward, terminated, truncated, info = out
            arrays = (obs_out, reward, terminated, truncated, info["done"], info["episode_return"],
                      info["episode_length"], info["achievements"])
            got.append([torch.as_tensor(a, device="cuda").clone() for a in arrays])
    last = _host(env.step_wait())
    for t, step in enumerate(got):
        host = [x.cpu().numpy() for x in step]
        if obs == "compact":
            host[0] = np.asarray(env.expand_obs(torch.as_tensor(step[0]))).copy()
        _assert_equal(host, want[t])
    if obs == "float":
        _assert_equal(last, want[-1])
    np.testing.assert_array_equal(env.key, ref.key)


@pytest.mark.cuda
@pytest.mark.parametrize("env_id", GAMES)
def test_an_invalid_async_action_raises_at_the_wait_and_changes_nothing(env_id):
    torch = _torch_cuda_or_skip()
    num_actions = GAMES[env_id]
    good = torch.as_tensor(_actions(num_actions, 3, seed=2), device="cuda")
    bad = good[0].clone()
    bad[N - 1] = num_actions
    env, ref = _make(env_id, "cuda"), _make(env_id, "cuda")
    env.reset(seed=4)
    ref.reset(seed=4)
    for a in good[:2]:
        ref.step(a)
    for a in (good[0], good[1], bad, good[2]):
        env.step_async(a)
    with pytest.raises(ValueError, match=rf"step_async: actions must be integers in \[0, {num_actions}\)"):
        env.step_wait()
    state, want = env.get_state(), ref.get_state()
    for name in want:
        np.testing.assert_array_equal(state[name], want[name], err_msg=name)
    env.step_async(good[2])  # the flag is cleared: the env steps again
    env.step_wait()
    assert not np.array_equal(env.get_state()["timestep"], want["timestep"])


@pytest.mark.cuda
def test_other_calls_wait_for_async_steps_and_host_actions_work():
    torch = _torch_cuda_or_skip()
    env_id = "Craftax-Symbolic-v1"
    actions = _actions(43, 5, seed=3)
    env, ref = _make(env_id, "cuda"), _make(env_id, "c")
    env.reset(seed=2)
    ref.reset(seed=2)
    for a in actions:
        env.step_async(a)  # host actions: copied into the env's buffer after the step before
        ref.step(a)
    state, want = env.get_state(), ref.get_state()  # get_state waits for the steps in flight
    for name in want:
        np.testing.assert_array_equal(state[name], want[name], err_msg=name)
    zeros = np.zeros(N, np.int32)
    env.step_async(torch.zeros(N, dtype=torch.int32, device="cuda"))
    got = _host(env.step(zeros))  # a synchronous step after an async one waits for it
    ref.step(zeros)
    _assert_equal(got, _host(ref.step(zeros)))
    env.step_async(torch.zeros(N, dtype=torch.int32, device="cuda"))
    env.close()  # waits for the step before freeing its buffers
