"""The fast recipe on the GPU against its NumPy reference (pycraftax/train/fast_model.py):
the CUDA cell encoder (cuda/fast_cuda.cu) on real compact records against the float-obs path,
its gradients against autograd, the whole bf16 model's loss and gradients against the float64
reference on the same weights and batch (with the fused GRU and with the step loop), a short run
of the trainer, and the fused GRU over a sequence (cuda_ops.gru_sequence) against float64
autograd, the step loop and itself under CUDA graph capture; the MinGRU over a sequence
(cuda_ops.mingru_sequence) against float64 autograd; the deterministic mode's repeatability.
Skips without a GPU."""

from __future__ import annotations

import warnings

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


def _gpu_loss_and_grads(p: dict, records, batch: dict, fused_gru: bool):
    model = fm.TorchActorCritic(p, "cuda", bf16=True, fused_gru=fused_gru)
    tb = {k: torch.as_tensor(v, device="cuda") for k, v in batch.items() if k != "obs"}
    tb = {k: (v.float() if v.is_floating_point() else v) for k, v in tb.items()}
    _, logits, values = model.forward(records, tb["dones"].bool(), tb["h0"])
    total, stats = fm.ppo_loss_torch(logits, values, tb, numpy_ppo.LossConfig())
    total.backward()
    return float(total.detach()), {k: model.weights[k].grad.double().cpu().numpy() for k in model.names}


@pytest.mark.parametrize("recurrence,fused_gru", [("gru", True), ("gru", False), ("mingru", True), ("mingru", False)])
def test_bf16_model_loss_and_gradients_match_the_float64_reference(records_and_obs, recurrence, fused_gru):
    records, floats = records_and_obs
    T, B = 8, records.shape[0] // 8
    cfg = fm.FastModelConfig(recurrence=recurrence)
    p = fm.init_params(cfg, seed=3)
    rng = np.random.default_rng(4)
    batch = dict(obs=floats.reshape(T, B, -1).astype(np.float64), dones=rng.random((T, B)) < 0.1,
                 h0=0.5 * rng.standard_normal((B, cfg.hidden)), actions=rng.integers(0, 43, (T, B)),
                 values=rng.standard_normal((T, B)), log_probs=-3.7 + 0.3 * rng.standard_normal((T, B)),
                 advantages=rng.standard_normal((T, B)), targets=rng.standard_normal((T, B)))
    total, _, grads = fm.ppo_loss({k: v.astype(np.float64) for k, v in p.items()}, batch)
    g_total, g_grads = _gpu_loss_and_grads(p, records.reshape(T, B, -1), batch, fused_gru)
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
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lines = t.run(progress=False)
    # a parameter's AccumulateGrad node from the warm-up stream, alive into the capture, would
    # make autograd synchronise the two streams inside the minibatch graph
    assert not [w for w in caught if "AccumulateGrad" in str(w.message)]
    assert len(lines) == 12 and all(np.isfinite(m["total_loss"]) for m in lines)
    assert lines[-1]["return_window"] is not None and lines[-1]["return_window"] > lines[0]["return_window"] - 1
    r = TorchTrainer.resume(str(tmp_path / "checkpoint.npz"))
    assert r.update == 12 and r.device.type == "cuda"


def test_deterministic_runs_repeat_bit_for_bit():
    """Two runs of the same seed with --deterministic: the same weights and metrics, bit for bit
    (graphs, bf16 GEMMs, the cell encoder's backward and Adam included)."""
    from pycraftax.train.config import TrainConfig
    from pycraftax.train.torch_trainer import TorchTrainer

    c = TrainConfig.from_recipe("fast", num_envs=1024, num_minibatches=4, total_timesteps=1024 * 64 * 3,
                                deterministic=True)
    runs = []
    for _ in range(2):
        t = TorchTrainer(c, device="cuda")
        lines = t.run(progress=False)
        keys = ("update", "episodes", "episode_return", "episode_length", "total_loss", "value_loss", "actor_loss",
                "entropy", "approx_kl", "clip_frac", "grad_norm", "achievements")  # all but the timings
        runs.append((t.params, [{k: m.get(k) for k in keys} for m in lines]))
        t.env.close()
    assert runs[0][1] == runs[1][1]
    for k, v in runs[0][0].items():
        assert np.array_equal(v, runs[1][0][k]), k
    assert not torch.are_deterministic_algorithms_enabled()  # the trainer restores the flag


