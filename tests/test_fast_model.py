"""The fast recipe's network (pycraftax/train/fast_model.py) and trainer on the CPU: the NumPy
reference's analytic gradients against float64 finite differences, the PyTorch model against
the reference on the same weights and batch, and a short run of the trainer with resume.
The GPU kernels' checks against the same reference are in conformance/test_fast_cuda.py."""

from __future__ import annotations

import numpy as np
import pytest

from pycraftax.train import fast_model as fm
from pycraftax.train import numpy_ppo

torch = pytest.importorskip("torch")

SMALL = fm.FastModelConfig(cell_dim=8, width=16, hidden=8, num_actions=43)
SMALL_MINGRU = fm.FastModelConfig(cell_dim=8, width=16, hidden=8, num_actions=43, recurrence="mingru")
BOTH = pytest.mark.parametrize("cfg", [SMALL, SMALL_MINGRU], ids=["gru", "mingru"])


def random_obs(rng, rows: int) -> np.ndarray:
    """Obs shaped like the symbolic obs: every cell one block and one item of a visible cell,
    a few mob bits, some invisible (all-zero) cells; scalars in [0, 1)."""
    obs = np.zeros((rows, fm.MAP_FLOATS + fm.SCALARS))
    cells = obs[:, :fm.MAP_FLOATS].reshape(rows, fm.CELLS, fm.CHANNELS)
    visible = rng.random((rows, fm.CELLS)) < 0.8
    r, c = np.nonzero(visible)
    cells[r, c, rng.integers(0, 37, r.size)] = 1
    cells[r, c, 37 + rng.integers(0, 5, r.size)] = 1
    cells[r, c, 82] = 1
    mob = rng.random(r.size) < 0.2
    cells[r[mob], c[mob], 42 + rng.integers(0, 40, mob.sum())] = 1
    obs[:, fm.MAP_FLOATS:] = rng.random((rows, fm.SCALARS))
    return obs


def random_batch(rng, T: int, B: int, cfg: fm.FastModelConfig, dtype=np.float64) -> dict:
    return dict(obs=random_obs(rng, T * B).reshape(T, B, -1).astype(dtype), dones=rng.random((T, B)) < 0.2,
                h0=rng.standard_normal((B, cfg.hidden)).astype(dtype), actions=rng.integers(0, 43, (T, B)),
                values=rng.standard_normal((T, B)).astype(dtype),
                log_probs=(-3.7 + 0.3 * rng.standard_normal((T, B))).astype(dtype),
                advantages=rng.standard_normal((T, B)).astype(dtype),
                targets=rng.standard_normal((T, B)).astype(dtype))


def params64(seed: int = 0, cfg=SMALL) -> dict:
    p = fm.init_params(cfg, seed=seed, dtype=np.float64)
    rng = np.random.default_rng(seed + 100)
    for k in p:  # nonzero biases, so every bias gradient path is exercised
        if k.endswith("bias"):
            p[k] = 0.1 * rng.standard_normal(p[k].shape)
    return {k: np.ascontiguousarray(v) for k, v in p.items()}  # perturbed in place through reshape(-1)


def test_feature_width_and_shapes():
    cfg = fm.FastModelConfig()
    assert cfg.feature_width == 1640 and cfg.feature_width % 8 == 0
    shapes = fm.param_shapes(cfg)
    assert shapes[f"{fm.CELL}/kernel"] == (83, 16)
    assert shapes[f"{numpy_ppo.EMBED}/kernel"] == (1640, 256)
    with pytest.raises(ValueError, match="cell_dim must be one of"):
        fm.FastModelConfig(cell_dim=12).validate()
    with pytest.raises(ValueError, match="recurrence must be one of"):
        fm.FastModelConfig(recurrence="lstm").validate()


