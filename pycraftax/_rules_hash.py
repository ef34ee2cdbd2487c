"""The rules fingerprint: a hash of the game-rules headers a build was compiled from.

The rules are every header of reference_c/include/craftax/ and reference_c/include/craftax_classic/
(both games' mechanics, world generation, observations and constants): the code the C
extension, the CUDA library and pycraftax.jax all compile. The fingerprint is the first 12 hex
digits of SHA-256 over each header's path (relative to reference_c/include) and bytes (line
endings normalised to LF), in path order, then over the names of any rules-changing compile
switches (the perturbed test build's). Any edit of a rules header, a comment included, changes it.

pycraftax/_build.py and cuda/Makefile compile it into their binaries; pycraftax.rules reads it
back. No imports from the package: _build.py and the Makefile load this file by path before the
package exists. Run as a script it prints the fingerprint of the tree it sits in:

    python3 pycraftax/_rules_hash.py
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = Path("reference_c") / "include"
RULES_DIRS = ("craftax", "craftax_classic")
DIGITS = 12


def rules_headers(root: Path = ROOT) -> list[Path]:
    """The rules headers of the tree at `root`, in the order they are hashed."""
    include = Path(root) / INCLUDE
    return sorted((p for d in RULES_DIRS for p in (include / d).glob("*.h")), key=lambda p: p.relative_to(include).as_posix())


def fingerprint(root: Path = ROOT, defines: tuple[str, ...] = ()) -> str:
    """The fingerprint of the rules headers under `root`, compiled with the rules-changing
    switches `defines` (names of -D macros; none in a shipped build)."""
    include = Path(root) / INCLUDE
    headers = rules_headers(root)
    if not headers:
        raise FileNotFoundError(f"no rules headers under {include}/{{{','.join(RULES_DIRS)}}}")
    h = hashlib.sha256(b"pycraftax rules\0")
    for path in headers:
        text = path.read_bytes().replace(b"\r\n", b"\n")
        h.update(path.relative_to(include).as_posix().encode() + b"\0" + str(len(text)).encode() + b"\0" + text)
    for name in sorted(defines):
        h.update(b"define\0" + name.encode() + b"\0")
    return h.hexdigest()[:DIGITS]


if __name__ == "__main__":
    print(fingerprint(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT))
