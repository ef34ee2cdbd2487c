"""Which game rules this build runs: its rules fingerprint, and whether that is a released game.

Every build records the fingerprint of the rules headers it compiled (pycraftax/_rules_hash.py):
the C extension, the CUDA library and the parity-test extension each carry their own, and CUDA
envs refuse a library whose fingerprint is not the C extension's. RELEASED_RULES names the
fingerprints of released games: the headers verified bit for bit against that craftax release.

A build whose fingerprint is not released runs *modified rules*: train, eval, bench and summary
say "modified rules <fingerprint>", results record the fingerprint, and env ids become variant
ids (`variant_id`: "Craftax-Symbolic-v1-rules-<fingerprint>"), which are the only gymnasium ids
such a build registers, so a modified game cannot publish under the official name by accident.

    pycraftax.rules_fingerprint()      # '...' (12 hex digits)
    pycraftax.rules.describe()         # 'craftax-1.6.1 rules' or 'modified rules <fingerprint>'

Updating RELEASED_RULES: a header edit that keeps the game (a refactor, a comment) changes the
fingerprint; after the conformance suite passes on it, put the new value here (the failing test,
tests/test_rules.py, prints it). docs/PORTING.md covers modified rules.
"""

from __future__ import annotations

import functools
from pathlib import Path

# release name -> fingerprint of the headers verified against it (CONFORMANCE.md)
RELEASED_RULES = {"craftax-1.6.1": "e159b932abd0"}
VARIANT_MARK = "-rules-"

_ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def rules_fingerprint() -> str:
    """The rules fingerprint this build's C extension was compiled with (every install builds the
    C extension; the CUDA library is checked against it, not the other way round)."""
    from pycraftax._native import ffi, lib

    return ffi.string(lib.craftax_rules_fingerprint()).decode()


def released_name(fingerprint: str | None = None) -> str | None:
    """The release whose rules have this fingerprint (default: this build's), or None."""
    fingerprint = rules_fingerprint() if fingerprint is None else fingerprint
    return next((name for name, value in RELEASED_RULES.items() if value == fingerprint), None)


def is_modified(fingerprint: str | None = None) -> bool:
    return released_name(fingerprint) is None


def describe(fingerprint: str | None = None) -> str:
    """'craftax-1.6.1 rules', or 'modified rules <fingerprint>'."""
    fingerprint = rules_fingerprint() if fingerprint is None else fingerprint
    name = released_name(fingerprint)
    return f"{name} rules" if name else f"modified rules {fingerprint}"


def modified_note(fingerprint: str | None = None) -> str | None:
    """'modified rules <fingerprint>' for modified rules, None for released ones: what train,
    eval, bench and summary print."""
    return describe(fingerprint) if is_modified(fingerprint) else None


def variant_id(env_id: str, fingerprint: str | None = None) -> str:
    """The id results of `env_id` are reported under: env_id itself on released rules,
    "<env_id>-rules-<fingerprint>" on modified ones."""
    fingerprint = rules_fingerprint() if fingerprint is None else fingerprint
    return env_id if released_name(fingerprint) else f"{env_id}{VARIANT_MARK}{fingerprint}"


def official_id(env_id: str) -> str:
    """The env id a variant id stands for ("Craftax-Symbolic-v1-rules-<fp>" -> "Craftax-Symbolic-v1");
    ValueError for a variant id of other rules than this build's."""
    if VARIANT_MARK not in env_id:
        return env_id
    official, fingerprint = env_id.rsplit(VARIANT_MARK, 1)
    if fingerprint != rules_fingerprint():
        raise ValueError(f"env id {env_id!r} names rules {fingerprint}, but this build runs {describe()}")
    return official


def source_fingerprint() -> str | None:
    """The fingerprint of the rules headers of the source tree this package sits in, or None for
    an installed package (no headers beside it). Differs from rules_fingerprint() when a header
    was edited after the last build."""
    if not (_ROOT / "reference_c" / "include" / "craftax").is_dir():
        return None
    from pycraftax import _rules_hash

    return _rules_hash.fingerprint(_ROOT)


def check_cuda_agrees(cuda_fingerprint: str, library: Path | str) -> None:
    """RuntimeError unless the CUDA library's rules are the C extension's: the CUDA backend must
    run the same game the C reference runs (and the conformance suite checks)."""
    try:
        c_fingerprint = rules_fingerprint()
    except ImportError:
        return  # no C extension to compare with: the library's own fingerprint is the build's
    if cuda_fingerprint != c_fingerprint:
        raise RuntimeError(
            f"{library}: the CUDA library was built from other rules ({describe(cuda_fingerprint)}) than the C "
            f"extension ({describe(c_fingerprint)}); rebuild both from the same headers (pip install ., or "
            "make -C cuda and setup.py build_ext --inplace)"
        )
