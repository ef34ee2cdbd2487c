"""The CUDA trainer (cuda/ppo_cuda.cu) against its spec, numpy_ppo.py, on the GPU.

  (a) loss, loss statistics and every gradient tensor vs numpy_ppo.ppo_loss in float64 on the
      same batch and weights (fp32, TF32 off), sparse and dense encoder: per-tensor max abs /
      relative differences;
  (b) gradients vs central finite differences of the CUDA loss (accumulated in double), one
      random direction per tensor;
  (c) the update's forward over the stored rollout (all envs, and a permuted minibatch)
      reproduces the stored log-probs/values bitwise, so the first epoch's ratio is exactly 1;
  (d) GAE, global-norm clipping and Adam vs numpy_ppo;
  (e) a graph-replayed iteration equals an eager one, bitwise;
  (f) a short training run improves the return;
  (g) bad configurations and out-of-memory raise clear Python exceptions;
  (h) checkpoint + resume continues bit-exactly;
  (i) the pipelined forward kernels (mm_kernel: cp.async GEMMs and the fused GRU step) give
      bitwise the loss of the baseline kernels (PYCRAFTAX_PPO_LEGACY=1), fp32 and TF32, and
      with TF32 off bitwise every gradient.

Every comparison prints its numbers (run with -s), so one run on the GPU tells all. Skips
the module, saying why, without a GPU / CUDA build / cuBLAS.

    /work/venv/bin/python -m pytest conformance/test_cuda_trainer.py -s -v
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from pycraftax.train import cuda_trainer as ct
from pycraftax.train import numpy_ppo as npp
from pycraftax.train.trainer import TrainConfig

if not ct.available():
    pytest.skip(f"needs a GPU, the CUDA build and cuBLAS: {ct.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.cuda
D, A = 8268, 43


def small_config(**kw) -> TrainConfig:
    base = dict(total_timesteps=10**7, num_envs=16, num_steps=8, update_epochs=2, num_minibatches=2, width=64,
                hidden=48)
    base.update(kw)
    return TrainConfig(**base)


def perturbed_params(mcfg, seed=1, scale=0.05):
    """init_params plus noise on every tensor, so that biases and the small-gain heads matter."""
    rng = np.random.default_rng(seed + 100)
    p = npp.init_params(mcfg, seed=seed, dtype=np.float32)
    return {k: (v + scale * rng.standard_normal(v.shape) / np.sqrt(max(v.shape[0], 1))).astype(np.float32)
            for k, v in p.items()}


def make_batch(mcfg, params, T, N, seed=2):
    """A rollout-like batch: sparse 0/1 map features + 51 dense scalars, done flags, and old
    log-probs near the current policy's (so that both clipped and unclipped ratios occur)."""
    rng = np.random.default_rng(seed)
    obs = np.zeros((T, N, D), np.float32)
    for t in range(T):
        for n in range(N):
            obs[t, n, rng.choice(D - 51, 200, replace=False)] = 1.0
    obs[:, :, D - 51:] = rng.random((T, N, 51), dtype=np.float32)
    dones = rng.random((T, N)) < 0.15
    h0 = (0.5 * rng.standard_normal((N, mcfg.hidden))).astype(np.float32)
    _, logits, values, _ = npp.forward(params, obs, dones, h0)
    actions = rng.integers(0, A, (T, N)).astype(np.int32)
    logp = np.take_along_axis(npp.log_softmax(logits), actions[..., None], -1)[..., 0]
    return dict(obs=obs, dones=dones, h0=h0, actions=actions,
                log_probs=(logp + 0.3 * rng.standard_normal((T, N))).astype(np.float32),
                values=(values + 0.3 * rng.standard_normal((T, N))).astype(np.float32),
                advantages=rng.standard_normal((T, N)).astype(np.float32),
                targets=(values + rng.standard_normal((T, N))).astype(np.float32))


def minibatch(batch, idx):
    return {k: (v[idx] if k == "h0" else v[:, idx]) for k, v in batch.items()}


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-30)), float(np.max(np.abs(a - b)))


