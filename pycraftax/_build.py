"""cffi builders of the C reference: ``pycraftax._craftax_c`` (API mode, out of line), the
shipped extension, and ``pycraftax._craftax_test``, the test hooks (reference_c/testing/).

setup.py names ``ffibuilder`` in ``cffi_modules``, and ``test_ffibuilder`` too when
PYCRAFTAX_TEST_HOOKS=1; pip runs them while building the wheel. The test extension shares the
shipped one's types (ffi.include), so a CraftaxParams made by either works with both.
The cdef is the project's real API header (and the params header it includes), with the
preprocessor lines cffi cannot parse stripped, so there is no hand-kept copy to drift.

Builds for every CPU, fast paths picked at run time: the shipped extension is compiled for the
portable x86-64 baseline, and on x86-64 once more for x86-64-v3 (AVX2, FMA, BMI2: Haswell, Zen
and later) as ``pycraftax._craftax_c_x86_64_v3``; pycraftax._native loads the v3 one where the
CPU has those instructions (on a 2-core Zen 3: world generation 2.5x, the env step 1.1-1.3x faster
than the baseline). Neither changes a result: no fast-math, no FMA contraction, so the
instruction set changes only vector width and whether fmaf() is one instruction
(tests/test_cpu_variants.py checks that both give identical trajectories).

Environment knobs (for developers, not users):
  PYCRAFTAX_NATIVE=1     one extension compiled with -march=native instead of the portable pair
                         (for this machine only: the result must not be copied to other CPUs)
  PYCRAFTAX_SANITIZE=1   build with AddressSanitizer + UndefinedBehaviorSanitizer (the baseline only)
  PYCRAFTAX_TEST_HOOKS=1 also build the test extension pycraftax._craftax_test (the parity
                         tests of conformance/ need it; noxfile.py's tests and sanitize set it),
                         one per CPU variant, each sharing its variant's types

Both extensions carry the rules fingerprint of the headers they compile (pycraftax/_rules_hash.py)
as CRAFTAX_RULES_FINGERPRINT; pycraftax.rules reads it back. `builders(defines=...)` makes the
pair with extra rules-changing -D switches into the fingerprint too: only the perturbed test
build of conformance/test_porting.py uses them, never setup.py.
"""

from __future__ import annotations

import importlib.util
import os
import platform
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

for knob in ("PYCRAFTAX_NATIVE", "PYCRAFTAX_SANITIZE"):
    if os.environ.get(knob, "0") not in ("0", "1"):
        raise SystemExit(f"{knob} must be 0 or 1, got {os.environ[knob]!r}")
NATIVE = os.environ.get("PYCRAFTAX_NATIVE") == "1"
SANITIZE = os.environ.get("PYCRAFTAX_SANITIZE") == "1"
if SANITIZE:
    SANITIZE_ARGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer",
                     "-g"]
    COMPILE_ARGS = [a for a in COMPILE_ARGS if a != "-O3"] + ["-O1"] + SANITIZE_ARGS
    LINK_ARGS += SANITIZE_ARGS

# CPU variant -> its extra flags. The baseline is always built (on x86-64 for the x86-64 ISA
# itself, whatever the compiler's default); x86-64-v3 where the target is x86-64 and neither
# -march=native nor the sanitizers are asked for.
BASELINE = "baseline"
X86_64_V3 = "x86-64-v3"
X86_64 = platform.machine().lower() in ("x86_64", "amd64")
VARIANT_FLAGS = {
    BASELINE: ["-march=native"] if NATIVE else (["-march=x86-64", "-mtune=generic"] if X86_64 else []),
    X86_64_V3: ["-march=x86-64-v3", "-mtune=generic"],
}
VARIANTS = [BASELINE, X86_64_V3] if X86_64 and not (NATIVE or SANITIZE) else [BASELINE]