def test_mingru_shapes_and_config_round_trip():
    """The MinGRU model has no GRU weights, gates W -> H, heads reading [h, embedding]; its
    config is recovered from its weights' names and shapes (checkpoints and shipped policies)."""
    cfg = fm.FastModelConfig(width=64, hidden=32, recurrence="mingru")
    shapes = fm.param_shapes(cfg)
    assert not any(k.startswith(numpy_ppo.GRU) for k in shapes)
    assert shapes[f"{fm.MINGRU}/z/kernel"] == (64, 32) and shapes[f"{fm.MINGRU}/h/bias"] == (32,)
    assert shapes[f"{numpy_ppo.ACTOR[0]}/kernel"] == (96, 64) == shapes[f"{numpy_ppo.CRITIC[0]}/kernel"]
    p = fm.init_params(cfg, seed=1)
    assert fm.config_of(p) == cfg and fm.config_of(fm.init_params(fm.FastModelConfig(), 0)).recurrence == "gru"
    assert np.array_equal(p[f"{fm.MINGRU}/z/kernel"], fm.init_params(cfg, seed=1)[f"{fm.MINGRU}/z/kernel"])


def test_encode_is_the_per_cell_linear_map():
    rng = np.random.default_rng(1)
    p = params64()
    obs = random_obs(rng, 5)
    feats, pre = fm.encode(p, obs)
    w, b = p[f"{fm.CELL}/kernel"], p[f"{fm.CELL}/bias"]
    for r in range(5):
        for cell in (0, 17, 98):
            x = obs[r, cell * 83:(cell + 1) * 83]
            np.testing.assert_allclose(feats[r, cell * 8:(cell + 1) * 8], np.maximum(x @ w + b, 0), rtol=1e-12)
    np.testing.assert_array_equal(feats[:, 99 * 8:99 * 8 + 51], obs[:, fm.MAP_FLOATS:])
    assert not feats[:, 99 * 8 + 51:].any()


@BOTH
def test_reference_gradients_match_finite_differences(cfg):
    rng = np.random.default_rng(2)
    p = params64(seed=3, cfg=cfg)
    batch = random_batch(rng, T=3, B=4, cfg=cfg)
    _, _, grads = fm.ppo_loss(p, batch)
    eps = 1e-6
    checked = 0
    for name in p:
        flat = p[name].reshape(-1)
        g = grads[name].reshape(-1)
        # the largest gradient entries (where a kink of a ReLU or clip is least likely to sit
        # within eps) and a random one
        picks = set(np.argsort(-np.abs(g))[:3].tolist()) | {int(rng.integers(flat.size))}
        for i in picks:
            old = flat[i]
            flat[i] = old + eps
            up = fm.ppo_loss(p, batch, with_grad=False)[0]
            flat[i] = old - eps
            down = fm.ppo_loss(p, batch, with_grad=False)[0]
            flat[i] = old
            fd = (up - down) / (2 * eps)
            assert abs(fd - g[i]) <= 1e-6 + 1e-4 * abs(fd), (name, i, fd, g[i])
            checked += 1
    assert checked >= 4 * len(p) - len(p)  # every tensor checked, the cell encoder's included
    assert np.abs(grads[f"{fm.CELL}/kernel"]).sum() > 0 and np.abs(grads[f"{fm.CELL}/bias"]).sum() > 0


def torch_loss_and_grads(p: dict, batch: dict, dtype=torch.float64):
    model = fm.TorchActorCritic(p, "cpu", bf16=False, dtype=dtype)
    tb = {k: torch.as_tensor(v) for k, v in batch.items()}
    tb["dones"] = tb["dones"].bool()
    _, logits, values = model.forward(tb["obs"].to(dtype), tb["dones"], tb["h0"].to(dtype))
    total, stats = fm.ppo_loss_torch(logits, values, {k: (v.to(dtype) if v.is_floating_point() else v)
                                                      for k, v in tb.items()}, numpy_ppo.LossConfig())
    total.backward()
    return float(total.detach()), {k: float(v) for k, v in stats.items()}, \
        {k: model.weights[k].grad.numpy() for k in model.names}


@BOTH
def test_torch_model_equals_reference_in_float64(cfg):
    rng = np.random.default_rng(4)
    p = params64(seed=5, cfg=cfg)
    batch = random_batch(rng, T=4, B=3, cfg=cfg)
    total, aux, grads = fm.ppo_loss(p, batch)
    t_total, t_aux, t_grads = torch_loss_and_grads(p, batch)
    assert t_total == pytest.approx(float(total), rel=1e-12, abs=1e-14)
    for k in ("value_loss", "actor_loss", "entropy", "approx_kl"):
        assert t_aux[k] == pytest.approx(float(aux[k]), rel=1e-10, abs=1e-14), k
    for k in p:
        np.testing.assert_allclose(t_grads[k], grads[k], rtol=1e-9, atol=1e-12, err_msg=k)


