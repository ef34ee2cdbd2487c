"""Weights as named numpy arrays following the flax parameter tree of the Craftax_Baselines
`ppo_rnn.py` ActorCriticRNN: flat names like "params/Dense_0/kernel" or
"params/ScannedRNN_0/GRUCell_0/hn/bias"; kernels [in, out].

    flat = export_flat(params)            # {"params/Dense_0/kernel": array, ...}
    tree = to_flax_tree(params)           # {"params": {"Dense_0": {"kernel": ...}}} for flax .apply
    params = from_flax_tree(tree)         # back (accepts a flax FrozenDict / jax arrays too)
    save_npz(path, params); load_npz(path)

`read_npz` is the one reader of the trainer's files (checkpoint.npz, params.npz): anything
else raises NotACheckpointError, which names the file and what was expected.
"""

from __future__ import annotations

import os
import zipfile

import numpy as np

from pycraftax.train.numpy_ppo import ModelConfig, check_params, param_shapes


def export_flat(params: dict, dtype=None) -> dict[str, np.ndarray]:
    return {k: np.array(v, dtype=dtype if dtype is not None else np.asarray(v).dtype) for k, v in params.items()}


def to_flax_tree(params: dict) -> dict:
    tree: dict = {}
    for name, value in params.items():
        node = tree
        parts = name.split("/")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = np.asarray(value)
    return tree


def from_flax_tree(tree, dtype=None) -> dict[str, np.ndarray]:
    flat: dict[str, np.ndarray] = {}

    def walk(node, prefix):
        if hasattr(node, "items"):
            for k, v in node.items():
                walk(v, f"{prefix}/{k}" if prefix else str(k))
        else:
            arr = np.asarray(node)
            flat[prefix] = arr.astype(dtype) if dtype is not None else np.array(arr)

    walk(tree, "")
    return dict(sorted(flat.items()))


def infer_model_config(params: dict) -> ModelConfig:
    d, e = params["params/Dense_0/kernel"].shape
    h = params["params/ScannedRNN_0/GRUCell_0/hr/kernel"].shape[0]
    a = params["params/Dense_3/kernel"].shape[1]
    cfg = ModelConfig(obs_size=int(d), num_actions=int(a), width=int(e), hidden=int(h))
    check_params(params, cfg)
    return cfg


def save_npz(path: str, params: dict) -> None:
    """Atomic: write a temp file then os.replace."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        np.savez(f, **export_flat(params))
    os.replace(tmp, path)


EXPECTED = "a checkpoint.npz or params.npz written by `pycraftax train`"


class NotACheckpointError(ValueError):
    """A file that is not one of the trainer's .npz files (or not one this version reads)."""

    def __init__(self, path, why: str):
        super().__init__(f"{path} is not a checkpoint: expected {EXPECTED} ({why})")
        self.path = str(path)


def read_npz(path) -> dict[str, np.ndarray]:
    """Every array of an .npz file; NotACheckpointError for anything that is not one."""
    if os.path.isdir(path):
        raise NotACheckpointError(path, "it is a directory")
    try:
        loaded = np.load(path, allow_pickle=False)
    except (ValueError, EOFError, zipfile.BadZipFile):
        raise NotACheckpointError(path, "not an .npz archive") from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise NotACheckpointError(path, "a single .npy array, not an .npz archive")
    try:
        with loaded:
            return {k: loaded[k] for k in loaded.files}
    except (ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise NotACheckpointError(path, f"a damaged .npz archive: {exc}") from None


def load_npz(path: str, dtype=None) -> dict[str, np.ndarray]:
    arrays = read_npz(path)
    params = {k: (v.astype(dtype) if dtype is not None else v) for k, v in arrays.items() if k.startswith("params/")}
    try:
        from pycraftax.train import fast_model

        if fast_model.is_fast_params(params):  # the fast recipe's network (model "cell-gru")
            fast_model.check_params(params, fast_model.config_of(params))
        else:
            infer_model_config(params)
    except (KeyError, ValueError) as exc:
        raise NotACheckpointError(path, f"no complete set of policy weights: {exc}") from None
    return dict(sorted(params.items()))


__all__ = ["export_flat", "to_flax_tree", "from_flax_tree", "infer_model_config", "save_npz", "load_npz",
           "read_npz", "NotACheckpointError", "param_shapes"]
