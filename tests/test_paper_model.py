"""The paper's network in PyTorch (pycraftax/train/paper_model.py) against the NumPy reference
(numpy_ppo, itself checked against finite differences in conformance/test_gradcheck.py): the
forward, the PPO loss and every parameter's gradient in float64 on the same weights and batch;
the GRU-over-a-sequence op against finite differences (torch.autograd.gradcheck). CPU; the
GPU's fused cell is checked against these paths in conformance/test_paper_cuda.py."""

from __future__ import annotations

import numpy as np
import pytest

from pycraftax.train import numpy_ppo as npp

torch = pytest.importorskip("torch")

from pycraftax.train import paper_model as pm  # noqa: E402
from pycraftax.train.fast_model import ppo_loss_torch  # noqa: E402

SMALL = npp.ModelConfig(obs_size=40, num_actions=7, width=16, hidden=12)


def params64(cfg=SMALL, seed: int = 0) -> dict:
    """numpy_ppo's initialisation moved off its zero biases and tiny actor head, so every path
    carries gradient."""
    rng = np.random.default_rng(seed + 100)
    p = npp.init_params(cfg, seed=seed, dtype=np.float64)
    return {k: v + rng.normal(0, 0.3 if "Dense_3" in k else 0.1, v.shape) for k, v in p.items()}


def random_batch(rng, T: int, B: int, cfg=SMALL) -> dict:
    """A minibatch shaped as the trainer's: sparse obs in [0, 1), resets inside the sequences
    and at step 0, old values and log-probs perturbed so that some ratios and values clip."""
    obs = (rng.random((T, B, cfg.obs_size)) < 0.3) * rng.random((T, B, cfg.obs_size))
    dones = rng.random((T, B)) < 0.2
    dones[0, 0] = True
    return dict(obs=obs, dones=dones, h0=rng.normal(0, 0.5, (B, cfg.hidden)),
                actions=rng.integers(0, cfg.num_actions, (T, B)), values=rng.normal(0, 1, (T, B)),
                log_probs=np.log(1 / cfg.num_actions) + rng.normal(0, 0.3, (T, B)),
                advantages=rng.normal(0, 1, (T, B)), targets=rng.normal(0, 1, (T, B)))


def torch_loss_and_grads(p: dict, batch: dict, dtype=torch.float64):
    model = pm.PaperActorCritic(p, "cpu", dtype=dtype)
    tb = {k: torch.as_tensor(v) for k, v in batch.items()}
    tb = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in tb.items()}
    _, logits, values = model.forward(tb["obs"], tb["dones"].bool(), tb["h0"])
    total, stats = ppo_loss_torch(logits, values, tb, npp.LossConfig())
    total.backward()
    return float(total.detach()), {k: float(v) for k, v in stats.items()}, \
        {k: model.weights[k].grad.numpy() for k in model.names}


