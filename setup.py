# Metadata lives in pyproject.toml; this file wires the cffi extension (the C reference) and,
# where nvcc is found, the CUDA build (cuda/Makefile -> pycraftax/libcraftax_cuda.so).
#
# PYCRAFTAX_CUDA selects the CUDA build:
#   auto (default)  build it when nvcc is found; if that build fails, say why and install
#                   the package without it (backend="cuda" then names the missing library)
#   1               build it, and fail the install if it cannot be built
#   0               do not build it
#
# PYCRAFTAX_JAX_FFI (auto|1|0): pycraftax.jax's FFI libraries at build time (BuildExtWithJaxFfi).
# PYCRAFTAX_NATIVE=1: the C extension for this machine's CPU only (-march=native), instead of the
# portable baseline plus the x86-64-v3 variant picked at run time (pycraftax/_build.py).
# PYCRAFTAX_TEST_HOOKS=1 also builds the test extension pycraftax._craftax_test (the parity hooks
# of reference_c/testing/, which the shipped extension leaves out); noxfile.py's test sessions set it.
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
CUDA_LIBRARY = "libcraftax_cuda.so"


def _load_by_path(name: str, path: Path):
    """A module of the package, loaded from its file: the package cannot be imported while it is built."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ffi_build = _load_by_path("_pycraftax_ffi_build", ROOT / "pycraftax" / "jax" / "ffi_build.py")
find_nvcc = ffi_build.find_nvcc


class BuildExtWithCuda(build_ext):
    """build_ext, then the CUDA library next to the extension."""

    def run(self):
        super().run()
        mode = os.environ.get("PYCRAFTAX_CUDA", "auto")
        if mode not in ("auto", "0", "1"):
            raise SystemExit(f"PYCRAFTAX_CUDA must be auto, 0 or 1, got {mode!r}")
        if mode == "0":
            return
        nvcc = find_nvcc()
        if nvcc is None:
            if mode == "1":
                raise SystemExit("PYCRAFTAX_CUDA=1 but nvcc was not found (set NVCC=/path/to/nvcc)")
            print("pycraftax: nvcc not found, building without the CUDA backend", file=sys.stderr)
            return
        built = ROOT / "cuda" / "build" / CUDA_LIBRARY
        try:
            subprocess.run(["make", "-C", str(ROOT / "cuda"), f"NVCC={nvcc}", f"PYTHON={sys.executable}"], check=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            if mode == "1":
                raise SystemExit(f"pycraftax: the CUDA build failed: {exc}")
            print(f"pycraftax: the CUDA build failed ({exc}); installing without the CUDA backend", file=sys.stderr)
            return
        # The library is bound in ABI mode, so its headers travel with it as the cdef.
        package = ROOT / "pycraftax" if self.inplace else Path(self.build_lib) / "pycraftax"
        headers = package / "cuda_include"
        headers.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, package / CUDA_LIBRARY)
        include = ROOT / "reference_c" / "include"  # params.h, and the Classic binding's C API headers
        for header in sorted((ROOT / "cuda").glob("*.h")) + [include / "craftax" / "params.h", include / "craftax_api.h",
                                                             include / "craftax_api_classic.h"]:
            shutil.copy2(header, headers / header.name)


class BuildExtWithJaxFfi(BuildExtWithCuda):
    """build_ext (and the CUDA library), then pycraftax.jax's XLA FFI libraries
    (pycraftax/jax/ffi_build.py) where jaxlib's FFI headers are here at build time: jax
    importable (a build without isolation, e.g. a wheel build), or jaxlib already installed in
    the interpreter being installed into. Where they are not, pycraftax.jax builds them at
    first import against the jaxlib then installed.

    PYCRAFTAX_JAX_FFI: auto (default) build them when the headers are found, 1 fail without them, 0 skip.
    """

    def run(self):
        super().run()
        mode = os.environ.get("PYCRAFTAX_JAX_FFI", "auto")
        if mode not in ("auto", "0", "1"):
            raise SystemExit(f"PYCRAFTAX_JAX_FFI must be auto, 0 or 1, got {mode!r}")
        if mode == "0":
            return
        ffi_include = ffi_build.jaxlib_ffi_include()
        if ffi_include is None:
            if mode == "1":
                raise SystemExit("PYCRAFTAX_JAX_FFI=1 but jaxlib's FFI headers were not found at build time")
            print("pycraftax: jaxlib not found at build time; pycraftax.jax builds its FFI library at first import",
                  file=sys.stderr)
            return
        package = ROOT / "pycraftax" / "jax" if self.inplace else Path(self.build_lib) / "pycraftax" / "jax"
        try:
            ffi_build.build_cpu(ROOT, ffi_include, package / ffi_build.CPU_LIBRARY)
        except (OSError, ffi_build.FfiBuildError) as exc:
            if mode == "1":
                raise SystemExit(f"pycraftax: the XLA FFI build failed: {exc}")
            print(f"pycraftax: the XLA FFI build failed ({exc}); pycraftax.jax builds it at first import",
                  file=sys.stderr)
            return
        cuda_library = package.parent / CUDA_LIBRARY
        if cuda_library.exists() and find_nvcc():
            try:
                # the handlers find libcraftax_cuda.so beside the package at run time
                ffi_build.build_cuda(ROOT, ffi_include, cuda_library, package / ffi_build.CUDA_LIBRARY,
                                     rpath="$ORIGIN/..", nvcc=find_nvcc())
            except (OSError, ffi_build.FfiBuildError) as exc:
                print(f"pycraftax: the CUDA XLA FFI build failed ({exc}); pycraftax.jax runs on the CPU only",
                      file=sys.stderr)


class BuildPyWithFfiSources(build_py):
    """build_py, plus the XLA FFI handlers' sources inside the package (pycraftax/jax/ffi_src),
    so that an install without jaxlib at build time can build them at first import."""

    def run(self):
        super().run()
        ffi_build.copy_sources(ROOT, Path(self.build_lib) / "pycraftax" / "jax" / ffi_build.PACKAGED_SOURCES)


for knob in ("PYCRAFTAX_TEST_HOOKS",):
    if os.environ.get(knob, "0") not in ("0", "1"):
        raise SystemExit(f"{knob} must be 0 or 1, got {os.environ[knob]!r}")
cffi_build = _load_by_path("_pycraftax_build", ROOT / "pycraftax" / "_build.py")
CFFI_MODULES = []
for variant in cffi_build.VARIANTS:  # the baseline, and x86-64-v3 on x86-64 (pycraftax/_build.py)
    shipped, test_hooks = cffi_build.BUILDER_NAMES[variant]
    CFFI_MODULES.append(f"pycraftax/_build.py:{shipped}")
    if os.environ.get("PYCRAFTAX_TEST_HOOKS") == "1":
        CFFI_MODULES.append(f"pycraftax/_build.py:{test_hooks}")

setup(
    cffi_modules=CFFI_MODULES,
    cmdclass={"build_ext": BuildExtWithJaxFfi, "build_py": BuildPyWithFfiSources},
    # cffi compiles for the stable ABI (Py_LIMITED_API), and the FFI and CUDA libraries do not
    # link Python: one wheel serves every CPython >= 3.10
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
