"""NumPy reference of the Craftax PPO-RNN baseline (Craftax_Baselines `ppo_rnn.py`).

This module is the executable spec of the trainer: model, forward, analytic backward
(BPTT through the GRU over a rollout segment), the PPO loss exactly as the baseline
computes it, GAE, `optax.clip_by_global_norm` and `optax.adam` semantics. Every function
takes or infers a dtype: float32 for training, float64 for gradient checks.

Parameters live in a flat dict keyed by the flax parameter path of the baseline's
`ActorCriticRNN` (see `interop.py`):

    params/Dense_0                       obs -> width, ReLU          (orthogonal sqrt(2))
    params/ScannedRNN_0/GRUCell_0/{ir,iz,in}  width -> hidden, bias  (lecun_normal)
    params/ScannedRNN_0/GRUCell_0/{hr,hz}     hidden -> hidden, no bias (orthogonal 1.0)
    params/ScannedRNN_0/GRUCell_0/hn          hidden -> hidden, bias (orthogonal 1.0)
    params/Dense_1, Dense_2              actor hidden layers, ReLU   (orthogonal 2)
    params/Dense_3                       actor head, num_actions     (orthogonal 0.01)
    params/Dense_4, Dense_5              critic hidden layers, ReLU  (orthogonal 2)
    params/Dense_6                       critic head, 1              (orthogonal 1.0)

Kernels are [in, out] (flax layout); every bias starts at zero.

GRU (flax `nn.GRUCell`):  r = sig(x W_ir + b_ir + h W_hr);  z = sig(x W_iz + b_iz + h W_hz);
n = tanh(x W_in + b_in + r * (h W_hn + b_hn));  h' = (1 - z) n + z h.  The hidden state is
reset to zeros *before* the cell wherever the step's `done` flag (the previous step ended
an episode) is set, as the baseline's ScannedRNN does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GRU = "params/ScannedRNN_0/GRUCell_0"
ACTOR = ("params/Dense_1", "params/Dense_2", "params/Dense_3")
CRITIC = ("params/Dense_4", "params/Dense_5", "params/Dense_6")
EMBED = "params/Dense_0"


@dataclass(frozen=True)
class ModelConfig:
    obs_size: int = 8268
    num_actions: int = 43
    width: int = 512  # LAYER_SIZE: embedding and head widths
    hidden: int = 512  # GRU features (the baseline uses LAYER_SIZE)

    def validate(self) -> None:
        for name in ("obs_size", "num_actions", "width", "hidden"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"model {name} must be a positive integer, got {v!r}")


@dataclass(frozen=True)
class LossConfig:
    clip_eps: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.01


def param_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every parameter name -> shape, in the flax tree order (sorted like a flax dict flatten)."""
    D, E, H, A = cfg.obs_size, cfg.width, cfg.hidden, cfg.num_actions
    s = {f"{EMBED}/bias": (E,), f"{EMBED}/kernel": (D, E)}
    for g in ("ir", "iz", "in"):
        s[f"{GRU}/{g}/bias"] = (H,)
        s[f"{GRU}/{g}/kernel"] = (E, H)
    for g in ("hr", "hz"):
        s[f"{GRU}/{g}/kernel"] = (H, H)
    s[f"{GRU}/hn/bias"] = (H,)
    s[f"{GRU}/hn/kernel"] = (H, H)
    for names, out in ((ACTOR, A), (CRITIC, 1)):
        s[f"{names[0]}/bias"] = (E,)
        s[f"{names[0]}/kernel"] = (H, E)
        s[f"{names[1]}/bias"] = (E,)
        s[f"{names[1]}/kernel"] = (E, E)
        s[f"{names[2]}/bias"] = (out,)
        s[f"{names[2]}/kernel"] = (E, out)
    return dict(sorted(s.items()))


