"""bench/checkpoint_parts.py: a checkpoint split into capped parts and joined back resumes the
run (bit-exactly with exact moments; with bf16 moments only Adam's moments change)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import checkpoint_parts as cp

from pycraftax.train.trainer import TrainConfig, Trainer, set_blas_threads

TINY = dict(num_envs=4, num_steps=8, total_timesteps=4 * 8 * 4, update_epochs=2, num_minibatches=2, width=16,
            hidden=8, checkpoint_every=1, seed=5)

set_blas_threads(1)


@pytest.fixture(scope="module")
def halfway(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    t = Trainer(TrainConfig(**TINY), str(d))
    t.run(max_updates=2, progress=False)
    return str(d / "checkpoint.npz")


def _load(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def test_exact_round_trip_resumes_bit_exactly(halfway, tmp_path):
    m = cp.split(halfway, str(tmp_path / "parts"), part_mib=0.05)  # many small parts
    assert len(m["parts"]) > 2 and all(p["bytes"] <= 0.05 * 2**20 for p in m["parts"])
    cp.join(str(tmp_path / "parts"), str(tmp_path / "b" / "checkpoint.npz"))
    a, b = _load(halfway), _load(str(tmp_path / "b" / "checkpoint.npz"))
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k
        # the layout too: a transposed GEMM operand rounds differently
        assert a[k].flags.f_contiguous == b[k].flags.f_contiguous, k
    assert any(v.ndim > 1 and not v.flags.c_contiguous for v in a.values()), "no Fortran-ordered array to carry"
    straight = Trainer.resume(halfway, out_dir=str(tmp_path / "a"))
    straight.run(progress=False)
    moved = Trainer.resume(str(tmp_path / "b" / "checkpoint.npz"))
    moved.run(progress=False)
    for k in straight.params:
        assert np.array_equal(straight.params[k], moved.params[k]), k


def test_bf16_moments_change_only_the_moments(halfway, tmp_path):
    cp.split(halfway, str(tmp_path / "parts"), moments="bf16")
    cp.join(str(tmp_path / "parts"), str(tmp_path / "j.npz"))
    a, b = _load(halfway), _load(str(tmp_path / "j.npz"))
    moments = [k for k in a if k.startswith(("opt/mu/", "opt/nu/"))]
    assert len(moments) == 2 * len([k for k in a if k.startswith("params/")])
    changed = 0
    for k in a:
        if k == "meta":
            continue
        if k in moments:
            assert b[k].dtype == np.float32
            assert np.all(np.abs(b[k] - a[k]) <= np.abs(a[k]) * 2.0**-8), k
            assert np.all(b[k].view(np.uint32) & 0xFFFF == 0), k
            changed += int(np.any(b[k] != a[k]))
        else:
            assert np.array_equal(a[k], b[k]), k
    assert changed > 0
    meta = json.loads(str(b["meta"]))
    assert meta["moments_rounded"] == [{"update": 2, "to": "bfloat16"}]
    assert Trainer.resume(str(tmp_path / "j.npz"), out_dir=str(tmp_path / "r")).update == 2


def test_bf16_rounding_is_to_nearest_even():
    x = np.array([1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, 1.0 + 2**-8 + 2**-20, -2.5e-7, 0.0], np.float32)
    want = np.array([1.0, 1.0, 1.0 + 4 * 2**-8, 1.0 + 2 * 2**-8, None, 0.0], object)
    got = cp.from_bf16_bits(cp.to_bf16_bits(x))
    for g, w in zip(got, want):
        if w is not None:
            assert g == np.float32(w)
    assert abs(got[4] - x[4]) <= abs(x[4]) * 2**-8
    with pytest.raises(ValueError, match="non-finite"):
        cp.to_bf16_bits(np.array([np.nan], np.float32))


def test_damaged_part_is_refused(halfway, tmp_path):
    m = cp.split(halfway, str(tmp_path / "parts"))
    p = tmp_path / "parts" / m["parts"][0]["file"]
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 1
    p.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="damaged"):
        cp.join(str(tmp_path / "parts"), str(tmp_path / "x.npz"))
    assert cp.main(["join", str(tmp_path / "parts"), str(tmp_path / "x.npz")]) == 2