def test_fast_trainer_refuses_a_rollout_larger_than_the_gpu_memory():
    """A rollout whose obs cannot fit in the GPU's free memory is refused before its buffers are
    allocated, with the sizes to change (16,384 envs x 16,384 steps of compact records: ~270 GB)."""
    from pycraftax.train.config import TrainConfig
    from pycraftax.train.torch_trainer import TorchTrainer

    c = TrainConfig.from_recipe("fast", num_steps=16384, total_timesteps=16384 * 16384)
    free_before = torch.cuda.mem_get_info()[0]
    with pytest.raises(MemoryError, match=r"on the GPU: num_envs 16384 x num_steps 16384 need about .* GiB .* "
                                          r"use at most about \d+ envs \(--num-envs\)"):
        TorchTrainer(c, device="cuda")
    torch.cuda.empty_cache()
    assert torch.cuda.mem_get_info()[0] > free_before - 2**30


def test_rollout_graphs_equal_the_eager_rollout():
    """The rollout as CUDA graphs between async env steps fills every buffer bitwise as the
    eager loop does, in the capturing rollout and in a replayed one (same seed and weights)."""
    from pycraftax.train.config import TrainConfig
    from pycraftax.train.torch_trainer import TorchTrainer

    c = TrainConfig.from_recipe("fast", num_envs=512, num_minibatches=1,
                                total_timesteps=512 * 64 * 4)
    graphed, eager = TorchTrainer(c, device="cuda"), TorchTrainer(c, device="cuda", graphs=False)
    for _ in range(2):
        for t in (graphed, eager):
            t.rollout()
        assert len(graphed.rollout_graphs) == c.num_steps + 1
        for name in graphed.buf:
            assert torch.equal(graphed.buf[name], eager.buf[name]), name
        for name in graphed.ep:
            assert torch.equal(graphed.ep[name], eager.ep[name]), name
        assert torch.equal(graphed.hstate, eager.hstate)
    for t in (graphed, eager):
        t.env.close()


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


# -- the GRU over a sequence (cuda_ops.gru_sequence) -------------------------------------------
GRU_DEVICE = "cuda"
GRU_GRAD_NAMES = ("xs", "h0", "Wh", "bi", "bhn")


def _gru_reference(xs, keeps, h0, Wh, bi, bhn, operand_dtype=None):
    """fast_model's GRU over the sequence in plain torch ops, in h0's dtype: (hs, h_T). With
    operand_dtype, the recurrent GEMM's operands rounded to it first (gru_sequence's numerics)."""
    H = h0.shape[1]
    if operand_dtype is not None:
        Wh = Wh.to(operand_dtype).to(h0.dtype)
    h, hs = h0, []
    for t in range(xs.shape[0]):
        hp = h * keeps[t].to(h.dtype).unsqueeze(-1)
        gh = (hp if operand_dtype is None else hp.to(operand_dtype).to(h.dtype)) @ Wh
        x = xs[t] + bi
        r = torch.sigmoid(x[:, :H] + gh[:, :H])
        z = torch.sigmoid(x[:, H:2 * H] + gh[:, H:2 * H])
        n = torch.tanh(x[:, 2 * H:] + r * (gh[:, 2 * H:] + bhn))
        h = (1 - z) * n + z * hp
        hs.append(h)
    return torch.stack(hs), h


