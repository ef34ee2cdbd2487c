"""Porting rule changes safely: the divergence finder (`pycraftax conformance`) that compares
the built rules with whatever craftax package is installed, both games, and names the upstream
function responsible for the first divergence. docs/PORTING.md walks through a port.

    upstream.py    the installed craftax (1.6.1, a later release or a fork) under the reference
                   semantics: jitted, vmapped, batch >= 2, on the CPU with XLA's flag
    c_rules.py     the C rules' matching functions, through the parity-test extension
    inject.py      busy injected states of both games, and the busy policy
    finder.py      lockstep phases, the divergence report, its reproducer, the CLI
"""

from __future__ import annotations

import os

# jaxlib 0.10.2 needs the first flag for correct batched noise (CONFORMANCE.md, "The spec"); the
# second makes XLA:CPU compile for AVX2 on every host: on AVX-512 hosts its pixel renderer rounds
# the light blend differently (1 ulp), so upstream would disagree with itself across machines.
# Both must be set before jax is first imported.
XLA_FLAGS = ("--xla_cpu_experimental_ynn_fusion_type=", "--xla_cpu_max_isa=AVX2")
# The jax release the reference semantics run upstream on: other releases compile upstream's float
# arithmetic differently (under jax 0.11.2 its reset light map differs), so a comparison there
# mixes the rules with the compiler.
REFERENCE_JAX_VERSION = "0.10.2"


def jax_version_note() -> str | None:
    """Why the installed jax is not the reference semantics' (None when it is)."""
    import jax

    if jax.__version__ == REFERENCE_JAX_VERSION:
        return None
    return (f"jax {jax.__version__} is installed; the reference semantics run upstream on jax {REFERENCE_JAX_VERSION} "
            f"(pip install jax=={REFERENCE_JAX_VERSION} jaxlib=={REFERENCE_JAX_VERSION}): a float divergence here "
            "may be the compiler's, not the rules'")


def set_reference_jax_flags() -> None:
    """Put the reference semantics' XLA flags and the CPU platform into the environment (before
    jax is imported; afterwards this changes nothing)."""
    for flag in XLA_FLAGS:
        if flag.split("=")[0] + "=" not in os.environ.get("XLA_FLAGS", ""):
            os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
