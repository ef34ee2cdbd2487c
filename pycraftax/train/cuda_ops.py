"""The fast recipe's CUDA kernels (cuda/fast_cuda.h) as PyTorch operations.

    features = encode_cells(records, weight, bias, width)   # differentiable in weight and bias
    hs, h_last = gru_sequence(xs, keeps, h0, Wh, bi, bhn)   # differentiable in all but keeps
    hs, h_last = mingru_sequence(gates, keeps, h0)          # differentiable in gates and h0

Where PyTorch's deterministic mode is on (torch.use_deterministic_algorithms(True), which
`pycraftax train --deterministic` sets), the cell encoder's backward sums without atomics, so a
run repeats bit for bit; the other kernels are deterministic either way.

The kernels live in the CUDA library (libcraftax_cuda.so) beside the env; cffi binds them from
the header that describes that library, as pycraftax.cuda_env does for the env.
"""

from __future__ import annotations

import functools

HEADER = "fast_cuda.h"


@functools.lru_cache(maxsize=1)
def _bind():
    """(ffi, lib) of the fast kernels in the CUDA library; RuntimeError where there is none."""
    from cffi import FFI

    from pycraftax import cuda_env
    from pycraftax._cdef import cdef_declarations

    path = cuda_env.library_path()
    if path is None:
        raise RuntimeError("the fast recipe's GPU kernels need the CUDA library (libcraftax_cuda.so): build it with "
                           "`make -C cuda`, or reinstall pycraftax where nvcc is found")
    header = cuda_env.find_header(HEADER, path)
    ffi = FFI()
    ffi.cdef(cdef_declarations(header.read_text()))
    lib = ffi.dlopen(str(path))
    try:
        version = lib.craftax_fast_api_version()
    except AttributeError:
        raise RuntimeError(f"{path} has no fast-recipe kernels: rebuild it (make -C cuda)") from None
    if version != lib.CRAFTAX_FAST_API_VERSION:
        raise RuntimeError(f"{path} has fast-kernel API {version}, {header} describes "
                           f"{lib.CRAFTAX_FAST_API_VERSION}: rebuild the library")
    return ffi, lib


def _check(code: int, what: str) -> None:
    if code != 0:
        ffi, lib = _bind()
        raise RuntimeError(f"{what}: {ffi.string(lib.craftax_fast_last_error()).decode()} (code {code})")


def _checked_records(records):
    import torch

    if records.dtype != torch.uint8 or records.dim() != 2 or not records.is_cuda:
        raise ValueError(f"records must be a CUDA uint8 tensor [rows, record_bytes], got {records.dtype} "
                         f"{tuple(records.shape)} on {records.device}")
    if not records.is_contiguous():
        records = records.contiguous()
    return records


def _stream() -> int:
    import torch

    return torch.cuda.current_stream().cuda_stream


def _ptr(ffi, ctype: str, t):
    return ffi.cast(ctype, t.data_ptr())


def encode_cells(records, weight, bias, width: int):
    """fast_model's cell encoder of compact records [R, record_bytes] (CUDA uint8): bfloat16
    features [R, width], differentiable in weight [83, C] and bias [C] (fp32)."""
    return _encode_cells_function().apply(_checked_records(records), weight, bias, int(width))


def encode_cells_backward(records, weight, bias, grad, width: int):
    """(grad_weight, grad_bias) of encode_cells from the features' gradient grad [R, width]
    (bfloat16 or float32; an autograd gradient of the bfloat16 features is bfloat16)."""
    import torch

    ffi, lib = _bind()
    records = _checked_records(records)
    w, b = weight.detach().float().contiguous(), bias.detach().float().contiguous()
    C = w.shape[1]
    grad = grad.contiguous()
    if grad.dtype not in (torch.bfloat16, torch.float32):
        grad = grad.float()
    gw, gb = torch.empty_like(w), torch.empty_like(b)
    partials = torch.empty(lib.craftax_fast_encode_cells_partials_bytes(records.shape[0], C), dtype=torch.uint8,
                           device=records.device)
    _check(lib.craftax_fast_encode_cells_backward(
        _ptr(ffi, "uint8_t *", records), records.shape[0], records.shape[1], _ptr(ffi, "float *", w),
        _ptr(ffi, "float *", b), C, _ptr(ffi, "void *", grad), int(grad.dtype == torch.float32), width,
        int(torch.are_deterministic_algorithms_enabled()), _ptr(ffi, "float *", gw), _ptr(ffi, "float *", gb),
        _ptr(ffi, "void *", partials), _stream()), "encode_cells_backward")
    return gw, gb


