"""The fast recipe's network: the paper's ActorCriticRNN reading a learned code of each view cell.

The symbolic obs is 99 view cells x 83 binary channels (37 block, 5 item, 40 mob, 1 visible),
then 51 scalars. The paper's first layer reads all 8268 floats; this model first passes every
cell through one shared linear layer and a ReLU (a 1x1 convolution over the channels,
"params/CellEncoder", kernel [83, C]), so that the first dense layer reads 99 * C + 51 features
(zero-padded to a multiple of 8, `feature_width`) instead. The rest is numpy_ppo's ActorCriticRNN
with obs_size = feature_width (Dense_0, the GRU, the actor and critic heads, same names):

    features = [relu(cell_k W + b) for the 99 cells k] ++ scalars ++ zeros
    logits, value, h = ActorCriticRNN(features, dones, h)

Because a cell's channels are 0 or 1, cell_k W is the sum of W's rows of its set channels: the GPU
computes the features from the env's 1,008-byte compact records (cuda/fast_cuda.cu) without
expanding the 8268 floats; on the CPU they come from the float obs.

This module holds the float64-checkable NumPy reference (`init_params`, `encode`, `forward`,
`ppo_loss` with analytic gradients) and the PyTorch model the fast trainer runs
(`TorchActorCritic`, pycraftax/train/torch_trainer.py).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from pycraftax.train import numpy_ppo
from pycraftax.train.numpy_ppo import ACTOR, CRITIC, EMBED, GRU, LossConfig, ModelConfig

CELL = "params/CellEncoder"
MINGRU = "params/MinGRU_0"
CELLS, CHANNELS, SCALARS = 99, 83, 51
MAP_FLOATS = CELLS * CHANNELS  # 8217: the obs' map part, cell-major
CELL_DIMS = (8, 16, 24, 32)  # what the CUDA cell encoder is compiled for
RECURRENCES = ("gru", "mingru")


@dataclass(frozen=True)
class FastModelConfig:
    cell_dim: int = 16
    width: int = 256
    hidden: int = 256
    num_actions: int = 43
    # "gru": flax's GRUCell, the heads read h. "mingru": a minimal GRU whose gates read the
    # embedding alone (no hidden-to-hidden weights), so its training pass is one elementwise scan
    # over time after one GEMM; the heads read [h, embedding].
    recurrence: str = "gru"

    def validate(self) -> None:
        if self.cell_dim not in CELL_DIMS:
            raise ValueError(f"cell_dim must be one of {list(CELL_DIMS)}, got {self.cell_dim!r}")
        if self.recurrence not in RECURRENCES:
            raise ValueError(f"recurrence must be one of {list(RECURRENCES)}, got {self.recurrence!r}")
        self.paper_config().validate()

    @property
    def head_input(self) -> int:
        """Features the actor's and critic's first layers read."""
        return self.hidden + self.width if self.recurrence == "mingru" else self.hidden

    @property
    def feature_width(self) -> int:
        return -(-(CELLS * self.cell_dim + SCALARS) // 8) * 8

    def paper_config(self) -> ModelConfig:
        """The ActorCriticRNN behind the cell encoder."""
        return ModelConfig(obs_size=self.feature_width, num_actions=self.num_actions, width=self.width,
                           hidden=self.hidden)


def param_shapes(cfg: FastModelConfig) -> dict[str, tuple[int, ...]]:
    s = {f"{CELL}/kernel": (CHANNELS, cfg.cell_dim), f"{CELL}/bias": (cfg.cell_dim,),
         **numpy_ppo.param_shapes(cfg.paper_config())}
    if cfg.recurrence == "mingru":
        s = {k: v for k, v in s.items() if not k.startswith(GRU)}
        for gate in ("z", "h"):
            s[f"{MINGRU}/{gate}/kernel"] = (cfg.width, cfg.hidden)
            s[f"{MINGRU}/{gate}/bias"] = (cfg.hidden,)
        for names in (ACTOR, CRITIC):
            s[f"{names[0]}/kernel"] = (cfg.head_input, cfg.width)
    return dict(sorted(s.items()))


def init_params(cfg: FastModelConfig, seed: int = 0, dtype=np.float32) -> dict[str, np.ndarray]:
    """numpy_ppo's initialisation of the ActorCriticRNN, and an orthogonal(sqrt 2) cell kernel
    drawn after it from the same seed. The MinGRU's gate kernels are lecun_normal (as the GRU's
    input kernels) and its heads' first kernels orthogonal(2), drawn after the cell kernel."""
    cfg.validate()
    p = numpy_ppo.init_params(cfg.paper_config(), seed, dtype)
    rng = np.random.default_rng([seed, 1])
    p[f"{CELL}/kernel"] = numpy_ppo.orthogonal(rng, (CHANNELS, cfg.cell_dim), np.sqrt(2.0), dtype)
    p[f"{CELL}/bias"] = np.zeros(cfg.cell_dim, dtype)
    if cfg.recurrence == "mingru":
        for gate in ("z", "h"):
            p[f"{MINGRU}/{gate}/kernel"] = numpy_ppo.lecun_normal(rng, (cfg.width, cfg.hidden), dtype)
            p[f"{MINGRU}/{gate}/bias"] = np.zeros(cfg.hidden, dtype)
        for names in (ACTOR, CRITIC):
            p[f"{names[0]}/kernel"] = numpy_ppo.orthogonal(rng, (cfg.head_input, cfg.width), 2.0, dtype)
    return {k: p[k] for k in param_shapes(cfg)}


