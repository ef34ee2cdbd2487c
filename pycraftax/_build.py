"""cffi builders of the C reference: ``pycraftax._craftax_c`` (API mode, out of line), the
shipped extension, and ``pycraftax._craftax_test``, the test hooks (reference_c/testing/).

setup.py names ``ffibuilder`` in ``cffi_modules``, and ``test_ffibuilder`` too when
PYCRAFTAX_TEST_HOOKS=1; pip runs them while building the wheel. The test extension shares the
shipped one's types (ffi.include), so a CraftaxParams made by either works with both.
The cdef is the project's real API header (and the params header it includes), with the
preprocessor lines cffi cannot parse stripped, so there is no hand-kept copy to drift.

Environment knobs (for developers, not users):
  PYCRAFTAX_SANITIZE=1   build with AddressSanitizer + UndefinedBehaviorSanitizer
  PYCRAFTAX_TEST_HOOKS=1 also build the test extension pycraftax._craftax_test (the parity
                         tests of conformance/ need it; noxfile.py's tests and sanitize set it)
  PYCRAFTAX_PORTABLE=1   leave out -march=native (for a wheel that must run on other
                         CPUs). -march=native changes no result (no fast-math, no FMA
                         contraction: only vector width and hardware fmaf), and doubles
                         world-generation speed on AVX-512 machines.

Both extensions carry the rules fingerprint of the headers they compile (pycraftax/_rules_hash.py)
as CRAFTAX_RULES_FINGERPRINT; pycraftax.rules reads it back. `builders(defines=...)` makes the
pair with extra rules-changing -D switches into the fingerprint too: only the perturbed test
build of conformance/test_porting.py uses them, never setup.py.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from cffi import FFI

ROOT = Path(__file__).resolve().parent.parent
INCLUDE_DIR = ROOT / "reference_c" / "include"
TESTING_DIR = ROOT / "reference_c" / "testing"
PARAMS_HEADER = INCLUDE_DIR / "craftax" / "params.h"
# The C API: craftax_api.h first, then any further craftax_api_*.h (e.g. the step API).
API_HEADERS = [INCLUDE_DIR / "craftax_api.h"] + sorted(INCLUDE_DIR.glob("craftax_api_*.h"))
SOURCES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "reference_c" / "src").glob("*.c"))
TEST_HEADERS = sorted(TESTING_DIR.glob("craftax_test_*.h"))
TEST_SOURCES = sorted(str(p.relative_to(ROOT)) for p in TESTING_DIR.glob("*.c"))
# Every header the sources include: setuptools rebuilds an extension only when one of its
# sources or `depends` is newer than it, and a rules edit touches headers only.
DEPENDS = sorted(str(p.relative_to(ROOT)) for d in (INCLUDE_DIR, ROOT / "reference_c" / "src", TESTING_DIR)
                 for p in d.rglob("*.h"))

# Float flags are part of the conformance contract (docs/ARCHITECTURE.md, "The rules headers"):
# -ffp-contract=off: gcc would otherwise fuse a*b+c into FMAs wherever it likes, and the
#   rounding would no longer match XLA's, which fuses only where the header calls fmaf().
# -fno-fast-math (the default, said explicitly): reassociation or reciprocal tricks would
#   change float bits of the noise, light maps and observations.
# -fno-math-errno lets sqrtf inline to one instruction; it changes no result.
# -fopenmp: batched calls run envs on all cores.
# -fwrapv: int32 sums wrap as XLA's do; states set_state accepts reach them (the timestep and
#   other counters at INT32_MAX, god mode's far positions), and C leaves signed overflow
#   undefined otherwise (CPython's own CFLAGS usually carry -fwrapv too; this does not rely on it).
COMPILE_ARGS = ["-std=c11", "-O3", "-ffp-contract=off", "-fno-fast-math", "-fno-math-errno", "-fwrapv", "-fopenmp"]
LINK_ARGS = ["-fopenmp", "-lm"]

if os.environ.get("PYCRAFTAX_PORTABLE") != "1":
    COMPILE_ARGS.append("-march=native")
if os.environ.get("PYCRAFTAX_SANITIZE") == "1":
    SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer", "-g"]
    COMPILE_ARGS = [a for a in COMPILE_ARGS if a != "-O3"] + ["-O1"] + SANITIZE
    LINK_ARGS += SANITIZE


def _load_sibling(name: str):
    # By path: the package itself cannot be imported before its extension is built.
    spec = importlib.util.spec_from_file_location(f"_pycraftax{name}", Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cdef_text(header: Path) -> str:
    return _load_sibling("_cdef").cdef_declarations(header.read_text())


def rules_fingerprint(defines: tuple[str, ...] = ()) -> str:
    """The fingerprint of this tree's rules headers built with the -D switches `defines`."""
    return _load_sibling("_rules_hash").fingerprint(ROOT, defines)


def compile_args(defines: tuple[str, ...] = ()) -> list[str]:
    """COMPILE_ARGS, the rules-changing -D switches `defines` and the fingerprint they make."""
    return COMPILE_ARGS + [f"-D{d}" for d in defines] + [f'-DCRAFTAX_RULES_FINGERPRINT="{rules_fingerprint(defines)}"']


def builders(defines: tuple[str, ...] = (), absolute_paths: bool = False) -> tuple[FFI, FFI]:
    """(the C extension's builder, the test extension's builder), compiled with the extra -D
    switches `defines`. Sources are named relative to the repository root, as setuptools wants
    them; absolute_paths for FFI.compile, which builds from its own directory."""
    args = compile_args(defines)

    def sources(paths):
        return [str(ROOT / p) for p in paths] if absolute_paths else paths

    main = FFI()
    main.cdef("\n".join(cdef_text(h) for h in [PARAMS_HEADER] + API_HEADERS))
    main.set_source(
        "pycraftax._craftax_c",
        "\n".join(f'#include "{h.name}"' for h in API_HEADERS),
        sources=sources(SOURCES),
        depends=sources(DEPENDS),
        include_dirs=[str(INCLUDE_DIR)],
        extra_compile_args=args,
        extra_link_args=LINK_ARGS,
    )
    test = FFI()
    test.include(main)
    test.cdef("\n".join(cdef_text(h) for h in TEST_HEADERS))
    test.set_source(
        "pycraftax._craftax_test",
        "\n".join(f'#include "{h.name}"' for h in API_HEADERS + TEST_HEADERS),
        sources=sources(TEST_SOURCES),
        depends=sources(DEPENDS),
        include_dirs=[str(INCLUDE_DIR), str(TESTING_DIR)],
        extra_compile_args=args,
        extra_link_args=LINK_ARGS,
    )
    return main, test


ffibuilder, test_ffibuilder = builders()

if __name__ == "__main__":
    main_builder, test_builder = builders(absolute_paths=True)
    main_builder.compile(tmpdir=str(ROOT / "build" / "cffi"), verbose=True)
    if os.environ.get("PYCRAFTAX_TEST_HOOKS") == "1":
        test_builder.compile(tmpdir=str(ROOT / "build" / "cffi"), verbose=True)