def test_approx_kl_stays_finite_when_a_ratio_underflows():
    """An action the updated policy has all but ruled out (log ratio -1000: exp underflows to 0
    in float64 and float32) adds its log ratio to the KL estimate, in the NumPy and the PyTorch
    loss alike, instead of making it infinite."""
    rng = np.random.default_rng(6)
    p = params64(seed=7)
    batch = random_batch(rng, T=4, B=3, cfg=SMALL)
    batch["log_probs"][1, 2] = 1000.0
    total, aux, _ = fm.ppo_loss(p, batch)
    t_total, t_aux, _ = torch_loss_and_grads(p, batch)
    assert np.isfinite(float(aux["approx_kl"])) and float(aux["approx_kl"]) > 1000 / batch["log_probs"].size
    assert t_aux["approx_kl"] == pytest.approx(float(aux["approx_kl"]), rel=1e-10)
    assert np.isfinite(total) and t_total == pytest.approx(float(total), rel=1e-12)


@BOTH
def test_torch_forward_equals_reference_forward(cfg):
    rng = np.random.default_rng(6)
    p = params64(seed=7, cfg=cfg)
    batch = random_batch(rng, T=5, B=2, cfg=cfg)
    h, logits, values = fm.forward(p, batch["obs"], batch["dones"], batch["h0"])
    model = fm.TorchActorCritic(p, "cpu", bf16=False, dtype=torch.float64)
    with torch.no_grad():
        th, tl, tv = model.forward(torch.as_tensor(batch["obs"]), torch.as_tensor(batch["dones"]),
                                   torch.as_tensor(batch["h0"]))
    np.testing.assert_allclose(tl.numpy(), logits, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tv.numpy(), values, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(th.numpy(), h, rtol=1e-12, atol=1e-12)


def test_compact_records_need_the_gpu_kernels():
    from pycraftax.train import cuda_ops

    with pytest.raises(ValueError, match="records must be a CUDA uint8 tensor"):
        cuda_ops.encode_cells(torch.zeros((2, 1008), dtype=torch.uint8), torch.zeros(83, 8), torch.zeros(8), 848)


@pytest.mark.parametrize("model", ["cell-gru", "cell-mingru"])
def test_fast_trainer_runs_checkpoints_and_resumes(tmp_path, model):
    from pycraftax.train.config import TrainConfig
    from pycraftax.train.policy import Policy
    from pycraftax.train.torch_trainer import TorchTrainer

    c = TrainConfig.from_recipe("fast", num_envs=8, num_steps=8, num_minibatches=2, update_epochs=1,
                                total_timesteps=8 * 8 * 4, width=32, hidden=32, cell_dim=8, checkpoint_every=2,
                                model=model)
    t = TorchTrainer(c, str(tmp_path), device="cpu")
    assert not t.graphs  # CUDA graphs only on the GPU
    lines = t.run(max_updates=2, progress=False)
    assert [m["update"] for m in lines] == [1, 2]
    assert all(np.isfinite(m["total_loss"]) and m["grad_norm"] > 0 for m in lines)
    # the running loss sums hold numbers, not the minibatches' autograd graphs
    assert not t.stats.requires_grad and t.stats.grad_fn is None
    before = t.params
    r = TorchTrainer.resume(str(tmp_path / "checkpoint.npz"), device="cpu")
    assert r.update == 2 and r.opt_steps == t.opt_steps == 4
    for k, v in before.items():
        np.testing.assert_array_equal(r.params[k], v)
    mu = {n: s["exp_avg"] for n, s in zip(t.model.names, (t.opt.state[p] for p in t.model.parameters()))}
    for n, p in zip(r.model.names, r.model.parameters()):
        np.testing.assert_array_equal(r.opt.state[p]["exp_avg"].numpy(), mu[n].numpy())
    r.run(progress=False)
    assert r.update == c.num_updates
    saved = np.load(tmp_path / "params.npz")
    assert f"{fm.CELL}/kernel" in saved.files
    policy = Policy(dict(saved))  # what eval and render load
    assert policy.model == model and fm.config_of(dict(saved)).width == 32


def test_deterministic_is_a_checked_config_field_and_a_flag():
    import argparse

    from pycraftax.train.cli import add_train_args, config_from_args
    from pycraftax.train.config import TrainConfig

    with pytest.raises(ValueError, match="deterministic must be a bool"):
        TrainConfig(deterministic=1)
    p = argparse.ArgumentParser()
    add_train_args(p)
    assert config_from_args(p.parse_args(["--recipe", "fast", "--deterministic"])).deterministic is True
    assert config_from_args(p.parse_args(["--recipe", "fast"])).deterministic is False
    assert TrainConfig.from_dict(TrainConfig(deterministic=True).to_dict()).deterministic is True


def test_fast_trainer_refuses_what_it_cannot_run():
    from pycraftax.train.config import TrainConfig
    from pycraftax.train.torch_trainer import TorchTrainer

    with pytest.raises(ValueError, match="model 'cell-gru' reads Craftax-Symbolic-v1"):
        TrainConfig.from_recipe("fast", env_id="Craftax-Classic-Symbolic-v1")
    with pytest.raises(ValueError, match=r"cell_dim must be one of \[8, 16, 24, 32\]"):
        TrainConfig.from_recipe("fast", cell_dim=12)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="PyTorch trainer on cuda: PyTorch sees no CUDA GPU"):
            TorchTrainer(TrainConfig.from_recipe("fast", num_envs=16, num_minibatches=2), device="cuda")


