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
    """build_ext (and the CUDA library), then pycraftax/jax/_craftax_xla.so: the XLA FFI
    handlers of pycraftax.jax (reference_c/xla) linked with the C reference. It needs jaxlib's
    FFI headers: jax importable at build time (pip install --no-build-isolation), or jaxlib
    already installed in the interpreter being installed into.

    PYCRAFTAX_JAX_FFI: auto (default) build it when the headers are found, 1 fail without them, 0 skip.
    """

    def run(self):
        super().run()
        mode = os.environ.get("PYCRAFTAX_JAX_FFI", "auto")
        if mode not in ("auto", "0", "1"):
            raise SystemExit(f"PYCRAFTAX_JAX_FFI must be auto, 0 or 1, got {mode!r}")
        if mode == "0":
            return
        ffi_include = self._find_ffi_include()
        if ffi_include is None:
            if mode == "1":
                raise SystemExit("PYCRAFTAX_JAX_FFI=1 but jaxlib's FFI headers were not found at build time")
            print("pycraftax: jaxlib not found at build time, building without pycraftax.jax", file=sys.stderr)
            return
        package = ROOT / "pycraftax" / "jax" if self.inplace else Path(self.build_lib) / "pycraftax" / "jax"
        try:
            self._build_jax_ffi(Path(ffi_include), package / "_craftax_xla.so")
        except (OSError, subprocess.CalledProcessError) as exc:
            if mode == "1":
                raise SystemExit(f"pycraftax: the XLA FFI build failed: {exc}")
            print(f"pycraftax: the XLA FFI build failed ({exc}); installing without pycraftax.jax", file=sys.stderr)
            return
        cuda_library = package.parent / CUDA_LIBRARY
        if cuda_library.exists() and find_nvcc():
            try:
                self._build_jax_ffi_cuda(Path(ffi_include), cuda_library, package / "_craftax_xla_cuda.so")
            except (OSError, subprocess.CalledProcessError) as exc:
                print(f"pycraftax: the CUDA XLA FFI build failed ({exc}); pycraftax.jax runs on the CPU only",
                      file=sys.stderr)

    @staticmethod
    def _find_ffi_include():
        """jaxlib's FFI header directory: from jax where it is importable, else from a jaxlib
        already installed in the target interpreter (an isolated build hides it from sys.path)."""
        try:
            import jax.ffi

            return jax.ffi.include_dir()
        except ImportError:
            pass
        import sysconfig

        for key in ("purelib", "platlib"):
            include = Path(sysconfig.get_paths()[key]) / "jaxlib" / "include"
            if (include / "xla" / "ffi" / "api" / "ffi.h").exists():
                return str(include)
        return None

    def _build_jax_ffi(self, ffi_include: Path, target: Path) -> None:
        import importlib.util

        # The C reference's float flags are part of the conformance contract: take them from
        # the cffi builder rather than restating them.
        spec = importlib.util.spec_from_file_location("_pycraftax_build", ROOT / "pycraftax" / "_build.py")
        cffi_build = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cffi_build)
        include = ["-I", str(cffi_build.INCLUDE_DIR)]
        compile_args = cffi_build.compile_args()  # with the rules fingerprint, as the C extension's
        work = ROOT / "build" / "xla_ffi"
        work.mkdir(parents=True, exist_ok=True)
        objects = []
        for source in cffi_build.SOURCES:
            obj = work / (Path(source).stem + ".o")
            subprocess.run(["cc", "-fPIC", *compile_args, *include, "-c", str(ROOT / source), "-o", str(obj)],
                           check=True)
            objects.append(str(obj))
        handler = ROOT / "reference_c" / "xla" / "craftax_xla_ffi.cc"
        obj = work / "craftax_xla_ffi.o"
        cxx_args = [a for a in compile_args if not a.startswith("-std=")]
        subprocess.run(["c++", "-std=c++17", "-fPIC", *cxx_args, *include, "-isystem", str(ffi_include), "-c",
                        str(handler), "-o", str(obj)], check=True)
        objects.append(str(obj))
        target.parent.mkdir(parents=True, exist_ok=True)
        # linked beside the target and renamed over it, so a process that has the old library
        # loaded keeps its (unlinked) copy intact
        linked = work / target.name
        subprocess.run(["c++", "-shared", "-o", str(linked), *objects, *cffi_build.LINK_ARGS], check=True)
        shutil.copy2(linked, target.with_suffix(".tmp"))
        os.replace(target.with_suffix(".tmp"), target)

    def _build_jax_ffi_cuda(self, ffi_include: Path, cuda_library: Path, target: Path) -> None:
        # the handlers call libcraftax_cuda.so, found beside the package at run time
        work = ROOT / "build" / "xla_ffi"
        work.mkdir(parents=True, exist_ok=True)
        linked = work / target.name
        subprocess.run([find_nvcc(), "-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC",
                        "-I", str(ROOT / "cuda"), "-I", str(ROOT / "reference_c" / "include"),
                        "-I", str(ROOT / "reference_c" / "xla"),  # ffi_operands.h, shared with the CPU handlers
                        "-isystem", str(ffi_include), str(ROOT / "cuda" / "xla" / "craftax_xla_ffi.cu"),
                        "-L", str(cuda_library.parent), "-l:" + cuda_library.name,
                        "-Xlinker", "-rpath,$ORIGIN/..", "-o", str(linked)], check=True)
        shutil.copy2(linked, target.with_suffix(".tmp"))
        os.replace(target.with_suffix(".tmp"), target)


CFFI_MODULES = ["pycraftax/_build.py:ffibuilder"]
if os.environ.get("PYCRAFTAX_TEST_HOOKS", "0") not in ("0", "1"):
    raise SystemExit(f"PYCRAFTAX_TEST_HOOKS must be 0 or 1, got {os.environ['PYCRAFTAX_TEST_HOOKS']!r}")
if os.environ.get("PYCRAFTAX_TEST_HOOKS") == "1":
    CFFI_MODULES.append("pycraftax/_build.py:test_ffibuilder")

setup(cffi_modules=CFFI_MODULES, cmdclass={"build_ext": BuildExtWithJaxFfi})
