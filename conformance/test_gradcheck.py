"""Gradient check of the NumPy reference PPO-RNN (pycraftax/train/numpy_ppo.py).

The analytic backward (BPTT through the GRU over the whole segment, from the stored
initial hidden state) is compared with central finite differences of the *actual* PPO loss
(`ppo_loss`: clipped value loss, clipped ratio, entropy, per-minibatch advantage
normalisation) in float64, for EVERY parameter tensor:

* small model (obs 20, width 8, hidden 8, 7 actions, 3 envs x 5 steps, resets inside the
  sequences, non-zero initial hidden state, old log-probs/values perturbed so that some
  ratios and some values are clipped): every entry of every tensor;
* larger model (obs 300, width 64, hidden 48, 43 actions, 4 envs x 16 steps): per tensor
  the 8 entries of largest |g| plus 8 random entries.

Tolerances (float64, central differences with step 1e-6):
    |g_fd - g| <= ATOL + RTOL * |g|,  RTOL = 1e-5, ATOL = 1e-9
and every tensor's analytic gradient must not be identically zero (a backward that drops a
segment fails). The max relative error per tensor is printed (pytest -s).

If jax + flax + optax are importable, the forward (logits, values) and the loss gradient
are also compared with a flax port of the baseline's ActorCriticRNN applied to the same
weights (exported via pycraftax.train.interop, so the names/layouts are checked), the flax
init's parameter tree must have exactly our names and shapes, and our Adam +
global-norm clipping must match optax.chain(clip_by_global_norm, adam(schedule, eps=1e-5)).

    /work/venv/bin/python -m pytest conformance/test_gradcheck.py -s
"""

from __future__ import annotations

import numpy as np
import pytest

from pycraftax.train import interop
from pycraftax.train import numpy_ppo as npp

RTOL, ATOL, FD_STEP = 1e-5, 1e-9, 1e-6