# -- initialisation (flax initializers, drawn from a numpy Generator) ---------------------
def orthogonal(rng: np.random.Generator, shape: tuple[int, int], scale: float, dtype) -> np.ndarray:
    """flax `initializers.orthogonal(scale)` for a 2-D kernel [in, out]."""
    n_rows, n_cols = shape
    mshape = (n_cols, n_rows) if n_rows < n_cols else (n_rows, n_cols)
    a = rng.standard_normal(mshape)
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))[None, :]
    if n_rows < n_cols:
        q = q.T
    return (scale * q).reshape(shape).astype(dtype)


def lecun_normal(rng: np.random.Generator, shape: tuple[int, int], dtype) -> np.ndarray:
    """flax `initializers.lecun_normal()`: truncated normal in [-2, 2] std, variance 1/fan_in."""
    fan_in = shape[0]
    std = np.sqrt(1.0 / fan_in) / 0.87962566103423978
    out = rng.standard_normal(shape)
    bad = np.abs(out) > 2.0
    while bad.any():
        out[bad] = rng.standard_normal(int(bad.sum()))
        bad = np.abs(out) > 2.0
    return (out * std).astype(dtype)


def init_params(cfg: ModelConfig, seed: int = 0, dtype=np.float32) -> dict[str, np.ndarray]:
    cfg.validate()
    rng = np.random.default_rng(seed)
    shapes = param_shapes(cfg)
    gains = {EMBED: np.sqrt(2.0), ACTOR[0]: 2.0, ACTOR[1]: 2.0, ACTOR[2]: 0.01,
             CRITIC[0]: 2.0, CRITIC[1]: 2.0, CRITIC[2]: 1.0}
    p = {}
    # fixed draw order (flax module order), independent of dict order
    order = [EMBED] + [f"{GRU}/{g}" for g in ("ir", "iz", "in", "hr", "hz", "hn")] + list(ACTOR) + list(CRITIC)
    for mod in order:
        kshape = shapes[f"{mod}/kernel"]
        if mod in gains:
            p[f"{mod}/kernel"] = orthogonal(rng, kshape, gains[mod], dtype)
        elif mod.split("/")[-1] in ("ir", "iz", "in"):
            p[f"{mod}/kernel"] = lecun_normal(rng, kshape, dtype)
        else:
            p[f"{mod}/kernel"] = orthogonal(rng, kshape, 1.0, dtype)
        if f"{mod}/bias" in shapes:
            p[f"{mod}/bias"] = np.zeros(shapes[f"{mod}/bias"], dtype)
    return {k: p[k] for k in shapes}


def check_params(params: dict[str, np.ndarray], cfg: ModelConfig) -> None:
    shapes = param_shapes(cfg)
    if set(params) != set(shapes):
        raise ValueError(f"parameter names differ: missing {sorted(set(shapes) - set(params))}, "
                         f"unexpected {sorted(set(params) - set(shapes))}")
    for k, s in shapes.items():
        if params[k].shape != s:
            raise ValueError(f"{k}: shape {params[k].shape}, expected {s}")


# -- forward / backward -------------------------------------------------------------------
def _sigmoid(x):
    return 0.5 * (np.tanh(0.5 * x) + 1.0)  # overflow-free, exact in float64


def _gru_input_weights(p):
    Wi = np.concatenate([p[f"{GRU}/{g}/kernel"] for g in ("ir", "iz", "in")], axis=1)
    bi = np.concatenate([p[f"{GRU}/{g}/bias"] for g in ("ir", "iz", "in")])
    return Wi, bi


def _gru_hidden_weights(p):
    return np.concatenate([p[f"{GRU}/{g}/kernel"] for g in ("hr", "hz", "hn")], axis=1)


