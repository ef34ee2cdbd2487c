"""The paper's ActorCriticRNN (numpy_ppo) in PyTorch: model "gru" on the PyTorch engine
(torch_trainer.TorchTrainer), which trains the paper recipe and Classic on the GPU and any run of
several processes.

    model = PaperActorCritic(numpy_ppo.init_params(cfg), "cuda")
    h_T, logits, values = model.forward(obs, dones, h0)   # [T, B, obs_size], bool [T, B], [B, hidden]

It computes numpy_ppo.forward, weights by the same flax names (so checkpoints, params.npz, eval,
render and the policies of the NumPy trainer are interchangeable with it): Dense_0 and a ReLU on the
float obs, the flax GRUCell with the state zeroed before a step whose done flag is set, two
ReLU layers and a head each for the actor and the critic. Every op runs in the weights' dtype:
float32 to train, float64 for the checks against numpy_ppo (tests/test_paper_model.py). On the
GPU the trainer lets the float32 GEMMs run in TF32 unless told otherwise (TorchTrainer's tf32).

The GRU over a sequence is one autograd op (`gru_sequence`): forward, a GEMM and a cell a step;
backward, a cell and a GEMM a step, then W_h's gradient as one GEMM over all steps and the
biases' as one sum each (autograd through a step loop would add a GEMM and a gradient sum per
step). On the GPU the cell is PyTorch's fused GRU cell kernel (the one nn.GRUCell runs), the
same function in one launch; on the CPU it is written out in torch ops.
"""

from __future__ import annotations

import functools

import numpy as np

from pycraftax.train import numpy_ppo
from pycraftax.train.numpy_ppo import ACTOR, CRITIC, EMBED, GRU, ModelConfig


def _torch():
    import torch

    return torch


def config_of(params: dict) -> ModelConfig:
    """The ModelConfig whose shapes `params` has (ValueError naming a missing or misshapen one)."""
    try:
        cfg = ModelConfig(obs_size=int(np.shape(params[f"{EMBED}/kernel"])[0]),
                          num_actions=int(np.shape(params[f"{ACTOR[2]}/kernel"])[1]),
                          width=int(np.shape(params[f"{EMBED}/kernel"])[1]),
                          hidden=int(np.shape(params[f"{GRU}/hr/kernel"])[0]))
    except KeyError as exc:
        raise ValueError(f"parameter {exc.args[0]!r} is missing") from None
    numpy_ppo.check_params({k: np.asarray(v) for k, v in params.items()}, cfg)
    return cfg


# -- the GRU over a sequence ------------------------------------------------------------------
def _cell(x, hh, hp, bi, hidden_bias, fused: bool):
    """One GRU step from its input part x [B, 3H] (x_t W_i, no bias), hidden part hh = hp W_h
    [B, 3H] and state hp [B, H]: (h' [B, H], workspace [B, 5H] = r, z, n, hp, hh_n + b_hn), the
    layout of PyTorch's fused cell. hidden_bias [3H]: zeros, then b_hn."""
    torch = _torch()
    if fused:
        return torch.ops.aten._thnn_fused_gru_cell(x, hh, hp, bi, hidden_bias)
    H = hp.shape[1]
    g = x + bi
    hn = hh[:, 2 * H:] + hidden_bias[2 * H:]
    r = torch.sigmoid(g[:, :H] + hh[:, :H])
    z = torch.sigmoid(g[:, H:2 * H] + hh[:, H:2 * H])
    n = torch.tanh(g[:, 2 * H:] + r * hn)
    h = (1 - z) * n + z * hp
    return h, torch.cat([r, z, n, hp, hn], 1)


def _cell_backward(dh, workspace, fused: bool):
    """A step's backward from dloss/dh' [B, H]: (d input gates [B, 3H] (= d x and d b_i),
    d hidden gates [B, 3H] (= d hh), dloss/dhp through the z * hp term only)."""
    torch = _torch()
    if fused:
        d_input, d_hidden, d_hp, _, _ = torch.ops.aten._thnn_fused_gru_cell_backward(dh, workspace, False)
        return d_input, d_hidden, d_hp
    r, z, n, hp, hn = workspace.chunk(5, 1)
    da_n = dh * (1 - z) * (1 - n * n)
    da_r = da_n * hn * r * (1 - r)
    da_z = dh * (hp - n) * z * (1 - z)
    return torch.cat([da_r, da_z, da_n], 1), torch.cat([da_r, da_z, da_n * r], 1), dh * z


def gru_sequence(xs, keeps, h0, Wh, bi, bhn, fused: bool | None = None):
    """numpy_ppo.forward's GRU over T steps as one autograd op.

    xs [T, B, 3H]: each step's input part x_t W_i (gates r, z, n; no bias); keeps [T, B] (bool or
    the float dtype): 0 zeroes the state before that step; h0 [B, H]; Wh [H, 3H] (hr, hz, hn);
    bi [3H] (b_ir, b_iz, b_in); bhn [H]; one dtype and device. fused: PyTorch's fused cell
    kernel (default: on a CUDA device). Returns (hs [T, B, H], h_T); gradients flow to xs, h0,
    Wh, bi and bhn."""
    torch = _torch()
    if fused is None:
        fused = xs.is_cuda
    keeps = keeps.to(xs.dtype).unsqueeze(-1)
    hidden_bias = torch.cat([bhn.new_zeros(2 * bhn.shape[0]), bhn])
    return _gru_sequence_function().apply(xs, keeps, h0, Wh, bi, hidden_bias, bool(fused))


