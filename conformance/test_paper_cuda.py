"""Model gru on the PyTorch engine on the GPU (pycraftax/train/paper_model.py in
torch_trainer.TorchTrainer): the paper recipe and Classic. The fused GRU cell against the
written-out one in float64; the fp32 model's loss and gradients (exact fp32 GEMMs, and TF32) against
numpy_ppo in float64 on the same weights and a batch of real obs; the graphed rollout against the
eager one; the graphed minibatch step against the eager one; the gradient all-reduce captured in the
minibatch graph (a one-rank NCCL group); short runs of the paper recipe's sizes, of Classic and of a
small config that must learn; `pycraftax train --gpus 2` where two GPUs are present. Skips without
a GPU. Bounds and measured values: CONFORMANCE.md."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import pycraftax
from pycraftax import cuda_env
from pycraftax.train import numpy_ppo as npp
from pycraftax.train.config import TrainConfig

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(
    not (torch.cuda.is_available() and cuda_env.available()),
    reason=f"needs a CUDA GPU for PyTorch and the CUDA library: {cuda_env.unavailable_reason()}")]

from pycraftax.train import paper_model as pm  # noqa: E402
from pycraftax.train.fast_model import ppo_loss_torch  # noqa: E402
from pycraftax.train.torch_trainer import TorchTrainer  # noqa: E402

CLASSIC = "Craftax-Classic-Symbolic-v1"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def matmul_precision():
    """Sets torch.backends.cuda.matmul.fp32_precision for a test and puts it back."""
    saved = torch.backends.cuda.matmul.fp32_precision

    def use(value: str) -> None:
        torch.backends.cuda.matmul.fp32_precision = value

    yield use
    torch.backends.cuda.matmul.fp32_precision = saved


@pytest.mark.parametrize("T, B, H", [(7, 5, 12), (64, 128, 512)])
def test_fused_cell_equals_the_written_out_cell_in_float64(T, B, H):
    """gru_sequence with PyTorch's fused GRU cell kernel (what the GPU runs) against the cell in
    torch ops (what the CPU checks against numpy_ppo), float64 on the GPU: states and every
    input's gradient, resets included."""
    gen = torch.Generator(device="cuda").manual_seed(1)
    f64 = dict(dtype=torch.float64, device="cuda")
    xs = torch.randn(T, B, 3 * H, generator=gen, **f64)
    keeps = torch.rand(T, B, generator=gen, device="cuda") > 0.1
    h0 = torch.randn(B, H, generator=gen, **f64)
    Wh = torch.randn(H, 3 * H, generator=gen, **f64) / np.sqrt(H)
    bi, bhn = torch.randn(3 * H, generator=gen, **f64), torch.randn(H, generator=gen, **f64)
    upstream = torch.randn(T, B, H, generator=gen, **f64)
    results = []
    for fused in (True, False):
        inputs = [t.clone().requires_grad_() for t in (xs, h0, Wh, bi, bhn)]
        hs, h = pm.gru_sequence(inputs[0], keeps, *inputs[1:], fused=fused)
        ((hs * upstream).sum() + h.sum()).backward()
        results.append([hs.detach(), h.detach()] + [t.grad for t in inputs])
    for name, a, b in zip(("hs", "h_T", "d xs", "d h0", "d Wh", "d bi", "d bhn"), *results):
        assert torch.allclose(a, b, rtol=1e-12, atol=1e-12), (name, float((a - b).abs().max()))


def _real_obs(env_id: str, rows: int) -> np.ndarray:
    """Float obs of the CUDA env after random play (mobs, items, dark cells in view)."""
    n, rng = 256, np.random.default_rng(0)
    env = pycraftax.make(env_id, num_envs=n, backend="cuda", seed=0)
    obs, _ = env.reset(seed=0)
    out = []
    for t in range(40):
        obs, *_ = env.step(rng.integers(0, env.num_actions, n).astype(np.int32))
        if t % 10 == 9:
            out.append(torch.as_tensor(obs, device="cuda").cpu().numpy())
    env.close()
    return np.concatenate(out)[:rows]