@functools.lru_cache(maxsize=1)
def _encode_cells_function():
    """The autograd Function, made on first use: importing this module needs no torch."""
    import torch

    class EncodeCells(torch.autograd.Function):
        @staticmethod
        def forward(ctx, records, weight, bias, width):
            ffi, lib = _bind()
            C = weight.shape[1]
            least = lib.CRAFTAX_FAST_CELLS * C + lib.CRAFTAX_FAST_SCALARS
            if width < least or width % 8:
                raise ValueError(f"width must be a multiple of 8 >= {least}, got {width}")
            w, b = weight.detach().float().contiguous(), bias.detach().float().contiguous()
            out = torch.empty((records.shape[0], width), dtype=torch.bfloat16, device=records.device)
            _check(lib.craftax_fast_encode_cells(_ptr(ffi, "uint8_t *", records), records.shape[0], records.shape[1],
                                                 _ptr(ffi, "float *", w), _ptr(ffi, "float *", b), C,
                                                 _ptr(ffi, "void *", out), width, _stream()), "encode_cells")
            ctx.save_for_backward(records, w, b)
            ctx.width = width
            return out

        @staticmethod
        def backward(ctx, grad):
            records, w, b = ctx.saved_tensors
            gw, gb = encode_cells_backward(records, w, b, grad, ctx.width)
            return None, gw, gb, None

    return EncodeCells


def gru_sequence(xs, keeps, h0, Wh, bi, bhn):
    """fast_model.TorchActorCritic.core's GRU over T steps in one autograd op on the GPU: a cuBLAS
    GEMM and one kernel a step forward, one kernel and one GEMM a step backward, then the
    gradients of Wh (one GEMM over all T * B rows) and of the biases (one sum each).

    xs float32 [T, B, 3H] (the inputs' part x_t W_i, gates r, z, n, without bias), keeps bool or
    float32 [T, B] (0 resets the state before that step), h0 float32 [B, H], Wh float32 or bfloat16
    [H, 3H] (used as bfloat16), bi float32 [3H] (the input biases), bhn float32 [H] (the hidden
    bias of gate n, inside r * (...)); all on one CUDA device, H a multiple of 4. Returns hs
    float32 [T, B, H] (every step's state) and h_last [B, H] (= hs[T-1]); gradients flow to xs,
    h0, Wh, bi and bhn."""
    import torch

    _check_gru_args(xs, keeps, h0, Wh, bi, bhn)
    if keeps.dtype == torch.bool:
        keeps = keeps.to(torch.float32)
    return _gru_sequence_function().apply(xs, keeps, h0, Wh, bi, bhn)


def _check_gru_args(xs, keeps, h0, Wh, bi, bhn) -> None:
    """ValueError naming the first argument of gru_sequence with a wrong type, dtype, shape,
    device or layout."""
    import torch

    f32, bf16 = torch.float32, torch.bfloat16
    if not torch.is_tensor(xs) or xs.dtype != f32 or xs.dim() != 3 or not xs.is_cuda:
        raise ValueError("xs must be a CUDA float32 tensor [T, B, 3H], got "
                         + (f"{xs.dtype} {tuple(xs.shape)} on {xs.device}" if torch.is_tensor(xs) else type(xs).__name__))
    T, B, G = xs.shape
    if T < 1 or B < 1 or G % 12:
        raise ValueError(f"xs [T, B, 3H] needs T >= 1, B >= 1 and H a positive multiple of 4, got {tuple(xs.shape)}")
    H = G // 3
    expected = (("xs", xs, (T, B, 3 * H), (f32,)), ("keeps", keeps, (T, B), (torch.bool, f32)),
                ("h0", h0, (B, H), (f32,)), ("Wh", Wh, (H, 3 * H), (f32, bf16)), ("bi", bi, (3 * H,), (f32,)),
                ("bhn", bhn, (H,), (f32,)))
    for name, t, shape, dtypes in expected:
        if not torch.is_tensor(t):
            raise ValueError(f"{name} must be a tensor, got {type(t).__name__}")
        if t.dtype not in dtypes:
            raise ValueError(f"{name} must be {' or '.join(str(d) for d in dtypes)}, got {t.dtype}")
        if tuple(t.shape) != shape:
            raise ValueError(f"{name} must have shape {shape} (T, B, H = {T}, {B}, {H} from xs), got {tuple(t.shape)}")
        if t.device != xs.device:
            raise ValueError(f"{name} must be on xs' device {xs.device}, got {t.device}")
        if name != "Wh" and not t.is_contiguous():  # Wh is copied to bfloat16 anyway
            raise ValueError(f"{name} must be contiguous")