def module_name(variant: str, test: bool = False) -> str:
    """pycraftax._craftax_c (baseline), pycraftax._craftax_c_x86_64_v3, and the _craftax_test twins."""
    base = "pycraftax._craftax_test" if test else "pycraftax._craftax_c"
    return base if variant == BASELINE else base + "_" + variant.replace("-", "_")


# Which variant this CPU runs (pycraftax._native asks the baseline module): GCC >= 12 and clang
# know the x86-64-v3 level by name; elsewhere the baseline runs. The flags a module was built with
# are compiled in too (benchmarks record them).
CPU_CHECK = """
static int pycraftax_cpu_runs_x86_64_v3(void) {
#if defined(__x86_64__) && (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12))
    __builtin_cpu_init();
    return __builtin_cpu_supports("x86-64-v3") != 0;
#else
    return 0;
#endif
}
"""
CPU_CHECK_CDEF = "int pycraftax_cpu_runs_x86_64_v3(void);\nconst char *pycraftax_compile_args(void);"


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


def compile_args(defines: tuple[str, ...] = (), variant: str = BASELINE) -> list[str]:
    """COMPILE_ARGS, the CPU variant's flags, the rules-changing -D switches `defines` and the
    fingerprint they make."""
    return (COMPILE_ARGS + VARIANT_FLAGS[variant] + [f"-D{d}" for d in defines]
            + [f'-DCRAFTAX_RULES_FINGERPRINT="{rules_fingerprint(defines)}"'])


def _binding_source(args: list[str]) -> str:
    """The C source cffi wraps: the API headers, the CPU check and the flags the module was built with."""
    flags = " ".join(a for a in args if not a.startswith("-DCRAFTAX_RULES_FINGERPRINT"))
    flags = flags.replace("\\", "\\\\").replace('"', '\\"')
    return ("\n".join(f'#include "{h.name}"' for h in API_HEADERS) + "\n" + CPU_CHECK
            + f'static const char *pycraftax_compile_args(void) {{ return "{flags}"; }}\n')


def builders(defines: tuple[str, ...] = (), absolute_paths: bool = False, variant: str = BASELINE) -> tuple[FFI, FFI]:
    """(the C extension's builder, the test extension's builder) of one CPU variant, compiled
    with the extra -D switches `defines`; the test extension shares its variant's types.
    Sources are named relative to the repository root, as setuptools wants them;
    absolute_paths for FFI.compile, which builds from its own directory."""
    args = compile_args(defines, variant)

    def sources(paths):
        return [str(ROOT / p) for p in paths] if absolute_paths else paths

    main = FFI()
    main.cdef("\n".join(cdef_text(h) for h in [PARAMS_HEADER] + API_HEADERS) + "\n" + CPU_CHECK_CDEF)
    main.set_source(
        module_name(variant),
        _binding_source(args),
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
        module_name(variant, test=True),
        "\n".join(f'#include "{h.name}"' for h in API_HEADERS + TEST_HEADERS),
        sources=sources(TEST_SOURCES),
        depends=sources(DEPENDS),
        include_dirs=[str(INCLUDE_DIR), str(TESTING_DIR)],
        extra_compile_args=args,
        extra_link_args=LINK_ARGS,
    )
    return main, test


# setup.py names these in cffi_modules: "pycraftax/_build.py:ffibuilder", ...
ffibuilder, test_ffibuilder = builders()
ffibuilder_x86_64_v3, test_ffibuilder_x86_64_v3 = builders(variant=X86_64_V3)
BUILDER_NAMES = {BASELINE: ("ffibuilder", "test_ffibuilder"),
                 X86_64_V3: ("ffibuilder_x86_64_v3", "test_ffibuilder_x86_64_v3")}

if __name__ == "__main__":
    for variant in VARIANTS:
        main_builder, test_builder = builders(absolute_paths=True, variant=variant)
        main_builder.compile(tmpdir=str(ROOT / "build" / "cffi"), verbose=True)
        if os.environ.get("PYCRAFTAX_TEST_HOOKS") == "1":
            test_builder.compile(tmpdir=str(ROOT / "build" / "cffi"), verbose=True)