def test_forward_equals_the_reference_in_float64():
    rng = np.random.default_rng(1)
    p = params64(seed=1)
    batch = random_batch(rng, T=6, B=4)
    h, logits, values, _ = npp.forward(p, batch["obs"], batch["dones"], batch["h0"])
    model = pm.PaperActorCritic(p, "cpu", dtype=torch.float64)
    with torch.no_grad():
        th, tl, tv = model.forward(torch.as_tensor(batch["obs"]), torch.as_tensor(batch["dones"]),
                                   torch.as_tensor(batch["h0"]))
    np.testing.assert_allclose(tl.numpy(), logits, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tv.numpy(), values, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(th.numpy(), h, rtol=1e-12, atol=1e-12)


def test_loss_and_every_gradient_equal_the_reference_in_float64():
    rng = np.random.default_rng(2)
    p = params64(seed=2)
    batch = random_batch(rng, T=5, B=4)
    total, aux, grads = npp.ppo_loss(p, batch)
    t_total, t_aux, t_grads = torch_loss_and_grads(p, batch)
    assert t_total == pytest.approx(float(total), rel=1e-12, abs=1e-14)
    for k in ("value_loss", "actor_loss", "entropy", "approx_kl"):
        assert t_aux[k] == pytest.approx(float(aux[k]), rel=1e-10, abs=1e-14), k
    assert t_aux["clip_frac"] == pytest.approx(float(aux["clip_frac"]), rel=1e-7)  # a float32 mean of 0s and 1s
    assert 0 < t_aux["clip_frac"] < 1  # the clipped branch is exercised
    assert set(t_grads) == set(grads) == set(npp.param_shapes(SMALL))
    for k in grads:
        assert np.abs(grads[k]).max() > 0, k
        np.testing.assert_allclose(t_grads[k], grads[k], rtol=1e-9, atol=1e-12, err_msg=k)


def test_paper_sized_float32_model_is_the_float32_reference():
    """The paper recipe's network (8268 inputs, 512 wide, 43 actions) in float32 against numpy_ppo
    in float32 on the same weights: the two sum in different orders, so equal to float32 rounding."""
    cfg = npp.ModelConfig()
    rng = np.random.default_rng(3)
    # scaled normal weights (numpy_ppo's orthogonal init of the 8268 x 512 kernel is a slow QR)
    p = {k: (rng.standard_normal(s) / np.sqrt(s[0] if len(s) == 2 else 10)).astype(np.float32)
         for k, s in npp.param_shapes(cfg).items()}
    batch = random_batch(rng, T=3, B=2, cfg=cfg)
    h, logits, values, _ = npp.forward(p, batch["obs"].astype(np.float32), batch["dones"],
                                       batch["h0"].astype(np.float32))
    model = pm.PaperActorCritic(p, "cpu")
    with torch.no_grad():
        th, tl, tv = model.forward(torch.as_tensor(batch["obs"]), torch.as_tensor(batch["dones"]),
                                   torch.as_tensor(batch["h0"]).float())
    assert tl.dtype == torch.float32
    np.testing.assert_allclose(tl.numpy(), logits, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(tv.numpy(), values, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(th.numpy(), h, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("outputs", ["both", "states", "last"])
def test_gru_sequence_gradients_match_finite_differences(outputs):
    """torch.autograd.gradcheck of the op (central differences, float64) in all five inputs, with
    resets inside the sequence and at step 0, whether the loss reads every state, only them or
    only the last."""
    gen = torch.Generator().manual_seed(4)
    T, B, H = 5, 3, 4
    xs = torch.randn(T, B, 3 * H, dtype=torch.float64, generator=gen).requires_grad_()
    keeps = torch.ones(T, B, dtype=torch.bool)
    keeps[0, 1] = keeps[2, 0] = keeps[3, 2] = False
    h0 = torch.randn(B, H, dtype=torch.float64, generator=gen).requires_grad_()
    Wh = (0.5 * torch.randn(H, 3 * H, dtype=torch.float64, generator=gen)).requires_grad_()
    bi = (0.3 * torch.randn(3 * H, dtype=torch.float64, generator=gen)).requires_grad_()
    bhn = (0.3 * torch.randn(H, dtype=torch.float64, generator=gen)).requires_grad_()

    def f(xs, h0, Wh, bi, bhn):
        hs, h = pm.gru_sequence(xs, keeps, h0, Wh, bi, bhn)
        return {"both": (hs, h), "states": (hs,), "last": (h,)}[outputs]

    assert torch.autograd.gradcheck(f, (xs, h0, Wh, bi, bhn), eps=1e-6, atol=1e-8, rtol=1e-6)


def test_gru_sequence_resets_cut_the_state_and_its_gradient():
    gen = torch.Generator().manual_seed(5)
    T, B, H = 4, 2, 3
    xs = torch.randn(T, B, 3 * H, dtype=torch.float64, generator=gen)
    keeps = torch.ones(T, B, dtype=torch.bool)
    keeps[2, 0] = False
    Wh, bi, bhn = (torch.randn(*s, dtype=torch.float64, generator=gen) for s in ((H, 3 * H), (3 * H,), (H,)))
    h0 = torch.randn(B, H, dtype=torch.float64, generator=gen).requires_grad_()
    hs, _ = pm.gru_sequence(xs, keeps, h0, Wh, bi, bhn)
    hs[2:, 0].sum().backward()
    assert torch.equal(h0.grad[0], torch.zeros(H, dtype=torch.float64))  # env 0 restarted at step 2
    other = pm.gru_sequence(xs, keeps, h0.detach() + 1.0, Wh, bi, bhn)[0]
    assert torch.equal(other[2:, 0], hs[2:, 0].detach())
    assert not torch.equal(other[2:, 1], hs[2:, 1].detach())


def test_bad_parameters_and_devices_are_refused():
    p = npp.init_params(SMALL, seed=0)
    with pytest.raises(ValueError, match="parameter 'params/Dense_0/kernel' is missing"):
        pm.PaperActorCritic({k: v for k, v in p.items() if "Dense_0" not in k}, "cpu")
    bad = dict(p)
    bad["params/Dense_4/kernel"] = np.zeros((3, 3), np.float32)
    with pytest.raises(ValueError, match="Dense_4/kernel: shape"):
        pm.PaperActorCritic(bad, "cpu")
    with pytest.raises(ValueError, match="fused_cell needs a CUDA device"):
        pm.PaperActorCritic(p, "cpu", fused_cell=True)