def _gru_problem(T: int, B: int, H: int, seed: int):
    """gru_sequence's arguments on GRU_DEVICE (keeps bool) and upstream gradients of (hs, h_last).
    Resets at random (15%), at t = 0 for the first half of the rows and at T // 2 for every third;
    Wh three orthogonal [H, H] blocks like the init's; biases large enough that a misplaced one
    shows."""
    g = torch.Generator().manual_seed(seed)
    keeps = torch.rand(T, B, generator=g) >= 0.15
    keeps[0, :B // 2] = False
    keeps[T // 2, ::3] = False
    Wh = torch.cat([torch.linalg.qr(torch.randn(H, H, generator=g, dtype=torch.float64))[0] for _ in range(3)], 1)
    args = dict(xs=torch.randn(T, B, 3 * H, generator=g), keeps=keeps, h0=0.8 * torch.randn(B, H, generator=g),
                Wh=Wh.float(), bi=0.5 * torch.randn(3 * H, generator=g), bhn=0.5 * torch.randn(H, generator=g))
    upstream = (torch.randn(T, B, H, generator=g), torch.randn(B, H, generator=g))
    return {k: v.to(GRU_DEVICE) for k, v in args.items()}, tuple(u.to(GRU_DEVICE) for u in upstream)


def _float64_cpu(args: dict) -> dict:
    return {k: v.detach().cpu().double() if v.is_floating_point() else v.cpu() for k, v in args.items()}


def _rel(a, b, dims=None):
    """||a - b|| / ||b|| for the reference b: a float, or per slice over `dims` (a tensor)."""
    a, b = a.detach().cpu().double(), b.detach().cpu().double()
    if dims is None:
        return float((a - b).norm() / b.norm())
    return (a - b).norm(dim=dims) / b.norm(dim=dims).clamp_min(1e-30)


# bf16 operands of the recurrent GEMM: rounding hp_t and Wh (each by <= 2^-9 relative, about
# 2^-9 / sqrt(3) on average) moves gh_t by about 2^-9 relative and h_t by less (the gates'
# slopes are <= 1 and gh is one of several terms); the error of a step decays through the
# following ones rather than growing, so the states stay within BF16_EPS of exact arithmetic at
# any T: a fraction of it at H = 256, most of it where a row has only H = 4 terms to average
# (2 * BF16_EPS for the worst row).
GRU_SHAPES = [(64, 1024, 256), (7, 6, 12), (1, 3, 4)]


@pytest.mark.parametrize("T,B,H", GRU_SHAPES)
def test_gru_sequence_forward_matches_float64_and_the_step_loop(T, B, H):
    from pycraftax.train import cuda_ops

    args, _ = _gru_problem(T, B, H, seed=T)
    hs, h_last = cuda_ops.gru_sequence(**args)
    assert hs.shape == (T, B, H) and hs.dtype == torch.float32 and torch.equal(h_last, hs[-1])
    exact, _ = _gru_reference(**_float64_cpu(args))
    assert _rel(hs, exact) < BF16_EPS, _rel(hs, exact)
    assert float(_rel(hs, exact, (0, 2)).max()) < 2 * BF16_EPS
    # the same operand rounding in float64: only fp32 arithmetic and accumulation order differ
    # (with a bf16 rounding of hp_t tipping the other way now and then)
    emulated, _ = _gru_reference(**_float64_cpu(args), operand_dtype=torch.bfloat16)
    assert _rel(hs, emulated) < 2e-4, _rel(hs, emulated)
    # the step loop rounds gh_t to bf16 as well (its GEMM's result): about 2^-9 more
    model = fm.TorchActorCritic(fm.init_params(fm.FastModelConfig(cell_dim=8, width=8, hidden=H)), GRU_DEVICE,
                                bf16=True, fused_gru=False)
    steps_hs, steps_h = model.gru_steps(args["xs"], ~args["keeps"], args["h0"], args["Wh"], args["bi"], args["bhn"])
    assert _rel(hs, steps_hs) < BF16_EPS, _rel(hs, steps_hs)


# The gradients pass the same rounded operands backward, and round dL/dgh_t to bf16 as an operand
# of dL/dhp_t's GEMM and of dWh's: a few roundings of 2^-9 / sqrt(3) on average in each product,
# whose errors add up like the products themselves. 2 * BF16_EPS for each tensor, and for each
# row of dL/dxs (a reset handled wrongly in a few rows would show there).
@pytest.mark.parametrize("T,B,H", [(64, 256, 256), (7, 6, 12), (1, 3, 4)])
def test_gru_sequence_gradients_match_float64_autograd(T, B, H):
    from pycraftax.train import cuda_ops

    args, upstream = _gru_problem(T, B, H, seed=10 + T)
    leaves = {k: args[k].clone().requires_grad_() for k in GRU_GRAD_NAMES}
    hs, h_last = cuda_ops.gru_sequence(**dict(args, **leaves))
    got = torch.autograd.grad((hs, h_last), [leaves[k] for k in GRU_GRAD_NAMES], upstream)
    ref_args = _float64_cpu(args)
    ref_leaves = {k: ref_args[k].requires_grad_() for k in GRU_GRAD_NAMES}
    ref = torch.autograd.grad(_gru_reference(**ref_args), [ref_leaves[k] for k in GRU_GRAD_NAMES],
                              [u.cpu().double() for u in upstream])
    rel = {k: _rel(g, r) for k, g, r in zip(GRU_GRAD_NAMES, got, ref)}
    assert all(g.dtype == leaves[k].dtype and g.shape == leaves[k].shape for k, g in zip(GRU_GRAD_NAMES, got))
    assert max(rel.values()) < 2 * BF16_EPS, rel
    assert float(_rel(got[0], ref[0], (0, 2)).max()) < 2 * BF16_EPS
    assert torch.all(got[1][~args["keeps"][0]] == 0)  # rows reset at t = 0: h0 is multiplied by 0


def test_gru_sequence_resets_cut_the_state_and_its_gradient():
    """Rows reset at t0 (every other row): their states from t0 on do not depend on anything
    before t0, bit for bit, and no gradient from t0 on reaches xs before t0 or h0; the other
    rows' do. A keep mask applied at the wrong step, or a carried gradient left unmasked, fails."""
    from pycraftax.train import cuda_ops

    T, B, H, t0 = 12, 64, 32, 6
    args, (dhs, _) = _gru_problem(T, B, H, seed=3)
    args["keeps"] = torch.ones(T, B, dtype=torch.bool, device=GRU_DEVICE)
    args["keeps"][t0, ::2] = False
    hs, _ = cuda_ops.gru_sequence(**args)
    before = dict(args, xs=args["xs"].clone(), h0=args["h0"] + 0.5)
    before["xs"][:t0] += 0.5
    hs_b, _ = cuda_ops.gru_sequence(**before)
    assert torch.equal(hs_b[t0:, ::2], hs[t0:, ::2])
    assert bool(((hs_b[t0:, 1::2] - hs[t0:, 1::2]).abs().amax((0, 2)) > 0).all())
    xs, h0 = args["xs"].clone().requires_grad_(), args["h0"].clone().requires_grad_()
    hs, h_last = cuda_ops.gru_sequence(**dict(args, xs=xs, h0=h0))
    dhs[:t0] = 0
    gx, gh0 = torch.autograd.grad(hs, (xs, h0), dhs)
    assert torch.all(gx[:t0, ::2] == 0) and torch.all(gh0[::2] == 0)
    assert bool((gx[:t0, 1::2].abs().amax(-1) > 0).all()) and bool((gh0[1::2].abs().amax(-1) > 0).all())


def test_gru_sequence_under_cuda_graph_capture():
    """Forward and backward captured once, replayed on new inputs copied into the captured
    buffers: the eager results on those inputs."""
    from pycraftax.train import cuda_ops

    T, B, H = 16, 256, 256
    args, upstream = _gru_problem(T, B, H, seed=4)
    static = {k: v.clone() for k, v in args.items()}
    for k in GRU_GRAD_NAMES:
        static[k].requires_grad_()
    static_up = tuple(u.clone() for u in upstream)

    def step():
        hs, h_last = cuda_ops.gru_sequence(**static)
        grads = torch.autograd.grad((hs, h_last), [static[k] for k in GRU_GRAD_NAMES], static_up)
        return (hs, h_last) + grads

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        # detached: outputs holding the captured autograd graph would keep its AccumulateGrad
        # nodes (of the capture stream) alive into the eager step below
        captured = tuple(x.detach() for x in step())
    graph.replay()
    first = [c.clone() for c in captured]
    new, new_up = _gru_problem(T, B, H, seed=5)
    with torch.no_grad():
        for k, v in new.items():
            static[k].copy_(v)
        for s, u in zip(static_up, new_up):
            s.copy_(u)
    graph.replay()
    eager = step()
    torch.cuda.synchronize()
    for name, c, e, f in zip(("hs", "h_last") + GRU_GRAD_NAMES, captured, eager, first):
        assert not torch.equal(c, f), name  # the replay computed afresh
        # the same kernels on the same inputs; cuBLAS may pick another GEMM algorithm eagerly
        assert _rel(c, e) < 1e-5, (name, _rel(c, e))


def test_gru_sequence_rejects_bad_arguments():
    from pycraftax.train import cuda_ops

    args, _ = _gru_problem(3, 4, 8, seed=0)
    bad = dict(xs=[args["xs"].double(), args["xs"].cpu(), args["xs"][..., :-1],
                   args["xs"].transpose(0, 1).contiguous().transpose(0, 1)],
               keeps=[args["keeps"].int(), args["keeps"][:, :3]],
               h0=[args["h0"][:, :4].contiguous(), args["h0"].cpu(), args["h0"].t().contiguous().t(), args["h0"].half()],
               Wh=[args["Wh"].t(), args["Wh"].half()],
               bi=[args["bi"][:8].contiguous(), args["bi"].reshape(3, 8)],
               bhn=[args["bhn"].double(), args["bhn"].tolist()])
    for name, values in bad.items():
        for v in values:
            with pytest.raises(ValueError, match=rf"^{name}\b"):
                cuda_ops.gru_sequence(**dict(args, **{name: v}))
    cuda_ops.gru_sequence(**dict(args, keeps=args["keeps"].float(), Wh=args["Wh"].bfloat16()))  # also accepted


# -- the MinGRU over a sequence (cuda_ops.mingru_sequence) -------------------------------------
def _mingru_reference(gates, keeps, h0):
    """fast_model.mingru_forward's recurrence in plain torch ops, in h0's dtype: (hs, h_T)."""
    H = h0.shape[1]
    gates = gates.to(h0.dtype)
    h, hs = h0, []
    for t in range(gates.shape[0]):
        z, c = torch.sigmoid(gates[t, :, :H]), torch.tanh(gates[t, :, H:])
        h = (1 - z) * (h * keeps[t].to(h.dtype).unsqueeze(-1)) + z * c
        hs.append(h)
    return torch.stack(hs), h


def _mingru_problem(T: int, B: int, H: int, seed: int, dtype):
    g = torch.Generator().manual_seed(seed)
    keeps = torch.rand(T, B, generator=g) >= 0.15
    keeps[0, :B // 2] = False
    args = dict(gates=(1.5 * torch.randn(T, B, 2 * H, generator=g)).to(dtype), keeps=keeps,
                h0=0.8 * torch.randn(B, H, generator=g))
    upstream = (torch.randn(T, B, H, generator=g), torch.randn(B, H, generator=g))
    return {k: v.to("cuda") for k, v in args.items()}, tuple(u.to("cuda") for u in upstream)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("T,B,H", [(64, 512, 256), (7, 6, 12), (1, 3, 1)])
def test_mingru_sequence_matches_float64_autograd(T, B, H, dtype):
    """Forward and gradients (of the gates, in their dtype, and of h0) against float64 autograd of
    the step loop on the same (rounded) gates: fp32 arithmetic only, so 1e-5 of the float32 result;
    the bf16 gradient of the gates is rounded once more (BF16_EPS)."""
    from pycraftax.train import cuda_ops

    args, upstream = _mingru_problem(T, B, H, seed=T + H, dtype=dtype)
    gates, h0 = args["gates"].clone().requires_grad_(), args["h0"].clone().requires_grad_()
    hs, h_last = cuda_ops.mingru_sequence(gates, args["keeps"], h0)
    assert hs.dtype == torch.float32 and hs.shape == (T, B, H) and torch.equal(h_last, hs[-1])
    g_gates, g_h0 = torch.autograd.grad((hs, h_last), (gates, h0), upstream)
    assert g_gates.dtype == dtype and g_h0.dtype == torch.float32
    ref = {k: v.detach().cpu().double() if v.is_floating_point() else v.cpu() for k, v in args.items()}
    r_gates, r_h0 = ref["gates"].requires_grad_(), ref["h0"].requires_grad_()
    r_hs, r_last = _mingru_reference(r_gates, ref["keeps"], r_h0)
    r_g_gates, r_g_h0 = torch.autograd.grad((r_hs, r_last), (r_gates, r_h0), [u.cpu().double() for u in upstream])
    assert _rel(hs, r_hs) < 1e-5, _rel(hs, r_hs)
    assert _rel(g_h0, r_g_h0) < 1e-5
    assert _rel(g_gates, r_g_gates) < (BF16_EPS if dtype == torch.bfloat16 else 1e-5), _rel(g_gates, r_g_gates)
    assert torch.all(g_h0[~args["keeps"][0]] == 0)  # rows reset at t = 0: no gradient reaches h0


def test_mingru_sequence_rejects_bad_arguments():
    from pycraftax.train import cuda_ops

    args, _ = _mingru_problem(3, 4, 8, seed=0, dtype=torch.float32)
    bad = dict(gates=[args["gates"].double(), args["gates"].cpu(), args["gates"][..., :-1], args["gates"][0]],
               keeps=[args["keeps"].int(), args["keeps"][:, :3]],
               h0=[args["h0"][:, :4], args["h0"].cpu(), args["h0"].half()])
    for name, values in bad.items():
        for v in values:
            with pytest.raises(ValueError, match=rf"^{name}\b"):
                cuda_ops.mingru_sequence(**dict(args, **{name: v}))


def test_deterministic_encoder_backward_repeats_bit_for_bit(records_and_obs):
    """With PyTorch's deterministic mode on, the cell encoder's backward gives the same bits on
    every call (no atomics), and agrees with the atomic version to float32 rounding."""
    from pycraftax.train import cuda_ops

    records, _ = records_and_obs
    gen = torch.Generator(device="cuda").manual_seed(7)
    w, b = 0.3 * torch.randn(83, 16, device="cuda", generator=gen), 0.1 * torch.randn(16, device="cuda", generator=gen)
    upstream = torch.randn(records.shape[0], 1640, device="cuda", generator=gen).bfloat16()
    fast = cuda_ops.encode_cells_backward(records, w, b, upstream, 1640)
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        runs = [cuda_ops.encode_cells_backward(records, w, b, upstream, 1640) for _ in range(3)]
    finally:
        torch.use_deterministic_algorithms(previous)
    for run in runs[1:]:
        assert all(torch.equal(a, c) for a, c in zip(run, runs[0]))
    for a, c in zip(runs[0], fast):
        assert _rel(a, c) < 1e-5