def check_params(params: dict, cfg: FastModelConfig) -> None:
    shapes = param_shapes(cfg)
    if set(params) != set(shapes):
        raise ValueError(f"parameter names differ: missing {sorted(set(shapes) - set(params))}, "
                         f"unexpected {sorted(set(params) - set(shapes))}")
    for k, s in shapes.items():
        if tuple(np.shape(params[k])) != s:
            raise ValueError(f"{k}: shape {tuple(np.shape(params[k]))}, expected {s}")


def config_of(params: dict) -> FastModelConfig:
    """The FastModelConfig whose shapes `params` has."""
    c = np.shape(params[f"{CELL}/kernel"])[1]
    mingru = f"{MINGRU}/z/kernel" in params
    hidden = np.shape(params[f"{MINGRU}/z/kernel"])[1] if mingru else np.shape(params[f"{GRU}/hr/kernel"])[0]
    return FastModelConfig(cell_dim=int(c), width=int(np.shape(params[f"{EMBED}/kernel"])[1]), hidden=int(hidden),
                           num_actions=int(np.shape(params[f"{ACTOR[2]}/kernel"])[1]),
                           recurrence="mingru" if mingru else "gru")


def is_fast_params(params: dict) -> bool:
    return f"{CELL}/kernel" in params


def _paper_part(params: dict) -> dict:
    return {k: v for k, v in params.items() if not k.startswith(CELL)}


