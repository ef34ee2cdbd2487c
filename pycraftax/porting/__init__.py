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

# jaxlib 0.10.2 needs this flag for correct batched noise (CONFORMANCE.md, "The spec"); it must be
# set before jax is first imported.
XLA_FLAG = "--xla_cpu_experimental_ynn_fusion_type="


def set_reference_jax_flags() -> None:
    """Put the reference semantics' XLA flag and the CPU platform into the environment (before
    jax is imported; afterwards this changes nothing)."""
    if XLA_FLAG not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + XLA_FLAG).strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
