"""The CUDA trainer on Craftax-Classic: the config and CLI take `--env Craftax-Classic-Symbolic-v1
--backend cuda` up to the GPU (without one, the error names what is missing), the model is sized
from the env, the episode log decodes Classic's 22 achievements, and the buffer ids are the
header's. With a GPU and Classic's CUDA env: a short training run on the GPU."""

from __future__ import annotations

import ast
import re

import numpy as np
import pytest

import pycraftax
from pycraftax import cli
from pycraftax.achievements import CLASSIC_NAMES_BY_INDEX, NAMES_BY_INDEX
from pycraftax.train import cuda_trainer as ct
from pycraftax.train.config import TrainConfig

CLASSIC = "Craftax-Classic-Symbolic-v1"
CRAFTAX = "Craftax-Symbolic-v1"
TINY = dict(num_envs=32, num_steps=16, total_timesteps=32 * 16 * 3, update_epochs=1, num_minibatches=2, width=32,
            hidden=32, checkpoint_every=1, seed=3, env_id=CLASSIC)

no_gpu = pytest.mark.skipif(ct.available(), reason="checks the refusal without a GPU; this machine has one")


@no_gpu
def test_cli_takes_classic_on_cuda_up_to_the_gpu(tmp_path, capsys):
    reason = ct.unavailable_reason()
    out = str(tmp_path / "run")
    assert cli.main(["train", "--env", CLASSIC, "--backend", "cuda", "--quiet", "--out", out]) == 2
    err = capsys.readouterr().err
    assert f"--backend cuda: {reason}" in err
    assert "not available yet" not in err


@no_gpu
def test_cuda_trainer_of_classic_names_the_missing_gpu(tmp_path):
    with pytest.raises(RuntimeError) as info:
        ct.CudaTrainer(TrainConfig(**TINY), str(tmp_path))
    assert str(info.value) == ct.unavailable_reason()


def test_model_is_sized_from_the_env():
    with pycraftax.make(CLASSIC, num_envs=2, backend="c") as env:  # the CUDA env's interface: env_id, sizes
        assert ct.model_sizes(CLASSIC, env) == (env.obs_size, env.num_actions) == (1345, 17)
        assert ct.model_sizes(CLASSIC, env, obs_size=1345, num_actions=17) == (1345, 17)
        with pytest.raises(ValueError, match="obs_size=8268 differs from the env's"):
            ct.model_sizes(CLASSIC, env, obs_size=8268)
        with pytest.raises(ValueError, match="num_actions=43 differs from the env's"):
            ct.model_sizes(CLASSIC, env, num_actions=43)
        with pytest.raises(ValueError, match="config.env_id is 'Craftax-Symbolic-v1'"):
            ct.model_sizes(CRAFTAX, env)
    assert ct.model_sizes(CLASSIC) == ct.env_sizes(CLASSIC) == (1345, 17)
    assert ct.model_sizes(CRAFTAX) == ct.env_sizes(CRAFTAX) == (8268, 43)
    assert ct.model_sizes(CRAFTAX, obs_size=100) == (100, 43)  # a check's own size without env
    with pytest.raises(ValueError, match="env_id must be one of"):
        ct.env_sizes("Crafter")


@pytest.mark.parametrize("names", [CLASSIC_NAMES_BY_INDEX, NAMES_BY_INDEX], ids=["classic", "craftax"])
def test_episode_log_decodes_the_envs_achievements(names):
    T, N, K = 3, 4, len(names)
    ret = np.zeros((T, N), np.float32)
    length = np.zeros((T, N), np.int32)
    bits = np.zeros((T, N, ct.ACH_WORDS), np.uint32)
    rng = np.random.default_rng(0)
    ended = {(0, 1): 5, (2, 0): 9, (2, 3): 1}
    want = {}
    for (t, n), steps in ended.items():
        ret[t, n], length[t, n] = 0.5 * steps, steps
        ach = rng.random(K) < 0.5
        ach[K - 1] = True  # the last achievement (bit 21 for Classic, 66 for the full game)
        for k in np.flatnonzero(ach):
            bits[t, n, k >> 5] |= np.uint32(1 << (k & 31))
        want[(t, n)] = ach
    bits[0, 0, 0] = 0xFFFFFFFF  # bits of a step where no episode ended are not read
    raw = np.concatenate([ret.view(np.uint32).ravel(), length.view(np.uint32).ravel(), bits.ravel()])
    episodes = ct.decode_episodes(raw, T, N, K)
    assert [(r, n) for r, n, _ in episodes] == [(2.5, 5), (4.5, 9), (0.5, 1)]  # (step, env) order
    for (key, ach), (_, _, got) in zip(sorted(want.items()), episodes):
        assert got.shape == (K,) and got.dtype == bool
        np.testing.assert_array_equal(got, ach, err_msg=str(key))
    with pytest.raises(ValueError, match="num_achievements must be in"):
        ct.decode_episodes(raw, T, N, 97)
    with pytest.raises(ValueError, match="raw must be uint32"):
        ct.decode_episodes(raw[:-1], T, N, K)


