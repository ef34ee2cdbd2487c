"""Minimal gymnasium-style spaces (no gymnasium dependency)."""

from __future__ import annotations

import numpy as np


class Discrete:
    def __init__(self, n: int):
        self.n = int(n)
        self.shape = ()
        self.dtype = np.dtype(np.int32)

    def sample(self, rng: np.random.Generator | None = None) -> int:
        rng = rng or np.random.default_rng()
        return int(rng.integers(self.n))

    def contains(self, x) -> bool:
        return isinstance(x, (int, np.integer)) and 0 <= int(x) < self.n

    def __repr__(self) -> str:
        return f"Discrete({self.n})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Discrete) and other.n == self.n


class Box:
    """Box(low, high, shape, dtype). As upstream, the bounds are nominal: some symbolic
    observation entries exceed 1 (enchantments are 2, mana/10 can reach 2.1)."""

    def __init__(self, low: float, high: float, shape: tuple[int, ...], dtype=np.float32):
        self.low = low
        self.high = high
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    def contains(self, x) -> bool:
        x = np.asarray(x)
        return x.shape == self.shape and x.dtype == self.dtype

    def __repr__(self) -> str:
        return f"Box({self.low}, {self.high}, {self.shape}, {self.dtype})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Box) and (other.low, other.high, other.shape, other.dtype) == (
            self.low,
            self.high,
            self.shape,
            self.dtype,
        )
