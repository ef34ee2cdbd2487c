"""The fast recipe's CUDA kernels (cuda/fast_cuda.h) as PyTorch operations.

    features = encode_cells(records, weight, bias, width)   # differentiable in weight and bias

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
        _ptr(ffi, "float *", gw), _ptr(ffi, "float *", gb), _ptr(ffi, "void *", partials), _stream()),
        "encode_cells_backward")
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