# -- (a) --------------------------------------------------------------------------------------
@pytest.mark.parametrize("encoder", ["sparse", "dense"])
def test_loss_and_grads_match_numpy(encoder):
    cfg = small_config()
    ppo = ct.PPO(cfg, None, tf32=False, use_graph=False, debug=True, encoder=encoder)
    mcfg = ppo.model_config
    params = perturbed_params(mcfg)
    T, N = cfg.num_steps, cfg.num_envs
    batch = make_batch(mcfg, params, T, N)
    ppo.set_params(params)
    assert all(np.array_equal(ppo.get_params()[k], params[k]) for k in params), "set/get params round trip"
    ppo.set_batch(batch)
    idx = np.arange(N)[::-1][: N // cfg.num_minibatches].copy()  # a non-trivial env order
    stats = ppo.loss_grads(idx)
    grads = ppo.get_grads()
    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    mb = minibatch(batch, idx)
    total, aux, g64 = npp.ppo_loss(p64, mb, npp.LossConfig(cfg.clip_eps, cfg.vf_coef, cfg.ent_coef))
    print(f"\n(a) {encoder} encoder, loss: cuda {stats['total_loss']:.9g} numpy64 {total:.9g}")
    worst = []
    for k in ("value_loss", "actor_loss", "entropy", "approx_kl", "clip_frac"):
        print(f"    {k:<12} cuda {stats[k]:.9g} numpy64 {float(aux[k]):.9g}")
        assert abs(stats[k] - float(aux[k])) <= 1e-4 * max(1.0, abs(float(aux[k]))), k
    assert abs(stats["total_loss"] - total) <= 1e-4 * max(1.0, abs(total))
    gnorm = npp.global_norm(g64)
    print(f"    grad_norm    cuda {stats['grad_norm']:.9g} numpy64 {gnorm:.9g}")
    print(f"    {'tensor':<45} {'max|ref|':>10} {'max abs diff':>13} {'rel':>10}")
    for k in sorted(g64):
        r, a = rel_err(grads[k], g64[k])
        worst.append((r, k))
        print(f"    {k:<45} {np.max(np.abs(g64[k])):10.3e} {a:13.3e} {r:10.3e}")
    bad = [(r, k) for r, k in worst if r > 2e-3]
    assert not bad, f"gradients off (relative to each tensor's max): {bad}"
    assert ppo.nnz_overflow == 0
    ppo.close()


# -- (b) --------------------------------------------------------------------------------------
def test_grads_match_finite_differences():
    cfg = small_config(num_envs=8, num_steps=6, num_minibatches=1, width=32, hidden=24)
    ppo = ct.PPO(cfg, None, tf32=False, use_graph=False)
    mcfg = ppo.model_config
    params = perturbed_params(mcfg, seed=3)
    batch = make_batch(mcfg, params, cfg.num_steps, cfg.num_envs, seed=4)
    ppo.set_batch(batch)
    idx = np.arange(cfg.num_envs, dtype=np.int32)
    ppo.set_params(params)
    ppo.loss_grads(idx)
    grads = ppo.get_grads()
    rng = np.random.default_rng(5)
    print("\n(b) central differences of the CUDA loss along one direction per tensor")
    failures = []
    for k in sorted(params):
        g = grads[k].astype(np.float64)
        rnd = rng.standard_normal(g.shape)
        gn = np.linalg.norm(g)
        v = rnd / np.linalg.norm(rnd)
        if gn > 0:
            v = 0.7 * g / gn + 0.3 * v
        v /= np.linalg.norm(v)
        analytic = float(np.sum(g * v))
        best = None
        for h in (3e-2, 1e-2, 3e-3, 1e-3):
            losses = []
            for sgn in (1, -1):
                q = dict(params)
                q[k] = (params[k].astype(np.float64) + sgn * h * v).astype(np.float32)
                ppo.set_params(q)
                losses.append(ppo.loss_grads(idx)["total_loss"])
            # the step actually taken after rounding the perturbed weights to float32
            fd = (losses[0] - losses[1]) / (2 * h)
            err = abs(fd - analytic) / max(abs(analytic), 1e-6)
            if best is None or err < best[0]:
                best = (err, h, fd)
        print(f"    {k:<45} analytic {analytic: .6e} fd {best[2]: .6e} (h {best[1]:.0e}) rel {best[0]:.2e}")
        if best[0] > 5e-2 and abs(best[2] - analytic) > 1e-5:
            failures.append((k, best))
    ppo.set_params(params)
    assert not failures, failures


# -- (c) --------------------------------------------------------------------------------------
def _env_ppo(cfg, seed=0, **kw):
    import pycraftax

    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=cfg.num_envs, backend="cuda", seed=seed)
    env.reset()
    ppo = ct.PPO(cfg, env, **kw)
    ppo.begin(env._key)
    ppo.set_params(npp.init_params(ppo.model_config, seed=cfg.seed, dtype=np.float32))
    return env, ppo


