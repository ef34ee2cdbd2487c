"""Split a `pycraftax train` checkpoint into size-capped compressed parts, and join them back.

Why: a long GPU run (the paper recipe's 1e9 steps: ~1 hour at 275 k steps/s) may have to be
spread over several machine leases whose file transfers are capped (ours: 16 MiB a file,
64 MiB a call). The paper recipe's checkpoint is ~82 MB of fp32 weights and Adam moments plus
~150 MB of env states; float32 data with random mantissas does not compress much below
3.4 bytes a value, so the weights and moments alone do not fit losslessly.

    python bench/checkpoint_parts.py split RUN/checkpoint.npz PARTS_DIR [--moments bf16] [--part-mib 15]
    python bench/checkpoint_parts.py join PARTS_DIR RUN2/checkpoint.npz

`--moments exact` (default) keeps every array bit for bit, in its memory order. `--moments bf16` rounds Adam's
first and second moments (`opt/mu/*`, `opt/nu/*`) to bfloat16 (round to nearest even, stored
as the top 16 bits of the float32; bf16 keeps 8 significant bits, so each entry changes by at
most 2^-8 of itself), once per split, while the weights, env states, keys, hidden states and
counters stay exact. The joined checkpoint records every such rounding in its meta
(`moments_rounded`: the updates at which it happened), so a run's report can say exactly how
it differs from an uninterrupted one.

Encoding: each array is byte-plane shuffled (all first bytes, then all second bytes, ...: the
sign/exponent planes of floats compress, the low mantissa planes do not) and deflated as
independent chunks in parallel threads; the chunks are concatenated and cut into parts.
manifest.json lists the arrays, chunks, parts and SHA-256 sums, which `join` checks.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

FORMAT = "pycraftax-checkpoint-parts/1"
CHUNK_BYTES = 4 << 20  # independent deflate chunks: parallel compression at the same ratio
MOMENT_PREFIXES = ("opt/mu/", "opt/nu/")


def to_bf16_bits(a: np.ndarray) -> np.ndarray:
    """float32 -> the top 16 bits of its bfloat16 rounding (to nearest, ties to even). NaN and
    inf do not occur in Adam moments of a finite run; they are rejected, not rounded."""
    a = np.asarray(a, np.float32, order="C")
    if not np.all(np.isfinite(a)):
        raise ValueError("bf16 rounding of non-finite Adam moments")
    u = a.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _shuffle(raw: bytes, itemsize: int) -> bytes:
    if itemsize == 1:
        return raw
    return np.frombuffer(raw, np.uint8).reshape(-1, itemsize).T.tobytes()


def _unshuffle(data: bytes, itemsize: int) -> bytes:
    if itemsize == 1:
        return data
    return np.frombuffer(data, np.uint8).reshape(itemsize, -1).T.tobytes()


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def split(checkpoint: str, out_dir: str, moments: str = "exact", part_mib: float = 15.0, level: int = 6,
          threads: int | None = None) -> dict:
    if moments not in ("exact", "bf16"):
        raise ValueError(f"moments must be 'exact' or 'bf16', got {moments!r}")
    if not part_mib > 0:
        raise ValueError(f"part_mib must be positive, got {part_mib}")
    with np.load(checkpoint, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    if moments == "bf16":
        meta.setdefault("moments_rounded", []).append({"update": meta["update"], "to": "bfloat16"})
    arrays["meta"] = np.array(json.dumps(meta))

    entries, blobs = [], []
    for name, a in arrays.items():
        encoding = "raw"
        # the memory order travels too: the trainer's GEMMs round differently on a transposed
        # (Fortran-ordered) operand, so a resumed run is bit-exact only with the saved layout
        order = "F" if a.ndim > 1 and a.flags.f_contiguous and not a.flags.c_contiguous else "C"
        if moments == "bf16" and name.startswith(MOMENT_PREFIXES) and a.dtype == np.float32:
            a, encoding = to_bf16_bits(a), "bf16"
        a = np.asarray(a, order=order)  # (ascontiguousarray would make 0-d arrays 1-d)
        raw = a.tobytes(order=order)
        shuffled = _shuffle(raw, a.dtype.itemsize)
        entries.append(dict(name=name, dtype=a.dtype.str, shape=list(a.shape), order=order, encoding=encoding,
                            sha256=_sha(raw), chunks=[]))
        for lo in range(0, max(len(shuffled), 1), CHUNK_BYTES):
            blobs.append((len(entries) - 1, shuffled[lo:lo + CHUNK_BYTES]))
    with ThreadPoolExecutor(threads or os.cpu_count()) as pool:  # zlib releases the GIL
        packed = list(pool.map(lambda b: zlib.compress(b[1], level), blobs))

    stream = io.BytesIO()
    for (i, _), c in zip(blobs, packed):
        entries[i]["chunks"].append([stream.tell(), len(c)])
        stream.write(c)
    data = stream.getvalue()
    os.makedirs(out_dir, exist_ok=True)
    part_bytes = int(part_mib * (1 << 20))
    parts = []
    for k, lo in enumerate(range(0, len(data), part_bytes)):
        piece = data[lo:lo + part_bytes]
        fname = f"part{k:02d}.bin"
        Path(out_dir, fname).write_bytes(piece)
        parts.append(dict(file=fname, bytes=len(piece), sha256=_sha(piece)))
    manifest = dict(format=FORMAT, source=os.path.basename(checkpoint), update=meta["update"], moments=moments,
                    total_bytes=len(data), arrays=entries, parts=parts)
    Path(out_dir, "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def join(parts_dir: str, checkpoint: str) -> dict:
    from pycraftax.train.trainer import write_npz_fast

    manifest = json.loads(Path(parts_dir, "manifest.json").read_text())
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{parts_dir}/manifest.json: format {manifest.get('format')!r}, expected {FORMAT!r}")
    pieces = []
    for p in manifest["parts"]:
        piece = Path(parts_dir, p["file"]).read_bytes()
        if len(piece) != p["bytes"] or _sha(piece) != p["sha256"]:
            raise ValueError(f"{parts_dir}/{p['file']}: size or SHA-256 differs from the manifest (damaged copy)")
        pieces.append(piece)
    data = b"".join(pieces)
    arrays = {}
    for e in manifest["arrays"]:
        dtype = np.dtype(e["dtype"])
        shuffled = b"".join(zlib.decompress(data[off:off + n]) for off, n in e["chunks"])
        raw = _unshuffle(shuffled, dtype.itemsize)
        if _sha(raw) != e["sha256"]:
            raise ValueError(f"array {e['name']}: SHA-256 differs after decoding")
        a = np.frombuffer(raw, dtype).reshape(tuple(e["shape"]), order=e.get("order", "C"))
        arrays[e["name"]] = from_bf16_bits(a) if e["encoding"] == "bf16" else a
    d = os.path.dirname(os.path.abspath(checkpoint))
    os.makedirs(d, exist_ok=True)
    tmp = f"{checkpoint}.tmp{os.getpid()}"
    write_npz_fast(tmp, arrays)
    os.replace(tmp, checkpoint)
    return manifest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("split", help="checkpoint.npz -> PARTS_DIR/manifest.json + part*.bin")
    s.add_argument("checkpoint")
    s.add_argument("out_dir")
    s.add_argument("--moments", choices=("exact", "bf16"), default="exact")
    s.add_argument("--part-mib", type=float, default=15.0)
    s.add_argument("--level", type=int, default=6, choices=range(1, 10), metavar="1..9", help="deflate level")
    j = sub.add_parser("join", help="PARTS_DIR -> checkpoint.npz (checks every SHA-256)")
    j.add_argument("parts_dir")
    j.add_argument("checkpoint")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "split":
            m = split(args.checkpoint, args.out_dir, args.moments, args.part_mib, args.level)
            print(f"{args.checkpoint} (update {m['update']}, moments {m['moments']}) -> {len(m['parts'])} parts, "
                  f"{m['total_bytes'] / 2**20:.1f} MiB in {args.out_dir}")
        else:
            m = join(args.parts_dir, args.checkpoint)
            print(f"{args.parts_dir} -> {args.checkpoint} (update {m['update']}, moments {m['moments']})")
    except (OSError, ValueError) as e:
        print(f"checkpoint_parts: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