def heads_forward(p, y):
    """The actor and critic MLPs on the core's output y [R, in]: (logits [R, A], values [R], the
    layers' inputs by layer name, which heads_backward reads)."""
    acts = {}
    outs = []
    for names in (ACTOR, CRITIC):
        a = y
        for i, name in enumerate(names):
            pre = a @ p[f"{name}/kernel"] + p[f"{name}/bias"]
            acts[name] = a  # layer input
            a = np.maximum(pre, 0) if i < 2 else pre
        outs.append(a)
    return outs[0], outs[1][:, 0], acts


def heads_backward(p, acts, dlogits, dvalues, g: dict):
    """heads_forward's parameter gradients into g, from dlogits [R, A] and dvalues [R, 1];
    returns dloss/dy [R, in]."""
    dy = None
    for names, dout in ((ACTOR, dlogits), (CRITIC, dvalues)):
        d = dout
        for i in (2, 1, 0):
            name = names[i]
            a_in = acts[name]
            g[f"{name}/kernel"] = a_in.T @ d
            g[f"{name}/bias"] = d.sum(0)
            d = d @ p[f"{name}/kernel"].T
            if i > 0:
                d = d * (a_in > 0)  # a_in = relu(previous pre-activation)
        dy = d if dy is None else dy + d
    return dy


def forward(params, obs, dones, h0, keep_cache: bool = False):
    """Run the network over a segment.

    obs [T, B, D], dones [T, B] (reset flag of each step's input), h0 [B, H] (hidden state
    before step 0). Returns (h_T [B, H], logits [T, B, A], values [T, B], cache or None).
    Computation runs in the parameters' dtype.
    """
    p = params
    dt = p[f"{EMBED}/kernel"].dtype
    T, B, D = obs.shape
    H = p[f"{GRU}/hr/kernel"].shape[0]
    x0 = np.asarray(obs, dtype=dt).reshape(T * B, D)
    pre0 = x0 @ p[f"{EMBED}/kernel"] + p[f"{EMBED}/bias"]
    emb = np.maximum(pre0, 0)
    Wi, bi = _gru_input_weights(p)
    Wh = _gru_hidden_weights(p)
    bhn = p[f"{GRU}/hn/bias"]
    xi = (emb @ Wi + bi).reshape(T, B, 3 * H)
    keep = np.asarray(dones, dtype=bool)
    h = np.asarray(h0, dtype=dt)
    hs = np.empty((T, B, H), dt)
    if keep_cache:
        hps = np.empty((T, B, H), dt)
        rs = np.empty((T, B, H), dt)
        zs = np.empty((T, B, H), dt)
        ns = np.empty((T, B, H), dt)
        hns = np.empty((T, B, H), dt)
    for t in range(T):
        hp = np.where(keep[t][:, None], dt.type(0), h)
        hh = hp @ Wh
        r = _sigmoid(xi[t, :, :H] + hh[:, :H])
        z = _sigmoid(xi[t, :, H:2 * H] + hh[:, H:2 * H])
        hn = hh[:, 2 * H:] + bhn
        n = np.tanh(xi[t, :, 2 * H:] + r * hn)
        h = (1 - z) * n + z * hp
        hs[t] = h
        if keep_cache:
            hps[t], rs[t], zs[t], ns[t], hns[t] = hp, r, z, n, hn
    flat_logits, flat_values, acts = heads_forward(p, hs.reshape(T * B, H))
    logits = flat_logits.reshape(T, B, -1)
    values = flat_values.reshape(T, B)
    cache = None
    if keep_cache:
        cache = dict(x0=x0, pre0=pre0, emb=emb, hps=hps, rs=rs, zs=zs, ns=ns, hns=hns, hs=hs,
                     acts=acts, keep=keep, T=T, B=B, H=H)
    return h, logits, values, cache