# -- NumPy reference -----------------------------------------------------------------------
def encode(params: dict, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(features [R, feature_width], cell pre-activations [R, 99, C]) of float obs [R, 8268]."""
    w, b = params[f"{CELL}/kernel"], params[f"{CELL}/bias"]
    dt = w.dtype
    obs = np.asarray(obs, dt)
    R, C = obs.shape[0], w.shape[1]
    pre = obs[:, :MAP_FLOATS].reshape(R, CELLS, CHANNELS) @ w + b
    width = -(-(CELLS * C + SCALARS) // 8) * 8
    feats = np.zeros((R, width), dt)
    feats[:, :CELLS * C] = np.maximum(pre, 0).reshape(R, CELLS * C)
    feats[:, CELLS * C:CELLS * C + SCALARS] = obs[:, MAP_FLOATS:]
    return feats, pre


def encode_backward(params: dict, obs: np.ndarray, pre: np.ndarray, dfeats: np.ndarray) -> dict[str, np.ndarray]:
    """The cell encoder's parameter gradients from dloss/dfeatures."""
    w = params[f"{CELL}/kernel"]
    R, C = pre.shape[0], w.shape[1]
    d = dfeats[:, :CELLS * C].reshape(R, CELLS, C) * (pre > 0)
    x = np.asarray(obs, w.dtype)[:, :MAP_FLOATS].reshape(R * CELLS, CHANNELS)
    return {f"{CELL}/kernel": x.T @ d.reshape(R * CELLS, C), f"{CELL}/bias": d.sum((0, 1))}


def _sigmoid(x):
    return 0.5 * (np.tanh(0.5 * x) + 1.0)


def mingru_forward(params: dict, feats: np.ndarray, dones: np.ndarray, h0: np.ndarray, keep_cache: bool = False):
    """The MinGRU core on features [T, B, K] (what numpy_ppo.forward is to the GRU):

        emb = relu(features W_0 + b_0);  z = sigmoid(emb W_z + b_z);  c = tanh(emb W_h + b_h)
        h_t = (1 - z_t) * hp_t + z_t * c_t,  hp_t = 0 where dones[t] (a reset before step t), else h_{t-1}
        logits, values = the heads of [h_t, emb_t]

    Returns (h_T [B, H], logits [T, B, A], values [T, B], cache or None)."""
    p = params
    dt = p[f"{EMBED}/kernel"].dtype
    T, B, K = feats.shape
    H = p[f"{MINGRU}/z/kernel"].shape[1]
    x0 = np.asarray(feats, dt).reshape(T * B, K)
    pre0 = x0 @ p[f"{EMBED}/kernel"] + p[f"{EMBED}/bias"]
    emb = np.maximum(pre0, 0)
    z = _sigmoid(emb @ p[f"{MINGRU}/z/kernel"] + p[f"{MINGRU}/z/bias"]).reshape(T, B, H)
    c = np.tanh(emb @ p[f"{MINGRU}/h/kernel"] + p[f"{MINGRU}/h/bias"]).reshape(T, B, H)
    reset = np.asarray(dones, dtype=bool)
    h = np.asarray(h0, dtype=dt)
    hs = np.empty((T, B, H), dt)
    hps = np.empty((T, B, H), dt)
    for t in range(T):
        hp = np.where(reset[t][:, None], dt.type(0), h)
        h = (1 - z[t]) * hp + z[t] * c[t]
        hs[t], hps[t] = h, hp
    y = np.concatenate([hs.reshape(T * B, H), emb], 1)
    flat_logits, flat_values, acts = numpy_ppo.heads_forward(p, y)
    cache = dict(x0=x0, pre0=pre0, emb=emb, z=z, c=c, hps=hps, acts=acts, reset=reset, T=T, B=B, H=H) \
        if keep_cache else None
    return h, flat_logits.reshape(T, B, -1), flat_values.reshape(T, B), cache


def mingru_backward(params: dict, cache: dict, dlogits: np.ndarray, dvalues: np.ndarray):
    """mingru_forward's parameter gradients (the cell encoder's excepted) and dloss/dfeatures
    [T * B, K], from dloss/dlogits [T, B, A] and dloss/dvalues [T, B]; BPTT over the segment
    (h0 is a constant)."""
    p = params
    T, B, H = cache["T"], cache["B"], cache["H"]
    g: dict[str, np.ndarray] = {}
    dy = numpy_ppo.heads_backward(p, cache["acts"], dlogits.reshape(T * B, -1), dvalues.reshape(T * B, 1), g)
    dhs = dy[:, :H].reshape(T, B, H)
    z, c, hps, reset = cache["z"], cache["c"], cache["hps"], cache["reset"]
    dz = np.empty_like(z)
    dc = np.empty_like(c)
    carry = np.zeros((B, H), z.dtype)
    for t in range(T - 1, -1, -1):
        dh = dhs[t] + carry
        dz[t] = dh * (c[t] - hps[t]) * z[t] * (1 - z[t])
        dc[t] = dh * z[t] * (1 - c[t] * c[t])
        carry = np.where(reset[t][:, None], z.dtype.type(0), dh * (1 - z[t]))
    dz, dc = dz.reshape(T * B, H), dc.reshape(T * B, H)
    emb = cache["emb"]
    for gate, d in (("z", dz), ("h", dc)):
        g[f"{MINGRU}/{gate}/kernel"] = emb.T @ d
        g[f"{MINGRU}/{gate}/bias"] = d.sum(0)
    demb = (dz @ p[f"{MINGRU}/z/kernel"].T + dc @ p[f"{MINGRU}/h/kernel"].T + dy[:, H:]) * (cache["pre0"] > 0)
    g[f"{EMBED}/kernel"] = cache["x0"].T @ demb
    g[f"{EMBED}/bias"] = demb.sum(0)
    return g, demb @ p[f"{EMBED}/kernel"].T


def forward(params: dict, obs: np.ndarray, dones: np.ndarray, h0: np.ndarray):
    """The model on obs float [T, B, 8268] -> (h_T, logits [T, B, A], values [T, B])."""
    T, B, D = obs.shape
    feats, _ = encode(params, obs.reshape(T * B, D))
    if f"{MINGRU}/z/kernel" in params:
        h, logits, values, _ = mingru_forward(params, feats.reshape(T, B, -1), dones, h0)
    else:
        h, logits, values, _ = numpy_ppo.forward(_paper_part(params), feats.reshape(T, B, -1), dones, h0)
    return h, logits, values


def ppo_loss(params: dict, batch: dict, lcfg: LossConfig = LossConfig(), with_grad: bool = True):
    """numpy_ppo.ppo_loss of the model on one minibatch (batch["obs"]: float obs [T, B, 8268]),
    with the gradient of every parameter, the cell encoder's included."""
    obs = np.asarray(batch["obs"])
    T, B, D = obs.shape
    flat = obs.reshape(T * B, D)
    feats, pre = encode(params, flat)
    if f"{MINGRU}/z/kernel" in params:
        _, logits, values, cache = mingru_forward(params, feats.reshape(T, B, -1), batch["dones"], batch["h0"],
                                                  keep_cache=with_grad)
        total, aux, dlogits, dvalues = numpy_ppo.loss_terms(logits, values, batch, lcfg, with_grad)
        if not with_grad:
            return total, aux, None
        grads, dfeats = mingru_backward(params, cache, dlogits, dvalues)
    else:
        inner = dict(batch, obs=feats.reshape(T, B, -1))
        total, aux, out = numpy_ppo.ppo_loss(_paper_part(params), inner, lcfg, with_grad=with_grad, input_grad=True)
        if not with_grad:
            return total, aux, None
        grads, dfeats = out
    grads.update(encode_backward(params, flat, pre, dfeats))
    return total, aux, {k: grads[k] for k in params}


# -- PyTorch --------------------------------------------------------------------------------
def _torch():
    import torch

    return torch


def encode_float_torch(weight, bias, obs):
    """The cell encoder on float obs [R, 8268] with torch ops (any device): features [R, width]
    in obs' dtype."""
    torch = _torch()
    R, C = obs.shape[0], weight.shape[1]
    cells = obs[:, :MAP_FLOATS].reshape(R, CELLS, CHANNELS)
    coded = torch.relu(cells @ weight.to(obs.dtype) + bias.to(obs.dtype)).reshape(R, CELLS * C)
    width = -(-(CELLS * C + SCALARS) // 8) * 8
    pad = obs.new_zeros((R, width - CELLS * C - SCALARS))
    return torch.cat([coded, obs[:, MAP_FLOATS:], pad], 1)


class TorchActorCritic:
    """The fast model in PyTorch: fp32 master weights (`weights`, by flax name) on `device`; the
    GEMMs in bfloat16 with fp32 accumulation where `bf16` (the GPU), the recurrent state and cell,
    the softmax and the losses in fp32. Inputs: float obs [R, 8268] (torch ops) or compact records
    uint8 [R, 1008] (the CUDA cell encoder, cuda_ops.encode_cells). On the GPU the recurrence runs
    as one op over the sequence (cuda_ops.gru_sequence, cuda_ops.mingru_sequence) unless
    fused_gru=False."""

    def __init__(self, params: dict, device, bf16: bool, dtype=None, fused_gru: bool | None = None):
        torch = _torch()
        self.dtype = dtype or torch.float32  # of the weights and the fp32 parts (float64 for checks)
        self.cfg = config_of(params)
        check_params(params, self.cfg)
        self.device = torch.device(device)
        self.bf16 = bf16
        # the GRU as one op over the sequence (cuda_ops.gru_sequence); False: a step at a time in
        # torch ops, the form the CPU checks run and the one to compare against
        can_fuse = self.device.type == "cuda" and bf16 and self.dtype == torch.float32
        if fused_gru and not can_fuse:
            raise ValueError("fused_gru needs a CUDA device, bf16=True and float32 weights")
        self.fused_gru = can_fuse if fused_gru is None else bool(fused_gru)
        self.names = list(param_shapes(self.cfg))
        self.weights = {k: torch.nn.Parameter(torch.as_tensor(np.asarray(params[k]), dtype=self.dtype,
                                                              device=self.device)) for k in self.names}
        self._hidden_bias_pad = torch.zeros(2 * self.cfg.hidden, dtype=self.dtype, device=self.device)

    def parameters(self) -> list:
        return [self.weights[k] for k in self.names]

    def numpy_params(self) -> dict[str, np.ndarray]:
        return {k: v.detach().cpu().numpy().copy() for k, v in self.weights.items()}

    def load(self, params: dict) -> None:
        torch = _torch()
        check_params(params, self.cfg)
        with torch.no_grad():
            for k in self.names:
                self.weights[k].copy_(torch.as_tensor(np.asarray(params[k]), dtype=self.dtype))

    def _linear(self, x, w, b=None, out_dtype=None):
        """x @ w (+ b): with bf16, bfloat16 operands and fp32 accumulation (the bias in the GEMM's
        epilogue) and a bfloat16 result unless out_dtype (bf16_linear); else in self.dtype."""
        torch = _torch()
        if not self.bf16:
            return x @ w if b is None else torch.addmm(b, x, w)
        y = _bf16_linear_function().apply(x, w, b)
        return y if out_dtype is None else y.to(out_dtype)

    def features(self, obs):
        """Features [R, feature_width] of obs: float [R, 8268] or compact records uint8 [R, >= 1008]."""
        torch = _torch()
        w, b = self.weights[f"{CELL}/kernel"], self.weights[f"{CELL}/bias"]
        if obs.dtype == torch.uint8:
            from pycraftax.train import cuda_ops

            return cuda_ops.encode_cells(obs, w, b, self.cfg.feature_width)
        return encode_float_torch(w, b, obs.to(self.dtype))

    def core(self, feats, dones, h0):
        """numpy_ppo.forward (or mingru_forward) from features [T * B, K]: (h_T, logits [T, B, A]
        fp32, values [T, B] fp32). dones bool [T, B]: reset the state before that step's cell."""
        torch = _torch()
        p = self.weights
        T, B = dones.shape
        H = self.cfg.hidden
        emb = torch.relu(self._linear(feats, p[f"{EMBED}/kernel"], p[f"{EMBED}/bias"]))
        if self.cfg.recurrence == "mingru":
            hs, h = self.mingru(emb, dones, h0)
            y = torch.cat([hs.reshape(T * B, H).to(emb.dtype), emb], 1)
        else:
            Wi = torch.cat([p[f"{GRU}/{g}/kernel"] for g in ("ir", "iz", "in")], 1)
            bi = torch.cat([p[f"{GRU}/{g}/bias"] for g in ("ir", "iz", "in")])
            Wh = torch.cat([p[f"{GRU}/{g}/kernel"] for g in ("hr", "hz", "hn")], 1)
            bhn = p[f"{GRU}/hn/bias"]
            xs = self._linear(emb, Wi, out_dtype=self.dtype).reshape(T, B, 3 * H)  # + bi in the cell
            if self.fused_gru:
                from pycraftax.train import cuda_ops

                hs, h = cuda_ops.gru_sequence(xs, ~dones, h0, Wh, bi, bhn)
            else:
                hs, h = self.gru_steps(xs, dones, h0, Wh, bi, bhn)
            y = hs.reshape(T * B, H)
        outs = []
        for names in (ACTOR, CRITIC):
            a = y
            for i, name in enumerate(names):
                if i < 2:
                    a = torch.relu(self._linear(a, p[f"{name}/kernel"], p[f"{name}/bias"]))
                else:
                    a = self._linear(a, p[f"{name}/kernel"], p[f"{name}/bias"], out_dtype=self.dtype)
            outs.append(a)
        return h, outs[0].reshape(T, B, -1), outs[1].reshape(T, B)

    def mingru(self, emb, dones, h0):
        """The MinGRU over the sequence from the embedding [T * B, W]: (hs [T, B, H], h_T) in the
        weights' dtype. One GEMM gives both gates' pre-activations for every step; the recurrence
        is then elementwise: on the GPU one kernel each way (cuda_ops.mingru_sequence), on the
        CPU a step at a time in torch ops."""
        torch = _torch()
        p = self.weights
        T, B = dones.shape
        H = self.cfg.hidden
        Wg = torch.cat([p[f"{MINGRU}/z/kernel"], p[f"{MINGRU}/h/kernel"]], 1)
        bg = torch.cat([p[f"{MINGRU}/z/bias"], p[f"{MINGRU}/h/bias"]])
        gates = self._linear(emb, Wg, bg).reshape(T, B, 2 * H)
        if self.fused_gru:
            from pycraftax.train import cuda_ops

            return cuda_ops.mingru_sequence(gates, ~dones, h0)
        gates = gates.to(self.dtype)
        z, c = torch.sigmoid(gates[..., :H]).unbind(0), torch.tanh(gates[..., H:]).unbind(0)
        keeps = (~dones).unsqueeze(-1).to(self.dtype).unbind(0)
        h = h0
        hs = []
        for t in range(T):
            h = (1 - z[t]) * (h * keeps[t]) + z[t] * c[t]
            hs.append(h)
        return torch.stack(hs), h

    def gru_steps(self, xs, dones, h0, Wh, bi, bhn):
        """The GRU a step at a time in torch ops (cuda_ops.gru_sequence's arguments, but dones
        for keeps): (hs [T, B, H], h_T)."""
        torch = _torch()
        T = dones.shape[0]
        H = self.cfg.hidden
        if self.bf16:
            Wh = Wh.to(torch.bfloat16)
        # unbind, not xs[t]: indexing's backward would add a full-size zero gradient of xs at
        # every step
        xs = xs.unbind(0)
        keeps = (~dones).unsqueeze(-1).to(self.dtype).unbind(0)
        fused = self.device.type == "cuda"
        hidden_bias = torch.cat([self._hidden_bias_pad, bhn]) if fused else None
        h = h0
        hs = []
        for t in range(T):
            hp = h * keeps[t]
            hh = torch.mm(hp.to(Wh.dtype), Wh).to(self.dtype)
            if fused:  # PyTorch's GRUCell kernel: the same cell (gates r, z, n), one launch
                h = torch.ops.aten._thnn_fused_gru_cell(xs[t], hh, hp, bi, hidden_bias)[0]
            else:
                x = xs[t] + bi
                r = torch.sigmoid(x[:, :H] + hh[:, :H])
                z = torch.sigmoid(x[:, H:2 * H] + hh[:, H:2 * H])
                n = torch.tanh(x[:, 2 * H:] + r * (hh[:, 2 * H:] + bhn))
                h = (1 - z) * n + z * hp
            hs.append(h)
        return torch.stack(hs), h

    def forward(self, obs, dones, h0):
        """obs [T, B, ...] (float or records), dones bool [T, B], h0 [B, H] -> (h_T, logits, values)."""
        T, B = dones.shape
        return self.core(self.features(obs.reshape(T * B, *obs.shape[2:])), dones, h0)


@functools.lru_cache(maxsize=1)
def _bf16_linear_function():
    """x @ w + b as one autograd op: bfloat16 operands, fp32 accumulation, a bfloat16 result. Its
    backward writes dx in x's dtype and dw, db in fp32 straight from cuBLAS (w and b are the fp32
    master weights); db is ones @ dy, a GEMM, because PyTorch's column sum of a [rows, n] bfloat16
    gradient is a slow strided reduction. Made on first use: importing this module needs no torch."""
    torch = _torch()
    bf16, f32 = torch.bfloat16, torch.float32

    class Bf16Linear(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            xb, wb = x.to(bf16), w.to(bf16)
            y = torch.mm(xb, wb) if b is None else torch.addmm(b.to(bf16), xb, wb)
            ctx.save_for_backward(xb, wb)
            ctx.dtypes = (x.dtype, w.dtype, None if b is None else b.dtype)
            return y

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, dy):
            xb, wb = ctx.saved_tensors
            x_dtype, w_dtype, b_dtype = ctx.dtypes
            need_x, need_w, need_b = ctx.needs_input_grad
            dy = dy.to(bf16)
            dx = torch.mm(dy, wb.t()).to(x_dtype) if need_x else None
            dw = torch.mm(xb.t(), dy, out_dtype=f32).to(w_dtype) if need_w else None
            db = None
            if need_b and b_dtype is not None:
                db = torch.mm(dy.new_ones((1, dy.shape[0])), dy, out_dtype=f32)[0].to(b_dtype)
            return dx, dw, db

    return Bf16Linear


def ppo_loss_torch(logits, values, batch: dict, lcfg: LossConfig, moments=None):
    """numpy_ppo.ppo_loss's loss in torch (fp32) from the model's outputs [T, B, A] and [T, B]:
    (total, dict of the statistics as 0-d tensors). moments: advantages -> the (mean, standard
    deviation) that normalise them (default theirs; over several ranks, the whole minibatch's)."""
    torch = _torch()
    eps = lcfg.clip_eps
    logp_all = torch.log_softmax(logits, -1)
    log_prob = logp_all.gather(-1, batch["actions"].long().unsqueeze(-1)).squeeze(-1)
    old_v = batch["values"]
    v_clipped = old_v + (values - old_v).clamp(-eps, eps)
    value_loss = 0.5 * torch.maximum((values - batch["targets"]) ** 2, (v_clipped - batch["targets"]) ** 2).mean()
    log_ratio = log_prob - batch["log_probs"]
    ratio = torch.exp(log_ratio)
    gae = batch["advantages"]
    mean, std = (gae.mean(), gae.std(unbiased=False)) if moments is None else moments(gae)
    gae = (gae - mean) / (std + 1e-8)
    actor_loss = -torch.minimum(ratio * gae, ratio.clamp(1 - eps, 1 + eps) * gae).mean()
    entropy = -(logp_all.exp() * logp_all).sum(-1).mean()
    total = actor_loss + lcfg.vf_coef * value_loss - lcfg.ent_coef * entropy
    # detached: a statistic that kept its graph would keep every minibatch's autograd nodes alive
    # through the trainer's running sums, and with them the parameters' AccumulateGrad nodes of
    # the warm-up stream into the CUDA graph's capture
    with torch.no_grad():
        stats = dict(value_loss=value_loss.detach(), actor_loss=actor_loss.detach(), entropy=entropy.detach(),
                     approx_kl=((ratio - 1) - log_ratio).mean(), clip_frac=((ratio - 1).abs() > eps).float().mean())
    return total, stats
