# Metadata lives in pyproject.toml; this file wires the cffi extension (the C reference) and,
# where nvcc is found, the CUDA build (cuda/Makefile -> pycraftax/libcraftax_cuda.so).
#
# PYCRAFTAX_CUDA selects the CUDA build:
#   auto (default)  build it when nvcc is found; if that build fails, say why and install
#                   the package without it (backend="cuda" then names the missing library)
#   1               build it, and fail the install if it cannot be built
#   0               do not build it
#
# PYCRAFTAX_TEST_HOOKS=1 also builds the test extension pycraftax._craftax_test (the parity hooks
# of reference_c/testing/, which the shipped extension leaves out); noxfile.py's test sessions set it.
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
CUDA_LIBRARY = "libcraftax_cuda.so"


def find_nvcc():
    for candidate in (os.environ.get("NVCC"), "/usr/local/cuda/bin/nvcc", "/usr/local/bin/nvcc", shutil.which("nvcc")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


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
            subprocess.run(["make", "-C", str(ROOT / "cuda"), f"NVCC={nvcc}"], check=True)
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
        for header in sorted((ROOT / "cuda").glob("*.h")) + [ROOT / "reference_c" / "include" / "craftax" / "params.h"]:
            shutil.copy2(header, headers / header.name)


CFFI_MODULES = ["pycraftax/_build.py:ffibuilder"]
if os.environ.get("PYCRAFTAX_TEST_HOOKS", "0") not in ("0", "1"):
    raise SystemExit(f"PYCRAFTAX_TEST_HOOKS must be 0 or 1, got {os.environ['PYCRAFTAX_TEST_HOOKS']!r}")
if os.environ.get("PYCRAFTAX_TEST_HOOKS") == "1":
    CFFI_MODULES.append("pycraftax/_build.py:test_ffibuilder")

setup(cffi_modules=CFFI_MODULES, cmdclass={"build_ext": BuildExtWithCuda})