def _mm_f32(a, b, out=None):
    """a @ b of bfloat16 matrices with fp32 accumulation and an fp32 result (cuBLAS)."""
    import torch

    if out is None:
        return torch.mm(a, b, out_dtype=torch.float32)
    return torch.mm(a, b, out_dtype=torch.float32, out=out)


@functools.lru_cache(maxsize=1)
def _gru_sequence_function():
    """The autograd Function, made on first use: importing this module needs no torch."""
    import torch

    class GruSequence(torch.autograd.Function):
        @staticmethod
        def forward(ctx, xs, keeps, h0, Wh, bi, bhn):
            ffi, lib = _bind()
            T, B, G = xs.shape
            H = G // 3
            dev, f32, bf16 = xs.device, torch.float32, torch.bfloat16
            wh = Wh.detach().to(bf16).contiguous()
            operands = torch.empty((T, B, H), dtype=bf16, device=dev)
            gates_h = torch.empty((T, B, G), dtype=f32, device=dev)
            hs = torch.empty((T, B, H), dtype=f32, device=dev)
            h_last = torch.empty((B, H), dtype=f32, device=dev)
            stream = _stream()
            fp = functools.partial(_ptr, ffi, "float *")
            p_xs, p_gates, p_h0, p_keeps, p_bi, p_bhn, p_hs, p_last = map(fp, (xs, gates_h, h0, keeps, bi, bhn, hs,
                                                                               h_last))
            p_ops = _ptr(ffi, "void *", operands)
            _check(lib.craftax_fast_gru_forward_begin(p_h0, p_keeps, p_ops, B, H, stream), "gru_forward_begin")
            for t in range(T):
                _mm_f32(operands[t], wh, out=gates_h[t])
                _check(lib.craftax_fast_gru_forward_step(p_xs, p_gates, p_h0, p_keeps, p_bi, p_bhn, p_hs, p_last,
                                                         p_ops, T, B, H, t, stream), "gru_forward_step")
            ctx.save_for_backward(xs, keeps, h0, wh, bi, bhn, hs, gates_h, operands)
            ctx.wh_dtype = Wh.dtype
            ctx.set_materialize_grads(False)
            return hs, h_last

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, grad_hs, grad_h_last):
            xs, keeps, h0, wh, bi, bhn, hs, gates_h, operands = ctx.saved_tensors
            need_xs, _, need_h0, need_wh, need_bi, need_bhn = ctx.needs_input_grad
            if grad_hs is None and grad_h_last is None:
                return None, None, None, None, None, None
            ffi, lib = _bind()
            T, B, G = xs.shape
            H = G // 3
            dev, f32 = xs.device, torch.float32
            grad_hs = None if grad_hs is None else grad_hs.to(f32).contiguous()
            grad_h_last = None if grad_h_last is None else grad_h_last.to(f32).contiguous()
            grad_xs = torch.empty((T, B, G), dtype=f32, device=dev)
            grad_gates_h = torch.empty((T, B, G), dtype=torch.bfloat16, device=dev)
            grad_hn = torch.empty((T, B, H), dtype=f32, device=dev) if need_bhn else None
            grad_hp_direct = torch.empty((B, H), dtype=f32, device=dev)
            grad_hp_gemm = torch.empty((B, H), dtype=f32, device=dev)
            stream = _stream()

            def fp(t):
                return ffi.NULL if t is None else _ptr(ffi, "float *", t)

            args = [fp(t) for t in (xs, gates_h, h0, keeps, bi, bhn, hs, grad_hs, grad_h_last, grad_hp_direct,
                                    grad_hp_gemm, grad_xs)]
            args += [_ptr(ffi, "void *", grad_gates_h), fp(grad_hn), T, B, H]
            wh_t = wh.t()
            for t in range(T - 1, -1, -1):
                _check(lib.craftax_fast_gru_backward_step(*args, t, stream), "gru_backward_step")
                if t > 0 or need_h0:
                    _mm_f32(grad_gates_h[t], wh_t, out=grad_hp_gemm)
            grad_h0 = None
            if need_h0:
                grad_h0 = torch.empty((B, H), dtype=f32, device=dev)
                _check(lib.craftax_fast_gru_backward_end(fp(grad_hp_direct), fp(grad_hp_gemm), fp(keeps), fp(grad_h0),
                                                         B, H, stream), "gru_backward_end")
            grad_wh = None
            if need_wh:
                grad_wh = _mm_f32(operands.view(T * B, H).t(), grad_gates_h.view(T * B, G)).to(ctx.wh_dtype)
            grad_bi = grad_xs.view(T * B, G).sum(0) if need_bi else None
            grad_bhn = grad_hn.view(T * B, H).sum(0) if need_bhn else None
            return grad_xs if need_xs else None, None, grad_h0, grad_wh, grad_bi, grad_bhn

    return GruSequence