@functools.lru_cache(maxsize=1)
def _gru_sequence_function():
    """The autograd Function, made on first use: importing this module needs no torch."""
    torch = _torch()

    class GruSequence(torch.autograd.Function):
        @staticmethod
        def forward(ctx, xs, keeps, h0, Wh, bi, hidden_bias, fused):
            T = xs.shape[0]
            h, states, workspaces = h0, [], []
            for t in range(T):
                hp = h * keeps[t]
                h, ws = _cell(xs[t], torch.mm(hp, Wh), hp, bi, hidden_bias, fused)
                states.append(h)
                workspaces.append(ws)
            hs = torch.stack(states)
            ctx.save_for_backward(keeps, Wh, torch.stack(workspaces))
            ctx.fused = fused
            ctx.set_materialize_grads(False)
            return hs, h

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, grad_hs, grad_h_last):
            keeps, Wh, workspaces = ctx.saved_tensors
            T, B, H5 = workspaces.shape
            H = H5 // 5
            dh_next = grad_h_last
            d_inputs, d_hiddens = [None] * T, [None] * T
            wh_t = Wh.t()
            for t in range(T - 1, -1, -1):
                if grad_hs is None:
                    dh = workspaces.new_zeros((B, H)) if dh_next is None else dh_next
                else:
                    dh = grad_hs[t] if dh_next is None else grad_hs[t] + dh_next
                d_inputs[t], d_hiddens[t], d_hp = _cell_backward(dh.contiguous(), workspaces[t], ctx.fused)
                dh_next = torch.addmm(d_hp, d_hiddens[t], wh_t) * keeps[t]
            d_input = torch.stack(d_inputs)
            d_hidden = torch.stack(d_hiddens).reshape(T * B, 3 * H)
            states_before = workspaces[:, :, 3 * H:4 * H].reshape(T * B, H)  # hp: each step's state after the reset
            grad_wh = torch.mm(states_before.t(), d_hidden) if ctx.needs_input_grad[3] else None
            grad_bi = d_input.sum((0, 1)) if ctx.needs_input_grad[4] else None
            grad_hidden_bias = d_hidden.sum(0) if ctx.needs_input_grad[5] else None
            return d_input, None, dh_next, grad_wh, grad_bi, grad_hidden_bias, None

    return GruSequence


# -- the model --------------------------------------------------------------------------------
class PaperActorCritic:
    """numpy_ppo's ActorCriticRNN in PyTorch: master weights `weights` (by flax name) in `dtype`
    (default float32) on `device`. Inputs: float obs [T, B, obs_size] (cast to the weights' dtype),
    dones bool [T, B], h0 [B, hidden]. fused_cell: the GRU's fused cell kernel (default: on CUDA)."""

    def __init__(self, params: dict, device, dtype=None, fused_cell: bool | None = None):
        torch = _torch()
        self.dtype = dtype or torch.float32
        self.cfg = config_of(params)
        self.device = torch.device(device)
        if fused_cell and self.device.type != "cuda":
            raise ValueError("fused_cell needs a CUDA device (PyTorch's fused GRU cell has no CPU kernel)")
        self.fused_cell = self.device.type == "cuda" if fused_cell is None else bool(fused_cell)
        self.names = list(numpy_ppo.param_shapes(self.cfg))
        self.weights = {k: torch.nn.Parameter(torch.as_tensor(np.ascontiguousarray(params[k]), dtype=self.dtype,
                                                              device=self.device)) for k in self.names}

    def parameters(self) -> list:
        return [self.weights[k] for k in self.names]

    def numpy_params(self) -> dict[str, np.ndarray]:
        return {k: v.detach().cpu().numpy().copy() for k, v in self.weights.items()}

    def load(self, params: dict) -> None:
        torch = _torch()
        numpy_ppo.check_params({k: np.asarray(params[k]) for k in params}, self.cfg)
        with torch.no_grad():
            for k in self.names:
                self.weights[k].copy_(torch.as_tensor(np.asarray(params[k]), dtype=self.dtype))

    def forward(self, obs, dones, h0):
        """-> (h_T [B, hidden], logits [T, B, num_actions], values [T, B]), in the weights' dtype."""
        torch = _torch()
        p = self.weights
        T, B = dones.shape
        x = obs.reshape(T * B, -1).to(self.dtype)
        emb = torch.relu(torch.addmm(p[f"{EMBED}/bias"], x, p[f"{EMBED}/kernel"]))
        Wi = torch.cat([p[f"{GRU}/{g}/kernel"] for g in ("ir", "iz", "in")], 1)
        bi = torch.cat([p[f"{GRU}/{g}/bias"] for g in ("ir", "iz", "in")])
        Wh = torch.cat([p[f"{GRU}/{g}/kernel"] for g in ("hr", "hz", "hn")], 1)
        xs = torch.mm(emb, Wi).reshape(T, B, -1)
        hs, h = gru_sequence(xs, ~dones, h0.to(self.dtype), Wh, bi, p[f"{GRU}/hn/bias"], fused=self.fused_cell)
        y = hs.reshape(T * B, -1)
        outs = []
        for names in (ACTOR, CRITIC):
            a = y
            for i, name in enumerate(names):
                a = torch.addmm(p[f"{name}/bias"], a, p[f"{name}/kernel"])
                if i < 2:
                    a = torch.relu(a)
            outs.append(a)
        return h, outs[0].reshape(T, B, -1), outs[1].reshape(T, B)