def make_problem(cfg: npp.ModelConfig, T: int, B: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    params = npp.init_params(cfg, seed=seed, dtype=np.float64)
    # move off the init (zero biases, tiny actor head) so every path carries gradient
    for k, v in params.items():
        params[k] = v + rng.normal(0, 0.3 if "Dense_3" in k else 0.1, v.shape)
    obs = (rng.random((T, B, cfg.obs_size)) < 0.3) * rng.random((T, B, cfg.obs_size))
    dones = np.zeros((T, B), bool)
    dones[0, 0] = True
    dones[2, 1 % B] = True
    dones[T - 2, 2 % B] = True
    h0 = rng.normal(0, 0.5, (B, cfg.hidden))
    _, logits, values, _ = npp.forward(params, obs, dones, h0)
    actions = rng.integers(0, cfg.num_actions, (T, B))
    logp = np.take_along_axis(npp.log_softmax(logits), actions[..., None], -1)[..., 0]
    batch = dict(
        h0=h0, obs=obs, dones=dones, actions=actions,
        values=values + rng.normal(0, 0.3, (T, B)),
        log_probs=logp + rng.normal(0, 0.3, (T, B)),
        advantages=rng.normal(0, 1, (T, B)),
        targets=values + rng.normal(0, 1, (T, B)),
    )
    return params, batch


def fd_entry(params, batch, key, idx, lcfg):
    p = params[key]
    old = p[idx]
    p[idx] = old + FD_STEP
    lp = npp.ppo_loss(params, batch, lcfg, with_grad=False)[0]
    p[idx] = old - FD_STEP
    lm = npp.ppo_loss(params, batch, lcfg, with_grad=False)[0]
    p[idx] = old
    return (lp - lm) / (2 * FD_STEP)


def check(params, batch, entries_for, label):
    lcfg = npp.LossConfig()
    loss, aux, grads = npp.ppo_loss(params, batch, lcfg)
    assert np.isfinite(loss)
    # the perturbations must exercise the clipped branches
    assert 0 < aux["clip_frac"] < 1, aux
    report = {}
    failures = []
    for key, g in grads.items():
        assert g.shape == params[key].shape and g.dtype == np.float64
        assert np.any(g != 0), f"{label}: gradient of {key} is identically zero"
        worst = 0.0
        for idx in entries_for(key, g):
            num = fd_entry(params, batch, key, idx, lcfg)
            ana = g[idx]
            err = abs(num - ana)
            worst = max(worst, err / max(abs(ana), abs(num), 1e-12))
            if err > ATOL + RTOL * abs(ana):
                failures.append(f"{key}{idx}: fd {num:.10g} analytic {ana:.10g}")
        report[key] = worst
    print(f"\n[{label}] max relative error per tensor (loss {loss:.6f}):")
    for key, worst in report.items():
        print(f"  {key:<45} {worst:.2e}")
    assert not failures, f"{label}: {len(failures)} entries off:\n" + "\n".join(failures[:20])


def test_gradcheck_small_all_entries():
    cfg = npp.ModelConfig(obs_size=20, num_actions=7, width=8, hidden=8)
    params, batch = make_problem(cfg, T=5, B=3, seed=1)
    check(params, batch, lambda key, g: list(np.ndindex(g.shape)), "small, all entries")


def test_gradcheck_larger_sampled_entries():
    cfg = npp.ModelConfig(obs_size=300, num_actions=43, width=64, hidden=48)
    params, batch = make_problem(cfg, T=16, B=4, seed=2)
    rng = np.random.default_rng(3)

    def entries(key, g):
        flat = np.argsort(-np.abs(g).ravel())[:8].tolist() + rng.integers(0, g.size, 8).tolist()
        return [np.unravel_index(i, g.shape) for i in flat]

    check(params, batch, entries, "larger, top-|g| + random")


def test_backward_is_bptt_not_truncated():
    """Gradient of an early-step input kernel must depend on late-step losses (no reset
    inside the sequence): zeroing late losses must change it."""
    cfg = npp.ModelConfig(obs_size=10, num_actions=5, width=6, hidden=6)
    params = npp.init_params(cfg, seed=0, dtype=np.float64)
    rng = np.random.default_rng(0)
    obs = rng.random((6, 2, 10))
    dones = np.zeros((6, 2), bool)
    _, logits, values, cache = npp.forward(params, obs, dones, np.zeros((2, 6)), keep_cache=True)
    dv = np.zeros_like(values)
    dv[-1] = 1.0
    g = npp.backward(params, cache, np.zeros_like(logits), dv)
    hr = g["params/ScannedRNN_0/GRUCell_0/hr/kernel"]
    assert np.any(hr != 0)  # the last value reaches the recurrent kernel only through h_{T-1}
    # with a reset at the last step, the recurrent weights get no gradient from it
    dones[-1] = True
    _, logits, values, cache = npp.forward(params, obs, dones, np.zeros((2, 6)), keep_cache=True)
    g = npp.backward(params, cache, np.zeros_like(logits), dv)
    assert np.all(g["params/ScannedRNN_0/GRUCell_0/hr/kernel"] == 0)


def test_gae_matches_loop_definition():
    rng = np.random.default_rng(0)
    T, B = 7, 3
    r, v = rng.normal(size=(T, B)), rng.normal(size=(T, B))
    d = rng.random((T, B)) < 0.3
    lv, ld = rng.normal(size=B), rng.random(B) < 0.5
    adv, tgt = npp.gae(r, v, d, lv, ld, 0.99, 0.8)
    # textbook: done_after[t] = d[t+1] (reset flag of the next input), done_after[T-1] = ld
    done_after = np.concatenate([d[1:], ld[None]], 0).astype(float)
    next_v = np.concatenate([v[1:], lv[None]], 0)
    delta = r + 0.99 * next_v * (1 - done_after) - v
    ref = np.zeros_like(r)
    acc = np.zeros(B)
    for t in range(T - 1, -1, -1):
        acc = delta[t] + 0.99 * 0.8 * (1 - done_after[t]) * acc
        ref[t] = acc
    np.testing.assert_allclose(adv, ref, rtol=1e-12)
    np.testing.assert_allclose(tgt, ref + v, rtol=1e-12)


# -- cross-checks against flax / optax (optional) -------------------------------------------
def _flax_model(cfg: npp.ModelConfig):
    import functools

    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    from flax.linen.initializers import constant, orthogonal

    class ScannedRNN(nn.Module):
        @functools.partial(nn.scan, variable_broadcast="params", in_axes=0, out_axes=0,
                           split_rngs={"params": False})
        @nn.compact
        def __call__(self, carry, x):
            rnn_state = carry
            ins, resets = x
            rnn_state = jnp.where(resets[:, np.newaxis], jnp.zeros_like(rnn_state), rnn_state)
            new_rnn_state, y = nn.GRUCell(features=rnn_state.shape[1])(rnn_state, ins)
            return new_rnn_state, y

    class ActorCriticRNN(nn.Module):
        action_dim: int
        layer: int

        @nn.compact
        def __call__(self, hidden, x):
            obs, dones = x
            emb = nn.relu(nn.Dense(self.layer, kernel_init=orthogonal(np.sqrt(2)), bias_init=constant(0.0))(obs))
            hidden, emb = ScannedRNN()(hidden, (emb, dones))
            a = nn.relu(nn.Dense(self.layer, kernel_init=orthogonal(2), bias_init=constant(0.0))(emb))
            a = nn.relu(nn.Dense(self.layer, kernel_init=orthogonal(2), bias_init=constant(0.0))(a))
            a = nn.Dense(self.action_dim, kernel_init=orthogonal(0.01), bias_init=constant(0.0))(a)
            c = nn.relu(nn.Dense(self.layer, kernel_init=orthogonal(2), bias_init=constant(0.0))(emb))
            c = nn.relu(nn.Dense(self.layer, kernel_init=orthogonal(2), bias_init=constant(0.0))(c))
            c = nn.Dense(1, kernel_init=orthogonal(1.0), bias_init=constant(0.0))(c)
            return hidden, a, jnp.squeeze(c, axis=-1)

    return ActorCriticRNN(cfg.num_actions, cfg.width), jax, jnp


def _baseline_loss(jnp, jax, network, params, batch, clip_eps=0.2, vf=0.5, ent=0.01):
    """The baseline's _loss_fn with distrax.Categorical written out."""
    _, logits, value = network.apply(params, batch["h0"], (batch["obs"], batch["dones"]))
    logp_all = jax.nn.log_softmax(logits)
    log_prob = jnp.take_along_axis(logp_all, batch["actions"][..., None], -1)[..., 0]
    value_pred_clipped = batch["values"] + (value - batch["values"]).clip(-clip_eps, clip_eps)
    value_losses = jnp.square(value - batch["targets"])
    value_losses_clipped = jnp.square(value_pred_clipped - batch["targets"])
    value_loss = 0.5 * jnp.maximum(value_losses, value_losses_clipped).mean()
    ratio = jnp.exp(log_prob - batch["log_probs"])
    gae = batch["advantages"]
    gae = (gae - gae.mean()) / (gae.std() + 1e-8)
    loss_actor = -jnp.minimum(ratio * gae, jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * gae).mean()
    entropy = (-(jnp.exp(logp_all) * logp_all).sum(-1)).mean()
    return loss_actor + vf * value_loss - ent * entropy


def test_flax_forward_grad_and_param_tree():
    pytest.importorskip("flax")
    cfg = npp.ModelConfig(obs_size=50, num_actions=43, width=32, hidden=32)
    network, jax, jnp = _flax_model(cfg)
    T, B = 6, 3
    params64, batch = make_problem(cfg, T=T, B=B, seed=5)
    # 1. flax init tree == our names and shapes
    init = network.init(jax.random.PRNGKey(0), jnp.zeros((B, cfg.hidden)),
                        (jnp.zeros((1, B, cfg.obs_size)), jnp.zeros((1, B), bool)))
    flat = interop.from_flax_tree(jax.tree_util.tree_map(np.asarray, init))
    assert {k: v.shape for k, v in flat.items()} == npp.param_shapes(cfg)
    # 2. forward with the same weights (float32)
    p32 = {k: v.astype(np.float32) for k, v in params64.items()}
    b32 = {k: (v.astype(np.float32) if v.dtype == np.float64 else v) for k, v in batch.items()}
    tree = jax.tree_util.tree_map(jnp.asarray, interop.to_flax_tree(p32))
    hT, logits, values = network.apply(tree, jnp.asarray(b32["h0"]), (jnp.asarray(b32["obs"]), jnp.asarray(b32["dones"])))
    nhT, nlogits, nvalues, _ = npp.forward(p32, b32["obs"], b32["dones"], b32["h0"])
    np.testing.assert_allclose(np.asarray(logits), nlogits, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(values), nvalues, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(hT), nhT, rtol=1e-4, atol=1e-5)
    # 3. loss and gradient vs jax.grad of the baseline loss (float32)
    jb = {k: jnp.asarray(v) for k, v in b32.items()}
    jloss, jgrad = jax.value_and_grad(lambda pr: _baseline_loss(jnp, jax, network, pr, jb))(tree)
    nloss, _, ngrad = npp.ppo_loss(p32, b32)
    np.testing.assert_allclose(float(jloss), nloss, rtol=1e-5)
    jflat = interop.from_flax_tree(jax.tree_util.tree_map(np.asarray, jgrad))
    for k in ngrad:
        scale = np.abs(jflat[k]).max()
        np.testing.assert_allclose(ngrad[k], jflat[k], rtol=0, atol=2e-4 * scale + 1e-7, err_msg=k)


def test_optax_adam_and_clip():
    optax = pytest.importorskip("optax")
    import jax
    import jax.numpy as jnp

    cfg = npp.ModelConfig(obs_size=30, num_actions=43, width=16, hidden=12)
    params = npp.init_params(cfg, seed=0, dtype=np.float32)
    nmb, epochs, nupd, lr = 2, 2, 3, 2e-4
    sched = lambda count: lr * (1.0 - (count // (nmb * epochs)) / nupd)  # noqa: E731
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(learning_rate=sched, eps=1e-5))
    jparams = jax.tree_util.tree_map(jnp.asarray, interop.to_flax_tree(params))
    opt_state = tx.init(jparams)
    state = npp.adam_init(params)
    rng = np.random.default_rng(0)
    for step in range(nmb * epochs * nupd):
        scale = 0.01 if step % 2 else 5.0  # both sides of the clip
        grads = {k: (rng.normal(size=v.shape) * scale).astype(np.float32) for k, v in params.items()}
        jg = jax.tree_util.tree_map(jnp.asarray, interop.to_flax_tree(grads))
        updates, opt_state = tx.update(jg, opt_state, jparams)
        jparams = optax.apply_updates(jparams, updates)
        clipped, _ = npp.clip_by_global_norm(grads, 1.0)
        npp.adam_update(params, clipped, state, npp.linear_schedule(lr, step, nmb, epochs, nupd))
    jflat = interop.from_flax_tree(jax.tree_util.tree_map(np.asarray, jparams))
    for k in params:
        np.testing.assert_allclose(params[k], jflat[k], rtol=1e-5, atol=1e-7, err_msg=k)