@pytest.mark.parametrize("encoder", ["sparse", "dense"])
@pytest.mark.parametrize("tf32", [False, True])
def test_replay_reproduces_rollout(tf32, encoder):
    # 512 envs: the rollout's and the replay's GRU steps (512 rows) take mm_kernel's tall tiles,
    # the 128-env minibatch its small ones; the outputs must not depend on the tile
    cfg = small_config(num_envs=512, num_steps=16, num_minibatches=4, width=64, hidden=64)
    env, ppo = _env_ppo(cfg, tf32=tf32, use_graph=False, encoder=encoder)
    ppo.rollout()
    assert ppo.nnz_overflow == 0
    stored_logp = ppo.read(ct.BUF_LOGP, np.float32, (cfg.num_steps, cfg.num_envs))
    stored_v = ppo.read(ct.BUF_VALUES, np.float32, (cfg.num_steps + 1, cfg.num_envs))[:-1]
    B = cfg.num_envs // cfg.num_minibatches
    subset = np.random.default_rng(9).permutation(cfg.num_envs)[:B].astype(np.int32)
    ok = True
    for name, idx in (("all envs", None), (f"minibatch of {B} permuted envs", subset)):
        logp, values = ppo.replay(idx)
        ref_lp, ref_v = (stored_logp, stored_v) if idx is None else (stored_logp[:, idx], stored_v[:, idx])
        same_lp = int(np.sum(logp.view(np.uint32) == ref_lp.view(np.uint32)))
        same_v = int(np.sum(values.view(np.uint32) == ref_v.view(np.uint32)))
        print(f"\n(c) tf32={tf32} {encoder}, {name}: log-probs bitwise equal {same_lp}/{logp.size}, max diff "
              f"{np.max(np.abs(logp - ref_lp)):.3e}; values bitwise equal {same_v}/{values.size}, max diff "
              f"{np.max(np.abs(values - ref_v)):.3e}")
        assert np.allclose(logp, ref_lp, atol=1e-3 if tf32 else 1e-5)
        assert np.allclose(values, ref_v, atol=1e-3 if tf32 else 1e-5)
        ok = ok and same_lp == logp.size and same_v == values.size
    # the update's first minibatch sees ratio exactly 1 (every per-row (r - 1) - log r is 0)
    stats = ppo.loss_grads(subset)
    print(f"    first-minibatch approx_kl {stats['approx_kl']!r} clip_frac {stats['clip_frac']!r}")
    ppo.close()
    env.close()
    assert ok, "replay is close but not bitwise"
    assert stats["approx_kl"] == 0.0 and stats["clip_frac"] == 0.0