def test_buffer_ids_are_the_headers():
    text = ct.header_path().read_text()
    in_text = {m[0]: int(m[1]) for m in re.findall(r"^#define CRAFTAX_PPO_BUF_(\w+) (\d+)$", text, flags=re.M)}
    count = int(re.search(r"^#define CRAFTAX_PPO_NUM_BUFFERS (\d+)$", text, flags=re.M)[1])
    assert ct.BUF.as_dict() == in_text
    assert sorted(in_text.values()) == list(range(count))
    assert ct.BUF_LOGP == ct.BUF.LOGP == in_text["LOGP"]
    with pytest.raises(AttributeError, match="defines no CRAFTAX_PPO_BUF_NOPE"):
        ct.BUF.NOPE
    # every buffer the trainer names exists in the header
    tree = ast.parse(open(ct.__file__).read())
    used = {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "BUF"}
    assert used and used - {"as_dict"} <= set(in_text), sorted(used - set(in_text))


def test_env_and_encoder_ids_are_the_headers():
    constants = ct.header_constants()
    assert {constants[f"CRAFTAX_PPO_ENV_{name}"] for name in ct.ENV_NAMES.values()} == {0, 1}
    assert set(ct.ENV_NAMES) == set(pycraftax.list_envs())
    assert {constants[f"CRAFTAX_PPO_ENCODER_{name.upper()}"] for name in ct.ENCODERS} == {0, 1}


def test_built_library_is_the_headers_api_version():
    from pycraftax import cuda_env

    path = cuda_env.library_path()
    if path is None:
        pytest.skip("the CUDA library libcraftax_cuda.so is not built (make -C cuda, or pip install with nvcc)")
    from cffi import FFI

    ffi = FFI()
    ffi.cdef("int craftax_ppo_api_version(void);")
    lib = ffi.dlopen(str(path))  # ABI mode: no GPU needed for a host function
    assert lib.craftax_ppo_api_version() == ct.header_constants()["CRAFTAX_PPO_API_VERSION"]


# -- on the GPU ---------------------------------------------------------------------------------
def _classic_cuda_reason() -> str | None:
    if not ct.available():
        return f"needs a GPU, the CUDA build and cuBLAS: {ct.unavailable_reason()}"
    if CLASSIC not in pycraftax.list_envs(backend="cuda"):
        return f"this build has no CUDA env of {CLASSIC}"
    return None


@pytest.mark.cuda
@pytest.mark.skipif(_classic_cuda_reason() is not None, reason=str(_classic_cuda_reason()))
@pytest.mark.parametrize("resets", ["optimistic", "auto"])
def test_short_classic_run_on_the_gpu(tmp_path, resets):
    trainer = ct.CudaTrainer(TrainConfig(**TINY, resets=resets), str(tmp_path))
    try:
        assert trainer.env.env_id == CLASSIC and trainer.env.backend == "cuda"
        assert (trainer.ppo.D, trainer.ppo.A) == (trainer.env.obs_size, trainer.env.num_actions) == (1345, 17)
        params = trainer.params
        assert params["params/Dense_0/kernel"].shape == (1345, 32)
        assert params["params/Dense_3/kernel"].shape[1] == 17  # the actor's logits
        state = trainer.env.get_state()
        state["timestep"][:] = 10000 - 1  # every episode reaches max_timesteps on the first step
        trainer.env.set_state(state)
        lines = trainer.run(progress=False)
    finally:
        trainer.close()
    assert len(lines) == 3
    for m in lines:
        assert all(np.isfinite(m[k]) for k in ct.LOSS_STATS)
        assert 0 < m["entropy"] <= np.log(17) + 1e-5
    assert lines[0]["episodes"] == TINY["num_envs"]  # all ended on the first step of the run
    assert list(lines[0]["achievements"]) == list(CLASSIC_NAMES_BY_INDEX)
    assert all(len(ach) == 22 for ach in trainer.window_ach)
