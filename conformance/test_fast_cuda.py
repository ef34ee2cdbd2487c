"""The fast recipe on the GPU against its NumPy reference (pycraftax/train/fast_model.py):
the CUDA cell encoder (cuda/fast_cuda.cu) on real compact records against the float-obs path,
its gradients against autograd, the whole bf16 model's loss and gradients against the float64
reference on the same weights and batch, and a short run of the trainer. Skips without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import pycraftax
from pycraftax import cuda_env, obs_compact
from pycraftax.train import fast_model as fm
from pycraftax.train import numpy_ppo

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(
    not (torch.cuda.is_available() and cuda_env.available()),
    reason=f"needs a CUDA GPU for PyTorch and the CUDA library: {cuda_env.unavailable_reason()}")]

BF16_EPS = 2.0 ** -8  # bfloat16's relative rounding step


@pytest.fixture(scope="module")
def records_and_obs():
    """Compact records [R, 1008] (CUDA) and their float obs [R, 8268] (numpy) after random play,
    so that the views hold mobs, items and dark cells."""
    n, rng = 512, np.random.default_rng(0)
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=n, backend="cuda", obs="compact", seed=0)
    env.reset(seed=0)
    recs = []
    for t in range(40):
        obs, *_ = env.step(rng.integers(0, 43, n).astype(np.int32))
        if t % 10 == 9:
            recs.append(torch.as_tensor(obs, device="cuda").clone())
    records = torch.cat(recs)
    env.close()
    floats = obs_compact.expand(records.cpu().numpy())
    return records, floats


def test_cell_encoder_forward_matches_the_float_path(records_and_obs):
    records, floats = records_and_obs
    p = fm.init_params(fm.FastModelConfig(cell_dim=16), seed=1)
    p[f"{fm.CELL}/bias"] = np.linspace(-0.3, 0.3, 16).astype(np.float32)
    w = torch.as_tensor(p[f"{fm.CELL}/kernel"], device="cuda")
    b = torch.as_tensor(p[f"{fm.CELL}/bias"], device="cuda")
    from pycraftax.train import cuda_ops

    feats = cuda_ops.encode_cells(records, w, b, 1640).float().cpu().numpy()
    ref, _ = fm.encode({k: v.astype(np.float64) for k, v in p.items()}, floats.astype(np.float64))
    assert feats.shape == ref.shape == (records.shape[0], 1640)
    err = np.abs(feats - ref)
    assert np.all(err <= BF16_EPS * np.abs(ref) + 1e-30), float((err / (np.abs(ref) + 1e-30)).max())
    assert (ref[:, :99 * 16] > 0).mean() > 0.2  # the ReLU passes a good part: the check is not on zeros


@pytest.mark.parametrize("grad_dtype", [torch.float32, torch.bfloat16])
def test_cell_encoder_backward_matches_autograd(records_and_obs, grad_dtype):
    """encode_cells_backward with either gradient dtype, and through autograd (whose gradient
    of the bfloat16 features is bfloat16), against float64 autograd of the float-obs path."""
    from pycraftax.train import cuda_ops

    records, floats = records_and_obs
    gen = torch.Generator(device="cuda").manual_seed(2)
    w = (0.3 * torch.randn(83, 16, device="cuda", generator=gen)).requires_grad_()
    b = (0.1 * torch.randn(16, device="cuda", generator=gen)).requires_grad_()
    upstream = torch.randn(records.shape[0], 1640, device="cuda", generator=gen).to(grad_dtype)
    direct = cuda_ops.encode_cells_backward(records, w, b, upstream, 1640)
    w64 = w.detach().double().requires_grad_()
    b64 = b.detach().double().requires_grad_()
    fm.encode_float_torch(w64, b64, torch.as_tensor(floats, device="cuda").double()).backward(upstream.double())
    for got, ref in zip(direct, (w64.grad, b64.grad)):
        rel = float((got.double() - ref).norm() / ref.norm())
        assert rel < 1e-5, rel
    if grad_dtype == torch.bfloat16:
        cuda_ops.encode_cells(records, w, b, 1640).backward(upstream)
        for got, ref in ((w.grad, w64.grad), (b.grad, b64.grad)):
            assert float((got.double() - ref).norm() / ref.norm()) < 1e-5


def _gpu_loss_and_grads(p: dict, records, batch: dict):
    model = fm.TorchActorCritic(p, "cuda", bf16=True)
    tb = {k: torch.as_tensor(v, device="cuda") for k, v in batch.items() if k != "obs"}
    tb = {k: (v.float() if v.is_floating_point() else v) for k, v in tb.items()}
    _, logits, values = model.forward(records, tb["dones"].bool(), tb["h0"])
    total, stats = fm.ppo_loss_torch(logits, values, tb, numpy_ppo.LossConfig())
    total.backward()
    return float(total.detach()), {k: model.weights[k].grad.double().cpu().numpy() for k in model.names}


def test_bf16_model_loss_and_gradients_match_the_float64_reference(records_and_obs):
    records, floats = records_and_obs
    T, B = 8, records.shape[0] // 8
    cfg = fm.FastModelConfig()
    p = fm.init_params(cfg, seed=3)
    rng = np.random.default_rng(4)
    batch = dict(obs=floats.reshape(T, B, -1).astype(np.float64), dones=rng.random((T, B)) < 0.1,
                 h0=0.5 * rng.standard_normal((B, cfg.hidden)), actions=rng.integers(0, 43, (T, B)),
                 values=rng.standard_normal((T, B)), log_probs=-3.7 + 0.3 * rng.standard_normal((T, B)),
                 advantages=rng.standard_normal((T, B)), targets=rng.standard_normal((T, B)))
    total, _, grads = fm.ppo_loss({k: v.astype(np.float64) for k, v in p.items()}, batch)
    g_total, g_grads = _gpu_loss_and_grads(p, records.reshape(T, B, -1), batch)
    assert g_total == pytest.approx(float(total), rel=2e-2, abs=1e-3)
    # bf16 GEMM operands and outputs round activations by up to 2^-9 each; sums of many signed
    # terms (the bias gradients) lose more than that relative to their size: per tensor the bound
    # is 0.15, over all parameters together 0.02 (CONFORMANCE.md)
    rel = {k: float(np.linalg.norm(g_grads[k] - ref) / max(np.linalg.norm(ref), 1e-12)) for k, ref in grads.items()}
    assert max(rel.values()) < 0.15, rel
    flat = np.concatenate([grads[k].ravel() for k in grads])
    g_flat = np.concatenate([g_grads[k].ravel() for k in grads])
    assert np.linalg.norm(g_flat - flat) / np.linalg.norm(flat) < 2e-2, rel
    print("gradient relative errors (bf16 GPU vs float64 NumPy):", {k: round(v, 4) for k, v in rel.items()})


def test_fast_trainer_learns_a_little_on_the_gpu(tmp_path):
    from pycraftax.train.config import TrainConfig
    from pycraftax.train.torch_trainer import TorchTrainer

    c = TrainConfig.from_recipe("fast", num_envs=2048, num_minibatches=2, total_timesteps=2048 * 64 * 12)
    t = TorchTrainer(c, str(tmp_path), device="cuda")
    assert t.graphs
    lines = t.run(progress=False)
    assert len(lines) == 12 and all(np.isfinite(m["total_loss"]) for m in lines)
    assert lines[-1]["return_window"] is not None and lines[-1]["return_window"] > lines[0]["return_window"] - 1
    r = TorchTrainer.resume(str(tmp_path / "checkpoint.npz"))
    assert r.update == 12 and r.device.type == "cuda"


def test_replayed_forward_reproduces_the_rollouts_log_probs_and_values():
    """The update's forward over a stored rollout (all envs as one minibatch) gives the rollout's
    own log-probs and values up to bf16 rounding: the first PPO ratio is 1 within that. (Not
    bitwise: the rollout's GEMMs have N rows a step, the replay's T * N, and cuBLAS picks other
    kernels for them.)"""
    from pycraftax.train.config import TrainConfig
    from pycraftax.train.torch_trainer import TorchTrainer

    c = TrainConfig.from_recipe("fast", num_envs=1024, num_minibatches=1, total_timesteps=1024 * 64 * 4)
    t = TorchTrainer(c, device="cuda")
    t.step()  # weights away from the initialisation
    t.rollout()
    b, T = t.buf, c.num_steps
    with torch.no_grad():
        _, logits, values = t.model.forward(b["obs"][:T], b["dones"][:T], b["h0"])
        logp = torch.log_softmax(logits, -1).gather(-1, b["actions"][..., None].long())[..., 0]
    dlogp = (logp - b["log_probs"]).abs()
    dv = (values - b["values"][:T]).abs()
    t.env.close()
    assert float(dlogp.mean()) < 1e-2 and float(dlogp.max()) < 0.2, (float(dlogp.mean()), float(dlogp.max()))
    assert float(dv.mean()) < 1e-2 * max(1.0, float(b["values"][:T].abs().mean())), float(dv.mean())