# -- (d) --------------------------------------------------------------------------------------
def test_gae_matches_numpy():
    cfg = small_config(num_envs=32, num_steps=16)
    ppo = ct.PPO(cfg, None, tf32=False, use_graph=False)
    rng = np.random.default_rng(6)
    T, N = cfg.num_steps, cfg.num_envs
    rewards = rng.standard_normal((T, N)).astype(np.float32)
    values = rng.standard_normal((T + 1, N)).astype(np.float32)
    dones = (rng.random((T + 1, N)) < 0.2).astype(np.uint8)
    ppo.write(ct.BUF_REWARDS, rewards)
    ppo.write(ct.BUF_VALUES, values)
    ppo.write(ct.BUF_DONES, dones)
    ppo.gae()
    adv = ppo.read(ct.BUF_ADVANTAGES, np.float32, (T, N))
    tgt = ppo.read(ct.BUF_TARGETS, np.float32, (T, N))
    ref_adv, ref_tgt = npp.gae(rewards, values[:T], dones[:T].astype(bool), values[T], dones[T].astype(bool),
                               cfg.gamma, cfg.gae_lambda)
    print(f"\n(d) GAE: max diff adv {np.max(np.abs(adv - ref_adv)):.3e} targets {np.max(np.abs(tgt - ref_tgt)):.3e}; "
          f"bitwise {np.array_equal(adv, ref_adv) and np.array_equal(tgt, ref_tgt)}")
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tgt, ref_tgt, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("grad_scale", [1e-3, 10.0])  # below / above max_grad_norm
def test_adam_matches_numpy(grad_scale):
    cfg = small_config(num_envs=16, anneal_lr=True)
    ppo = ct.PPO(cfg, None, tf32=False, use_graph=False)
    mcfg = ppo.model_config
    rng = np.random.default_rng(7)
    params = perturbed_params(mcfg, seed=8)
    state = npp.adam_init(params)
    ppo.set_params(params)
    count0 = 5
    state["count"] = count0
    for k in params:
        state["mu"][k] = (0.01 * rng.standard_normal(params[k].shape)).astype(np.float32)
        state["nu"][k] = (1e-4 * rng.random(params[k].shape)).astype(np.float32)
    ppo.set_tensors(ct.BUF_ADAM_MU, state["mu"])
    ppo.set_tensors(ct.BUF_ADAM_NU, state["nu"])
    ppo.write(ct.BUF_COUNTERS, np.array([0, count0, 0, 0], np.int64))
    grads = {k: (grad_scale * rng.standard_normal(v.shape) / np.sqrt(v.size)).astype(np.float32)
             for k, v in params.items()}
    ppo.set_tensors(ct.BUF_GRADS, grads)
    ppo.apply_grads()
    clipped, norm = npp.clip_by_global_norm(grads, cfg.max_grad_norm)
    lr = npp.linear_schedule(cfg.lr, count0, cfg.num_minibatches, cfg.update_epochs, cfg.num_updates)
    ref = {k: v.copy() for k, v in params.items()}
    npp.adam_update(ref, clipped, state, lr)
    got = ppo.get_params()
    got_mu = ppo.get_tensors(ct.BUF_ADAM_MU)
    print(f"\n(d) Adam, grad norm {float(norm):.4g} (clip {float(norm) >= cfg.max_grad_norm}), lr {lr:.6g}, "
          f"count -> {int(ppo.counters[1])}")
    worst = 0.0
    for k in sorted(params):
        step_ref = ref[k].astype(np.float64) - params[k]
        step_got = got[k].astype(np.float64) - params[k]
        r = float(np.max(np.abs(step_got - step_ref)) / (np.max(np.abs(step_ref)) + 1e-30))
        worst = max(worst, r)
        np.testing.assert_allclose(got_mu[k], state["mu"][k], rtol=1e-5, atol=1e-9)
    print(f"    worst relative difference of the parameter step: {worst:.3e}")
    assert int(ppo.counters[1]) == count0 + 1
    assert worst < 1e-3


# -- (e) --------------------------------------------------------------------------------------
def test_graph_iteration_equals_eager():
    cfg = small_config(num_envs=64, num_steps=16, num_minibatches=4, update_epochs=2, width=64, hidden=64)
    out = []
    for use_graph in (False, True):
        env, ppo = _env_ppo(cfg, tf32=True, use_graph=use_graph)
        for _ in range(3):
            ppo.iterate()
        out.append(dict(params=ppo.read(ct.BUF_PARAMS, np.float32), mu=ppo.read(ct.BUF_ADAM_MU, np.float32),
                        logp=ppo.read(ct.BUF_LOGP, np.float32), counters=ppo.counters,
                        hstate=ppo.read(ct.BUF_HSTATE, np.float32), env=env.get_state()["player_position"],
                        losses=ppo.read(ct.BUF_LOSSES, np.float64)))
        ppo.close()
        env.close()
    eager, graph = out
    for k in eager:
        same = np.array_equal(eager[k], graph[k])
        print(f"\n(e) {k}: bitwise equal {same}" + ("" if same else
              f", max diff {np.max(np.abs(eager[k].astype(np.float64) - graph[k].astype(np.float64))):.3e}"))
    assert all(np.array_equal(eager[k], graph[k]) for k in eager)