def backward(params, cache, dlogits, dvalues, input_grad: bool = False):
    """Gradients of a scalar loss w.r.t. every parameter, given dloss/dlogits [T, B, A]
    and dloss/dvalues [T, B]; BPTT through the whole segment (h0 is a constant). With
    `input_grad`, (grads, dloss/dobs [T * B, D]): for a model that computes obs itself."""
    p = params
    T, B, H = cache["T"], cache["B"], cache["H"]
    g: dict[str, np.ndarray] = {}
    dhs = heads_backward(p, cache["acts"], dlogits.reshape(T * B, -1), dvalues.reshape(T * B, 1), g).reshape(T, B, H)
    Wh = _gru_hidden_weights(p)
    dt = Wh.dtype
    dxi = np.empty((T, B, 3 * H), dt)
    dhh = np.empty((T, B, 3 * H), dt)
    dh_next = np.zeros((B, H), dt)
    keep = cache["keep"]
    for t in range(T - 1, -1, -1):
        dh = dhs[t] + dh_next
        hp, r, z, n, hn = cache["hps"][t], cache["rs"][t], cache["zs"][t], cache["ns"][t], cache["hns"][t]
        dn = dh * (1 - z)
        dz = dh * (hp - n)
        dhp = dh * z
        da_n = dn * (1 - n * n)
        da_r = (da_n * hn) * r * (1 - r)
        da_z = dz * z * (1 - z)
        dxi[t, :, :H] = da_r
        dxi[t, :, H:2 * H] = da_z
        dxi[t, :, 2 * H:] = da_n
        dhh[t, :, :H] = da_r
        dhh[t, :, H:2 * H] = da_z
        dhh[t, :, 2 * H:] = da_n * r
        dhp = dhp + dhh[t] @ Wh.T
        dh_next = np.where(keep[t][:, None], dt.type(0), dhp)
    hps = cache["hps"].reshape(T * B, H)
    dhh2 = dhh.reshape(T * B, 3 * H)
    dWh = hps.T @ dhh2
    for k, gname in enumerate(("hr", "hz", "hn")):
        g[f"{GRU}/{gname}/kernel"] = dWh[:, k * H:(k + 1) * H]
    g[f"{GRU}/hn/bias"] = dhh2[:, 2 * H:].sum(0)
    dxi2 = dxi.reshape(T * B, 3 * H)
    emb = cache["emb"]
    dWi = emb.T @ dxi2
    dbi = dxi2.sum(0)
    for k, gname in enumerate(("ir", "iz", "in")):
        g[f"{GRU}/{gname}/kernel"] = dWi[:, k * H:(k + 1) * H]
        g[f"{GRU}/{gname}/bias"] = dbi[k * H:(k + 1) * H]
    Wi, _ = _gru_input_weights(p)
    demb = (dxi2 @ Wi.T) * (cache["pre0"] > 0)
    g[f"{EMBED}/kernel"] = cache["x0"].T @ demb
    g[f"{EMBED}/bias"] = demb.sum(0)
    grads = {k: np.ascontiguousarray(g[k]) for k in params}
    return (grads, demb @ p[f"{EMBED}/kernel"].T) if input_grad else grads


def log_softmax(logits):
    m = logits.max(-1, keepdims=True)
    s = logits - m
    return s - np.log(np.exp(s).sum(-1, keepdims=True))


def ppo_loss(params, batch, lcfg: LossConfig = LossConfig(), with_grad: bool = True, input_grad: bool = False):
    """The baseline's `_loss_fn` on one minibatch, with its analytic gradient.

    batch: h0 [B, H], obs [T, B, D], dones [T, B], actions [T, B] int, values (old) [T, B],
    log_probs (old) [T, B], advantages [T, B] (raw GAE), targets [T, B].
    Returns (total_loss, aux dict, grads dict or None); with `input_grad`, grads is
    (grads dict, dloss/dobs [T * B, D]) (see backward).
    """
    _, logits, value, cache = forward(params, batch["obs"], batch["dones"], batch["h0"], keep_cache=with_grad)
    total, aux, dlogits, dvalue = loss_terms(logits, value, batch, lcfg, with_grad)
    if not with_grad:
        return total, aux, None
    return total, aux, backward(params, cache, dlogits, dvalue, input_grad=input_grad)


