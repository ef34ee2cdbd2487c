"""step()'s info["final_obs"] on backend="cuda" (full Craftax): the device array holds, for every
env that ended (by death and by the time limit, auto and optimistic resets, float and compact
obs, either step layout), the obs of the state it ended in: step_env's obs of the states from
before the step, stepped by the C reference, and C's own final_obs bit for bit; the step
without final_obs unchanged by it; the gymnasium VectorEnv's infos["final_obs"] on CUDA. Runs
where a GPU is present."""

from __future__ import annotations

import numpy as np
import pytest

import pycraftax
from conformance.final_obs_check import assert_same_without_final_obs, check_final_obs, kill

if not pycraftax.cuda_available():
    pytest.skip("no usable CUDA backend (GPU, driver or libcraftax_cuda.so)", allow_module_level=True)

from conformance.test_cuda import STEP_LAYOUTS, host, step_layout  # noqa: E402
from pycraftax.cuda_env import CudaArray  # noqa: E402
from pycraftax.gymnasium_env import CraftaxVectorEnv  # noqa: E402

pytestmark = pytest.mark.cuda
ENV_ID = "Craftax-Symbolic-v1"
NUM_ENVS = 16
MAX_TIMESTEPS = 6
RESETS = [("auto", None), ("optimistic", 4)]


def make(backend, resets="auto", reset_ratio=None, **kwargs):
    return pycraftax.make(ENV_ID, num_envs=NUM_ENVS, backend=backend, seed=7, resets=resets,
                          reset_ratio=reset_ratio, max_timesteps=MAX_TIMESTEPS, **kwargs)


@pytest.mark.parametrize("layout", sorted(STEP_LAYOUTS))
@pytest.mark.parametrize("obs", ["float", "compact"])
@pytest.mark.parametrize("resets,reset_ratio", RESETS)
def test_cuda_final_obs_is_the_terminal_obs(resets, reset_ratio, obs, layout):
    with step_layout(layout):
        env = make("cuda", resets, reset_ratio, obs=obs)
        counts = check_final_obs(env, make("c"), steps=14, seed=3, kill_every=4)
    assert counts["terminated"] > 0 and counts["truncated"] > 0, counts
    assert isinstance(env.step(np.zeros(NUM_ENVS, np.int32))[4]["final_obs"], CudaArray)


@pytest.mark.parametrize("resets,reset_ratio", RESETS)
def test_cuda_final_obs_equals_c(resets, reset_ratio):
    c, g = make("c", resets, reset_ratio), make("cuda", resets, reset_ratio)
    for env in (c, g):
        env.report_final_obs = True
        env.reset(seed=1)
    rng = np.random.default_rng(8)
    ended = 0
    for t in range(15):
        if t % 5 == 2:
            kill(c, np.random.default_rng(t), 0.4)
            kill(g, np.random.default_rng(t), 0.4)
        actions = rng.integers(0, 43, NUM_ENVS).astype(np.int32)
        c_out, g_out = c.step(actions), g.step(actions)
        np.testing.assert_array_equal(host(g_out[0]), c_out[0], err_msg=f"step {t}: obs")
        np.testing.assert_array_equal(host(g_out[4]["final_obs"]), c_out[4]["final_obs"],
                                      err_msg=f"step {t}: final_obs")
        ended += int((c_out[2] | c_out[3]).sum())
    assert ended > NUM_ENVS


@pytest.mark.parametrize("resets,reset_ratio", RESETS)
def test_cuda_step_is_unchanged_by_final_obs(resets, reset_ratio):
    assert_same_without_final_obs(lambda: make("cuda", resets, reset_ratio), steps=10, seed=4)


def test_cuda_vector_env_final_obs():
    envs = CraftaxVectorEnv(NUM_ENVS, env_id=ENV_ID, backend="cuda", seed=2, max_timesteps=MAX_TIMESTEPS)
    reference = CraftaxVectorEnv(NUM_ENVS, env_id=ENV_ID, backend="c", seed=2, max_timesteps=MAX_TIMESTEPS)
    envs.reset(seed=5)
    reference.reset(seed=5)
    rng = np.random.default_rng(1)
    for t in range(2 * MAX_TIMESTEPS):
        actions = rng.integers(0, 43, NUM_ENVS)
        g_infos, c_infos = envs.step(actions)[4], reference.step(actions)[4]
        assert envs.final_obs_is_terminal
        assert ("final_obs" in g_infos) == ("final_obs" in c_infos)
        if "final_obs" in c_infos:
            assert isinstance(g_infos["final_obs"], np.ndarray)
            np.testing.assert_array_equal(g_infos["_final_obs"], c_infos["_final_obs"])
            np.testing.assert_array_equal(g_infos["final_obs"], c_infos["final_obs"], err_msg=f"step {t}")