def mingru_sequence(gates, keeps, h0):
    """fast_model.TorchActorCritic.mingru's recurrence over T steps in one autograd op on the GPU:
    one kernel forward, one backward (cuda/fast_cuda.h).

    gates bfloat16 or float32 [T, B, 2H] (the pre-activations of z, then of the candidate, biases
    included), keeps bool or float32 [T, B] (0 resets the state before that step), h0 float32
    [B, H]; all on one CUDA device. Returns hs float32 [T, B, H] and h_last [B, H] (= hs[T-1]);
    gradients flow to gates (in their dtype) and h0."""
    import torch

    if not torch.is_tensor(gates) or gates.dtype not in (torch.float32, torch.bfloat16) or gates.dim() != 3 \
            or not gates.is_cuda:
        raise ValueError("gates must be a CUDA float32 or bfloat16 tensor [T, B, 2H], got "
                         + (f"{gates.dtype} {tuple(gates.shape)} on {gates.device}" if torch.is_tensor(gates)
                            else type(gates).__name__))
    T, B, G = gates.shape
    if T < 1 or B < 1 or G < 2 or G % 2:
        raise ValueError(f"gates [T, B, 2H] needs T >= 1, B >= 1 and an even last dimension, got {tuple(gates.shape)}")
    for name, t, shape, dtypes in (("keeps", keeps, (T, B), (torch.bool, torch.float32)),
                                   ("h0", h0, (B, G // 2), (torch.float32,))):
        if not torch.is_tensor(t) or t.dtype not in dtypes or tuple(t.shape) != shape or t.device != gates.device:
            raise ValueError(f"{name} must be a {' or '.join(str(d) for d in dtypes)} tensor of shape {shape} on "
                             f"{gates.device} (T, B, H from gates), got "
                             + (f"{t.dtype} {tuple(t.shape)} on {t.device}" if torch.is_tensor(t) else type(t).__name__))
    if keeps.dtype == torch.bool:
        keeps = keeps.to(torch.float32)
    return _mingru_sequence_function().apply(gates.contiguous(), keeps.contiguous(), h0.contiguous())


@functools.lru_cache(maxsize=1)
def _mingru_sequence_function():
    """The autograd Function, made on first use: importing this module needs no torch."""
    import torch

    class MinGruSequence(torch.autograd.Function):
        @staticmethod
        def forward(ctx, gates, keeps, h0):
            ffi, lib = _bind()
            T, B, G = gates.shape
            H = G // 2
            hs = torch.empty((T, B, H), dtype=torch.float32, device=gates.device)
            h_last = torch.empty((B, H), dtype=torch.float32, device=gates.device)
            fp = functools.partial(_ptr, ffi, "float *")
            _check(lib.craftax_fast_mingru_forward(_ptr(ffi, "void *", gates), int(gates.dtype == torch.float32),
                                                   fp(keeps), fp(h0), fp(hs), fp(h_last), T, B, H, _stream()),
                   "mingru_forward")
            ctx.save_for_backward(gates, keeps, h0, hs)
            ctx.set_materialize_grads(False)
            return hs, h_last

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, grad_hs, grad_h_last):
            gates, keeps, h0, hs = ctx.saved_tensors
            need_gates, _, need_h0 = ctx.needs_input_grad
            if grad_hs is None and grad_h_last is None:
                return None, None, None
            ffi, lib = _bind()
            T, B, G = gates.shape
            f32 = torch.float32
            grad_hs = None if grad_hs is None else grad_hs.to(f32).contiguous()
            grad_h_last = None if grad_h_last is None else grad_h_last.to(f32).contiguous()
            grad_gates = torch.empty_like(gates)
            grad_h0 = torch.empty_like(h0) if need_h0 else None

            def fp(t):
                return ffi.NULL if t is None else _ptr(ffi, "float *", t)

            _check(lib.craftax_fast_mingru_backward(_ptr(ffi, "void *", gates), int(gates.dtype == f32), fp(keeps),
                                                    fp(h0), fp(hs), fp(grad_hs), fp(grad_h_last),
                                                    _ptr(ffi, "void *", grad_gates), fp(grad_h0), T, B, G // 2,
                                                    _stream()), "mingru_backward")
            return grad_gates if need_gates else None, None, grad_h0
    return MinGruSequence