def loss_terms(logits, value, batch, lcfg: LossConfig = LossConfig(), with_grad: bool = True):
    """ppo_loss's loss from the network's outputs logits [T, B, A] and values [T, B]: (total, aux,
    dloss/dlogits, dloss/dvalues), the last two None without `with_grad`. Every model's loss
    (fast_model's too) is this one function."""
    dt = value.dtype
    eps = dt.type(lcfg.clip_eps)
    logp_all = log_softmax(logits)
    act = np.asarray(batch["actions"])[..., None]
    log_prob = np.take_along_axis(logp_all, act, -1)[..., 0]
    old_v = np.asarray(batch["values"], dt)
    targets = np.asarray(batch["targets"], dt)
    # value loss (clipped form)
    dv = value - old_v
    v_clipped = old_v + np.clip(dv, -eps, eps)
    vl = np.square(value - targets)
    vl_c = np.square(v_clipped - targets)
    value_loss = dt.type(0.5) * np.maximum(vl, vl_c).mean()
    # actor loss
    # the k3 estimator of the KL from the log ratio itself: log(exp(x)) is -inf once exp(x)
    # underflows, for an action the updated policy has all but ruled out
    log_ratio = log_prob - np.asarray(batch["log_probs"], dt)
    ratio = np.exp(log_ratio)
    gae = np.asarray(batch["advantages"], dt)
    gae = (gae - gae.mean()) / (gae.std() + dt.type(1e-8))
    ratio_c = np.clip(ratio, 1 - eps, 1 + eps)
    l1 = ratio * gae
    l2 = ratio_c * gae
    loss_actor = (-np.minimum(l1, l2)).mean()
    probs = np.exp(logp_all)
    ent = -(probs * logp_all).sum(-1)
    entropy = ent.mean()
    total = loss_actor + dt.type(lcfg.vf_coef) * value_loss - dt.type(lcfg.ent_coef) * entropy
    aux = dict(value_loss=value_loss, actor_loss=loss_actor, entropy=entropy,
               approx_kl=((ratio - 1) - log_ratio).mean(),
               clip_frac=(np.abs(ratio - 1) > eps).mean())
    if not with_grad:
        return total, aux, None, None
    N = dt.type(value.size)
    # d value_loss / d value: jnp.maximum splits ties evenly; jnp.clip passes the gradient
    # strictly inside [-eps, eps] (ties at the bounds have measure zero).
    inside_v = (np.abs(dv) < eps).astype(dt)
    g_un = 2 * (value - targets)
    g_cl = 2 * (v_clipped - targets) * inside_v
    w_un = np.where(vl > vl_c, 1.0, np.where(vl == vl_c, 0.5, 0.0)).astype(dt)
    dvalue = dt.type(lcfg.vf_coef) * dt.type(0.5) / N * (w_un * g_un + (1 - w_un) * g_cl)
    # d loss_actor / d log_prob
    inside_r = ((ratio > 1 - eps) & (ratio < 1 + eps)).astype(dt)
    w1 = np.where(l1 < l2, 1.0, np.where(l1 == l2, 0.5, 0.0)).astype(dt)
    dratio = -(w1 * gae + (1 - w1) * gae * inside_r) / N
    dlogp = dratio * ratio
    onehot = np.zeros_like(logits)
    np.put_along_axis(onehot, act, 1, -1)
    dlogits = dlogp[..., None] * (onehot - probs)
    # -ent_coef * mean(entropy);  d H / d logits = -p (log p + H)
    dlogits += dt.type(lcfg.ent_coef) / N * probs * (logp_all + ent[..., None])
    return total, aux, dlogits, dvalue