@pytest.mark.parametrize("precision, bound", [("ieee", 2e-3), ("tf32", 3e-2)])
def test_fp32_loss_and_gradients_match_numpy_float64(matmul_precision, precision, bound):
    """The paper recipe's network (8268 -> 512, GRU 512, heads 512) in fp32 on the GPU against
    numpy_ppo.ppo_loss in float64, same weights and minibatch (16 steps x 32 envs of real obs,
    resets inside): every gradient tensor within `bound` x its largest entry (ieee: exact fp32
    GEMMs; tf32: the recipe's default GEMMs)."""
    matmul_precision(precision)
    cfg = npp.ModelConfig()
    rng = np.random.default_rng(2)
    params = {k: (v + rng.normal(0, 0.3 if "Dense_3" in k else 0.02, v.shape)).astype(np.float32)
              for k, v in npp.init_params(cfg, seed=2).items()}
    T, B = 16, 32
    batch = dict(obs=_real_obs("Craftax-Symbolic-v1", T * B).reshape(T, B, -1), dones=rng.random((T, B)) < 0.1,
                 h0=0.5 * rng.standard_normal((B, cfg.hidden)), actions=rng.integers(0, 43, (T, B)),
                 values=rng.standard_normal((T, B)), log_probs=np.log(1 / 43) + 0.3 * rng.standard_normal((T, B)),
                 advantages=rng.standard_normal((T, B)), targets=rng.standard_normal((T, B)))
    total, aux, grads = npp.ppo_loss({k: v.astype(np.float64) for k, v in params.items()},
                                     {k: (v.astype(np.float64) if v.dtype.kind == "f" else v)
                                      for k, v in batch.items()})
    model = pm.PaperActorCritic(params, "cuda")
    tb = {k: torch.as_tensor(v, device="cuda") for k, v in batch.items()}
    tb = {k: (v.float() if v.is_floating_point() else v) for k, v in tb.items()}
    _, logits, values = model.forward(tb["obs"], tb["dones"], tb["h0"])
    g_total, stats = ppo_loss_torch(logits, values, tb, npp.LossConfig())
    g_total.backward()
    assert float(g_total) == pytest.approx(float(total), rel=bound / 10, abs=bound / 10)
    worst = {}
    for k, ref in grads.items():
        got = model.weights[k].grad.double().cpu().numpy()
        worst[k] = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
    print(f"\n{precision}: gradient error / max |ref| per tensor:", {k.split("params/")[1]: f"{v:.1e}"
                                                                  for k, v in worst.items()})
    assert max(worst.values()) <= bound, worst


def _small(env_id: str = "Craftax-Symbolic-v1", **kw) -> TrainConfig:
    sizes = dict(num_envs=256, num_steps=16, num_minibatches=2, update_epochs=2, width=64, hidden=64,
                 total_timesteps=256 * 16 * 4, env_id=env_id)
    return TrainConfig(**{**sizes, **kw})


@pytest.mark.parametrize("env_id", ["Craftax-Symbolic-v1", CLASSIC])
def test_rollout_graphs_equal_the_eager_rollout(env_id):
    """The rollout as CUDA graphs between env steps (optimistic resets: the recipe's) fills every
    buffer bitwise as the eager loop does, capturing and replayed, on both games."""
    c = _small(env_id)
    graphed, eager = TorchTrainer(c, device="cuda"), TorchTrainer(c, device="cuda", graphs=False)
    for _ in range(2):
        for t in (graphed, eager):
            t.rollout()
        assert len(graphed.rollout_graphs) == c.num_steps + 1
        for name in graphed.buf:
            assert torch.equal(graphed.buf[name], eager.buf[name]), name
        for name in graphed.ep:
            assert torch.equal(graphed.ep[name], eager.ep[name]), name
    for t in (graphed, eager):
        t.env.close()


def test_graphed_minibatch_steps_equal_the_eager_ones():
    """One update (2 epochs x 2 minibatches) replayed from the captured minibatch graph against the
    same update run eagerly, from the same rollout: the weights within fp32 rounding (printed:
    how far, and whether bitwise)."""
    c = _small()
    graphed, eager = TorchTrainer(c, device="cuda"), TorchTrainer(c, device="cuda", graphs=False)
    for t in (graphed, eager):
        t.rollout()
        t.learn()
    assert graphed.graph is not None and eager.graph is None
    worst = 0.0
    for k, w in eager.params.items():
        g = graphed.params[k]
        worst = max(worst, float(np.abs(g - w).max() / max(np.abs(w).max(), 1e-30)))
    print(f"\ngraphed vs eager update: worst relative weight difference {worst:.2e}")
    assert worst <= 1e-5
    for t in (graphed, eager):
        t.env.close()


def test_paper_recipe_iterations(tmp_path):
    """Three updates at the paper recipe's sizes (1,024 envs x 64 steps, 4 epochs x 8 minibatches,
    optimistic resets, 512 wide, fp32 weights, TF32 GEMMs) from the CLI's trainer, and a resume."""
    c = TrainConfig.from_recipe("paper", total_timesteps=1024 * 64 * 3)
    t = TorchTrainer(c, str(tmp_path), device="cuda")
    assert t.graphs and t.model.fused_cell and t.env.obs_mode == "float" and t.env.resets == "optimistic"
    assert t.model.weights["params/Dense_0/kernel"].dtype == torch.float32
    lines = t.run(progress=False)
    assert len(lines) == 3 and all(np.isfinite(m["total_loss"]) and m["grad_norm"] > 0 for m in lines)
    print("\npaper recipe, training steps/s of the 3 updates:", [round(m["sps"]) for m in lines])
    t.env.close()
    r = TorchTrainer.resume(str(tmp_path / "checkpoint.npz"))
    assert r.device.type == "cuda" and r.update == 3 and r.opt_steps == 3 * 32
    r.env.close()