# -- (f) --------------------------------------------------------------------------------------
def test_short_run_improves_return(tmp_path):
    updates = int(os.environ.get("PYCRAFTAX_TRAIN_TEST_UPDATES", "60"))
    cfg = TrainConfig(total_timesteps=updates * 256 * 32, num_envs=256, num_steps=32, width=128, hidden=128,
                      lr=5e-4, seed=0, checkpoint_every=10**6)
    tr = ct.CudaTrainer(cfg, str(tmp_path))
    lines = tr.run(progress=False)
    rets = [m["episode_return"] for m in lines if m["episode_return"] is not None]
    k = max(3, len(rets) // 10)
    early, late = float(np.mean(rets[:k])), float(np.mean(rets[-k:]))
    sps = np.median([m["sps"] for m in lines[1:]])
    print(f"\n(f) {len(lines)} updates: mean episode return first {k} updates {early:.3f}, last {k} {late:.3f}; "
          f"entropy {lines[0]['entropy']:.3f} -> {lines[-1]['entropy']:.3f}; median {sps:,.0f} steps/s")
    assert np.isfinite(lines[-1]["total_loss"])
    assert late > early + 0.3, (early, late)
    tr.close()


# -- (g) --------------------------------------------------------------------------------------
def test_bad_config_raises():
    with pytest.raises(ValueError, match="num_minibatches"):
        ct.PPO(small_config(num_envs=10, num_minibatches=4), None)
    with pytest.raises(ValueError, match="obs_size"):
        ct.PPO(small_config(), None, obs_size=0)
    with pytest.raises(ValueError, match="encoder"):
        ct.PPO(small_config(), None, encoder=7)
    with pytest.raises(ValueError, match="float32"):
        ct.PPO(small_config(dtype="float64"), None)
    with pytest.raises(ValueError, match="encoder"):
        ct.PPO(small_config(), None, encoder="csr")
    with pytest.raises(ValueError, match="width"):
        ct.PPO(small_config(width=30), None, encoder="sparse")
    with pytest.raises(ValueError, match="max_nnz"):
        ct.PPO(small_config(), None, encoder="sparse", max_nnz=0)
    with pytest.raises(MemoryError, match="out of GPU memory"):
        ct.PPO(small_config(num_envs=2**20, num_steps=64, num_minibatches=8, total_timesteps=2**27), None)
    # a row with more nonzeros than the lists hold is counted, not silently dropped
    cfg = small_config()
    small = ct.PPO(cfg, None, encoder="sparse", max_nnz=100)
    small.set_batch(make_batch(small.model_config, npp.init_params(small.model_config, seed=0), cfg.num_steps,
                               cfg.num_envs))
    assert small.nnz_overflow > 0
    small.close()
    ppo = ct.PPO(small_config(), None)  # a failed create leaves nothing broken behind
    with pytest.raises(ValueError, match="shape"):
        ppo.loss_grads(np.arange(3))
    with pytest.raises(RuntimeError, match="no env"):
        ppo.iterate()
    ppo.close()


# -- (h) --------------------------------------------------------------------------------------
def test_resume_is_bit_exact(tmp_path):
    cfg = TrainConfig(total_timesteps=6 * 64 * 16, num_envs=64, num_steps=16, width=64, hidden=64,
                      checkpoint_every=3)
    a = ct.CudaTrainer(cfg, str(tmp_path / "a"))
    a.run(max_updates=3, progress=False)
    ckpt = str(tmp_path / "update3.npz")
    shutil.copy(tmp_path / "a" / "checkpoint.npz", ckpt)  # run() overwrites checkpoint.npz later
    a.run(progress=False)
    pa = a.params
    a.close()
    b = ct.CudaTrainer.resume(ckpt, out_dir=str(tmp_path / "b"))
    assert b.update == 3
    b.run(progress=False)
    pb = b.params
    b.close()
    diff = {k: float(np.max(np.abs(pa[k] - pb[k]))) for k in pa}
    print(f"\n(h) resume: max parameter difference {max(diff.values()):.3e}")
    assert all(np.array_equal(pa[k], pb[k]) for k in pa), diff


# -- (j) --------------------------------------------------------------------------------------
def _minibatch_grads(cfg, tf32, monkeypatch, env_var, value):
    """With `env_var` = value at create: (GRU forward blocks at once, loss statistics,
    gradients) of one minibatch of a fixed batch (make_batch) and perturbed weights."""
    monkeypatch.setenv(env_var, value)
    ppo = ct.PPO(cfg, None, tf32=tf32, use_graph=False)
    params = perturbed_params(ppo.model_config)
    ppo.set_params(params)
    batch = make_batch(ppo.model_config, params, cfg.num_steps, cfg.num_envs)
    assert batch["dones"][1:].any()  # resets inside the segment
    ppo.set_batch(batch)
    idx = np.arange(cfg.num_envs)[::-1][: cfg.num_envs // cfg.num_minibatches].copy()
    out = (ppo.gru_seq_blocks, ppo.loss_grads(idx), ppo.get_grads())
    ppo.close()
    return out


@pytest.mark.parametrize("tf32", [False, True])
def test_persistent_gru_forward_equals_per_step(tf32, monkeypatch):
    """The update's GRU forward in one persistent launch (gru_seq_kernel) gives the per-step
    launches' values bitwise: loss statistics and every gradient, with resets inside the
    segment and minibatches of 8 rows (part of a 32-row tile)."""
    cfg = small_config(num_envs=48, num_minibatches=6, hidden=64)
    blocks_off, s_step, g_step = _minibatch_grads(cfg, tf32, monkeypatch, "PYCRAFTAX_PPO_GRU_SEQ", "0")
    blocks_on, s_seq, g_seq = _minibatch_grads(cfg, tf32, monkeypatch, "PYCRAFTAX_PPO_GRU_SEQ", "1")
    print(f"\n(j) tf32={tf32}: the persistent GRU forward holds {blocks_on} blocks at once")
    assert blocks_off == 0 and blocks_on >= 64 // 16  # one row tile of this H's 4 unit groups
    assert all(s_step[k] == s_seq[k] for k in s_step), (s_step, s_seq)
    for k in sorted(g_step):
        assert np.array_equal(g_step[k], g_seq[k]), k


# -- (i) --------------------------------------------------------------------------------------
@pytest.mark.parametrize("tf32", [False, True])
def test_pipelined_kernels_equal_legacy(tf32, monkeypatch):
    cfg = small_config()  # hidden 48: the fused GRU step (H % 16 == 0); 3H = 144: partial tiles
    _, s_old, g_old = _minibatch_grads(cfg, tf32, monkeypatch, "PYCRAFTAX_PPO_LEGACY", "1")
    _, s_new, g_new = _minibatch_grads(cfg, tf32, monkeypatch, "PYCRAFTAX_PPO_LEGACY", "0")
    same_stats = {k: s_old[k] == s_new[k] for k in s_old if k not in ("grad_norm", "lr")}
    print(f"\n(i) tf32={tf32}: loss statistics bitwise equal {same_stats}")
    assert all(same_stats.values())
    for k in sorted(g_old):
        same = np.array_equal(g_old[k], g_new[k])
        r, _ = rel_err(g_new[k], g_old[k])
        if not same:
            print(f"    {k}: not bitwise, rel {r:.3e}")
        # with TF32 on, dW0 is a TF32 GEMM in the new trainer and the exact sparse walk in the old
        if tf32 and k == "params/Dense_0/kernel":
            assert r < 1e-2, (k, r)
        else:
            assert same, k