# -- GAE ----------------------------------------------------------------------------------
def gae(rewards, values, dones, last_value, last_done, gamma: float, lam: float):
    """The baseline's `_calculate_gae`: dones[t] is the reset flag of step t's input
    (the done that preceded it); last_done is the done of the final step.
    Returns (advantages, targets) [T, B]."""
    dt = np.asarray(values).dtype
    T = rewards.shape[0]
    adv = np.empty_like(values)
    g = np.zeros_like(last_value)
    next_value = last_value
    next_done = np.asarray(last_done, dt)
    gamma, lam = dt.type(gamma), dt.type(lam)
    for t in range(T - 1, -1, -1):
        nd = 1 - next_done
        delta = rewards[t] + gamma * next_value * nd - values[t]
        g = delta + gamma * lam * nd * g
        adv[t] = g
        next_value = values[t]
        next_done = np.asarray(dones[t], dt)
    return adv, adv + values


# -- optimiser: optax.chain(clip_by_global_norm(max_norm), adam(lr, eps=1e-5)) --------------
def global_norm(grads) -> np.floating:
    return np.sqrt(sum(np.sum(np.square(g)) for g in grads.values()))


def clip_by_global_norm(grads, max_norm: float):
    norm = global_norm(grads)
    dt = next(iter(grads.values())).dtype
    if norm < max_norm:
        return dict(grads), norm
    return {k: (g / norm.astype(dt)) * dt.type(max_norm) for k, g in grads.items()}, norm


def adam_init(params):
    return {"count": 0, "mu": {k: np.zeros_like(v) for k, v in params.items()},
            "nu": {k: np.zeros_like(v) for k, v in params.items()}}


def adam_update(params, grads, state, lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-5):
    """optax.adam (scale_by_adam with bias correction, eps outside the sqrt, eps_root=0) then
    scale by -lr and apply. Updates `params` and `state` in place; returns them."""
    count = state["count"] + 1
    state["count"] = count
    for k in params:
        g = grads[k]
        dt = g.dtype
        mu = state["mu"][k]
        nu = state["nu"][k]
        mu *= dt.type(b1)
        mu += dt.type(1 - b1) * g
        nu *= dt.type(b2)
        nu += dt.type(1 - b2) * np.square(g)
        mu_hat = mu / dt.type(1 - dt.type(b1) ** count)
        nu_hat = nu / dt.type(1 - dt.type(b2) ** count)
        upd = mu_hat / (np.sqrt(nu_hat) + dt.type(eps))
        params[k] += dt.type(-lr) * upd
    return params, state


def learning_rate(base_lr: float, anneal: bool, update: int, num_updates: int) -> float:
    """The learning rate of update `update` (0-based) of `num_updates`: the baseline's linear
    annealing, in double, or `base_lr` throughout without annealing (every trainer's schedule:
    tests/test_learning_rate.py)."""
    if not anneal:
        return float(base_lr)
    return float(base_lr) * (1.0 - float(update) / float(num_updates))


def linear_schedule(lr: float, step: int, num_minibatches: int, epochs: int, num_updates: int) -> float:
    """The baseline's `linear_schedule(count)` with count = optimiser steps taken so far."""
    return learning_rate(lr, True, step // (num_minibatches * epochs), num_updates)


# -- acting -------------------------------------------------------------------------------
def sample_actions(rng: np.random.Generator | None, logits: np.ndarray, uniforms: np.ndarray | None = None):
    """Sample from Categorical(logits) by inverse CDF with one uniform per row: rng's, or
    `uniforms` (float [B] in [0, 1)) where given. Returns (actions int32 [B], log_probs [B])."""
    logp = log_softmax(logits)
    cdf = np.cumsum(np.exp(logp.astype(np.float64)), axis=-1)
    u = (rng.random(logits.shape[0]) if uniforms is None else np.asarray(uniforms, np.float64)) * cdf[:, -1]
    actions = np.minimum((cdf < u[:, None]).sum(-1), logits.shape[-1] - 1).astype(np.int32)
    return actions, np.take_along_axis(logp, actions[:, None].astype(np.int64), -1)[:, 0]