@pytest.mark.parametrize("resets", ["optimistic", "auto"])
def test_classic_trains_on_the_gpu(tmp_path, resets):
    """Classic's float obs (1,345) and 17 actions: every episode made to end on the first step,
    its 22 achievements in the metrics."""
    t = TorchTrainer(_small(CLASSIC, num_envs=32, resets=resets, total_timesteps=32 * 16 * 3), str(tmp_path),
                     device="cuda")
    assert (t.model_config.obs_size, t.model_config.num_actions) == (1345, 17) and t.env.env_id == CLASSIC
    state = t.env.get_state()
    state["timestep"][:] = 10000 - 1  # every episode reaches max_timesteps on the next step
    t.env.set_state(state)
    lines = t.run(progress=False)
    t.env.close()
    assert len(lines) == 3 and all(np.isfinite(m["total_loss"]) for m in lines)
    assert all(0 < m["entropy"] <= np.log(17) + 1e-5 for m in lines)
    assert lines[0]["episodes"] == 32 and len(lines[0]["achievements"]) == 22


def test_short_run_improves_return(tmp_path):
    """60 updates of 256 envs x 32 steps, 128 wide, lr 5e-4: the mean episode return of the last
    tenth of the updates above the first tenth's by 0.3."""
    updates = int(os.environ.get("PYCRAFTAX_TRAIN_TEST_UPDATES", "60"))
    c = TrainConfig(total_timesteps=updates * 256 * 32, num_envs=256, num_steps=32, width=128, hidden=128, lr=5e-4,
                    checkpoint_every=10**6)
    t = TorchTrainer(c, str(tmp_path), device="cuda")
    lines = t.run(progress=False)
    t.env.close()
    rets = [m["episode_return"] for m in lines if m["episode_return"] is not None]
    k = max(3, len(rets) // 10)
    early, late = float(np.mean(rets[:k])), float(np.mean(rets[-k:]))
    print(f"\n{len(lines)} updates: mean episode return {early:.3f} -> {late:.3f}, median "
          f"{np.median([m['sps'] for m in lines[1:]]):,.0f} steps/s")
    assert late > early + 0.3, (early, late)


def test_gradient_average_is_captured_in_the_minibatch_graph(monkeypatch):
    """A one-rank NCCL group: the all-reduces of the gradients and of the advantage moments run
    inside the captured minibatch graph, and the update equals the one of a trainer without a
    group (the all-reduce of one rank is the identity; the moments are computed in another order)."""
    import torch.distributed as tdist

    from pycraftax.train import distributed

    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(_free_port()))
    group = distributed.Group(distributed.World(0, 1, 0), "cuda", timeout_s=60)
    try:
        c = _small()
        alone, grouped = TorchTrainer(c, device="cuda"), TorchTrainer(c, device="cuda", group=group)
        for t in (alone, grouped):
            t.step()
            t.step()
        assert grouped.graph is not None and grouped.flat_grad is not None
        worst = max(float(np.abs(grouped.params[k] - w).max() / max(np.abs(w).max(), 1e-30))
                    for k, w in alone.params.items())
        print(f"\none-rank NCCL group vs no group after 2 updates: worst relative weight difference {worst:.2e}")
        assert worst <= 1e-4
        for t in (alone, grouped):
            t.env.close()
    finally:
        if tdist.is_initialized():
            tdist.destroy_process_group()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs >= 2 GPUs: pycraftax train --gpus 2")
def test_train_on_two_gpus_and_resume_on_one(tmp_path):
    """`pycraftax train --gpus 2` (torchrun, NCCL): two updates of a small config, rank 0's run
    files; then the checkpoint resumes on one GPU."""
    out = tmp_path / "run"
    flags = ["--backend", "cuda", "--num-envs", "512", "--num-steps", "16", "--num-minibatches", "2", "--width",
             "64", "--hidden", "64", "--total-timesteps", str(512 * 16 * 2), "--quiet", "--out", str(out)]
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-m", "pycraftax", "train", "--gpus", "2", *flags], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "over 2 ranks of 256 envs" in proc.stdout
    from pycraftax.train.loop import read_checkpoint

    assert read_checkpoint(str(out / "checkpoint.npz"))["meta"]["world_size"] == 2
    r = TorchTrainer.resume(str(out / "checkpoint.npz"), device="cuda")
    assert r.update == 2 and r.world_size == 1 and r.local_envs == 512
    r.env.close()