def test_fast_trainer_refuses_a_run_too_large_for_the_memory(monkeypatch, capsys):
    """The fast recipe as it is (16,384 envs) on a CPU would ask for ~35 GB of float obs: a run
    that does not fit is refused with the sizes to change, before any buffer is allocated."""
    from pycraftax import cli
    from pycraftax.train import torch_trainer
    from pycraftax.train.config import TrainConfig

    monkeypatch.setattr(torch_trainer, "available_host_memory", lambda: 1 << 20)
    c = TrainConfig.from_recipe("fast", num_envs=8, num_steps=8, num_minibatches=2, update_epochs=1,
                                total_timesteps=8 * 8 * 4, width=32, hidden=32, cell_dim=8)
    with pytest.raises(MemoryError, match=r"fast recipe \(PyTorch\) on the CPU: num_envs 8 x num_steps 8 need "
                                          r"about .* use at most about 2 envs \(--num-envs\)"):
        torch_trainer.TorchTrainer(c, device="cpu")
    assert cli.main(["train", "--recipe", "fast", "--backend", "c", "--num-envs", "32", "--num-minibatches", "2",
                     "--quiet", "--out", "unused"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pycraftax train: error: PPO-RNN, fast recipe (PyTorch) on the CPU: num_envs 32 x "
                          "num_steps 64 need about") and "Traceback" not in err


def test_train_command_runs_the_fast_recipe_on_the_cpu(tmp_path, capsys):
    from pycraftax import cli

    out = str(tmp_path / "run")
    flags = ["--recipe", "fast", "--num-envs", "8", "--num-steps", "8", "--num-minibatches", "2", "--width", "32",
             "--hidden", "32", "--cell-dim", "8", "--total-timesteps", "128", "--quiet", "--out", out]
    assert cli.main(["train", "--backend", "c", *flags]) == 0
    text = capsys.readouterr().out
    assert "model cell-gru (cell_dim 8)" in text and "PPO-RNN, fast recipe (PyTorch)" in text
    assert np.load(tmp_path / "run" / "params.npz")[f"{fm.CELL}/kernel"].shape == (83, 8)
    if not torch.cuda.is_available():
        assert cli.main(["train", "--backend", "cuda", *flags, "--force"]) == 2
        assert "--backend cuda: PyTorch sees no CUDA GPU" in capsys.readouterr().err


def test_the_numpy_trainer_refuses_the_cell_gru_model():
    from pycraftax.train.config import TrainConfig
    from pycraftax.train.trainer import Trainer

    with pytest.raises(ValueError, match="the NumPy trainer trains model 'gru'"):
        Trainer(TrainConfig.from_recipe("fast", num_envs=16, num_minibatches=2))
