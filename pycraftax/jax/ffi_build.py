"""Building pycraftax.jax's XLA FFI libraries against jaxlib's FFI headers.

- CPU: _craftax_xla.so, reference_c/xla/craftax_xla_ffi.cc. It holds the handlers only: their
  calls into the C API resolve, when the library is loaded, against the C extension that
  pycraftax._native loaded (pycraftax/jax/_ffi.py makes that extension's symbols global first),
  so the handlers run the CPU variant this machine picked and need no copy of the rules.
- CUDA: _craftax_xla_cuda.so, cuda/xla/craftax_xla_ffi.cu, linked with libcraftax_cuda.so.

When: setup.py builds them where jaxlib's headers are present at build time (a wheel build, a
build without isolation, or a source install into an environment that already has jaxlib).
Otherwise, as after `pip install ".[jax]"` (pip builds pycraftax before it installs jaxlib),
`import pycraftax.jax` builds them once against the jaxlib then installed, into a cache
directory keyed by the sources, the headers and the commands ($PYCRAFTAX_CACHE_DIR, else
$XDG_CACHE_HOME/pycraftax, else ~/.cache/pycraftax). The sources travel inside the package for
that (pycraftax/jax/ffi_src/, copied there by setup.py's build_py).

This module imports nothing of pycraftax at module level: setup.py loads it by path, before
the package exists.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

CPU_LIBRARY = "_craftax_xla.so"
CUDA_LIBRARY = "_craftax_xla_cuda.so"
CPU_SOURCE = "reference_c/xla/craftax_xla_ffi.cc"
CUDA_SOURCE = "cuda/xla/craftax_xla_ffi.cu"
# Everything the two sources include, relative to the repository root (globs): what build_py
# copies into pycraftax/jax/ffi_src/ and what the cache key hashes.
SOURCE_GLOBS = ("reference_c/include/**/*.h", "reference_c/xla/*", "cuda/xla/*", "cuda/craftax_cuda.h")
PACKAGED_SOURCES = "ffi_src"  # under pycraftax/jax/
# The handlers do none of the rules' float arithmetic (that is the extension's, built with the
# contract's flags): they check and pack operands and call the C API.
CXX_FLAGS = ["-std=c++17", "-O2", "-fPIC", "-ffp-contract=off"]
# as cuda/Makefile's ARCH: sm_90 machine code and compute_90 PTX for newer GPUs
NVCC_ARCH = ["-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_90,code=compute_90"]
CLONE_FIX = 'pip install ".[jax]"'  # the command that installs the extra from a clone's root


class FfiBuildError(RuntimeError):
    """The FFI library could not be built; the message says why and what fixes it."""


def source_files(root: Path) -> list[Path]:
    files = {p for pattern in SOURCE_GLOBS for p in Path(root).glob(pattern) if p.is_file()}
    return sorted(files)


def copy_sources(repo_root: Path, destination: Path) -> None:
    """The handlers' sources, in the repository's layout, into `destination` (build_py)."""
    for path in source_files(repo_root):
        target = Path(destination) / path.relative_to(repo_root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)


def jaxlib_ffi_include() -> Path | None:
    """jaxlib's FFI header directory: from jax where it is importable, else from a jaxlib
    installed in this interpreter's site-packages (an isolated build hides it from sys.path)."""
    try:
        import jax.ffi

        return Path(jax.ffi.include_dir())
    except ImportError:
        pass
    for key in ("purelib", "platlib"):
        include = Path(sysconfig.get_paths()[key]) / "jaxlib" / "include"
        if (include / "xla" / "ffi" / "api" / "ffi.h").exists():
            return include
    return None


def find_cxx() -> str | None:
    for candidate in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


def find_nvcc() -> str | None:
    for candidate in (os.environ.get("NVCC"), "/usr/local/cuda/bin/nvcc", "/usr/local/bin/nvcc", shutil.which("nvcc")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def cpu_command(root: Path, ffi_include: Path, output: Path, cxx: str) -> list[str]:
    root = Path(root)
    return [cxx, *CXX_FLAGS, "-shared", "-I", str(root / "reference_c" / "include"),
            "-I", str(root / "reference_c" / "xla"), "-isystem", str(ffi_include), str(root / CPU_SOURCE),
            "-o", str(output)]


def cuda_command(root: Path, ffi_include: Path, cuda_library: Path, output: Path, nvcc: str, rpath: str) -> list[str]:
    root, cuda_library = Path(root), Path(cuda_library)
    return [nvcc, "-std=c++17", "-O3", *NVCC_ARCH, "-shared", "-Xcompiler", "-fPIC",
            "-I", str(root / "cuda"), "-I", str(root / "reference_c" / "include"),
            "-I", str(root / "reference_c" / "xla"),  # ffi_operands.h, shared with the CPU handlers
            "-isystem", str(ffi_include), str(root / CUDA_SOURCE),
            "-L", str(cuda_library.parent), "-l:" + cuda_library.name, "-Xlinker", "-rpath," + rpath,
            "-o", str(output)]


def _run_into(command_for, target: Path) -> None:
    """Run command_for(output) writing a temporary file beside `target`, then rename it over
    `target`: a process that has the old library loaded keeps its (unlinked) copy intact, and
    two processes building at once each leave a whole library."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        out = subprocess.run(command_for(Path(tmp)), capture_output=True, text=True)
        if out.returncode != 0:
            raise FfiBuildError(f"{' '.join(command_for(Path(tmp)))} failed:\n{out.stderr.strip()[-4000:]}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def build_cpu(root: Path, ffi_include: Path, target: Path, cxx: str | None = None) -> None:
    cxx = cxx or find_cxx()
    if cxx is None:
        raise FfiBuildError("no C++ compiler found (c++, g++ or clang++ on PATH, or $CXX)")
    _run_into(lambda output: cpu_command(root, ffi_include, output, cxx), target)


def build_cuda(root: Path, ffi_include: Path, cuda_library: Path, target: Path, rpath: str,
               nvcc: str | None = None) -> None:
    nvcc = nvcc or find_nvcc()
    if nvcc is None:
        raise FfiBuildError("nvcc not found (set NVCC=/path/to/nvcc)")
    _run_into(lambda output: cuda_command(root, ffi_include, cuda_library, output, nvcc, rpath), target)


# -- at first use ---------------------------------------------------------------------------------
def cache_dir() -> Path:
    if os.environ.get("PYCRAFTAX_CACHE_DIR"):
        return Path(os.environ["PYCRAFTAX_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pycraftax"


def packaged_source_root(package_jax_dir: Path) -> Path | None:
    """Where the handlers' sources are: the package's copy, else the repository this package
    is the source tree of (an editable install, or a clone on sys.path)."""
    packaged = Path(package_jax_dir) / PACKAGED_SOURCES
    if (packaged / CPU_SOURCE).is_file():
        return packaged
    repo = Path(package_jax_dir).resolve().parent.parent
    if (repo / CPU_SOURCE).is_file():
        return repo
    return None


def _key(root: Path, ffi_include: Path, command: list[str]) -> str:
    digest = hashlib.sha256()
    for part in command:
        digest.update(part.encode() + b"\0")
    headers = sorted((Path(ffi_include) / "xla" / "ffi" / "api").glob("*.h"))
    for path in source_files(root) + headers:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _jaxlib_version() -> str:
    try:
        import jaxlib

        return getattr(jaxlib, "__version__", None) or jaxlib.version.__version__
    except (ImportError, AttributeError):
        return "?"


def cached_cpu_library(package_jax_dir: Path) -> Path:
    """The CPU handlers for this jaxlib: from the cache, built there first if need be.
    FfiBuildError saying what fixes it where they cannot be built."""
    root = packaged_source_root(package_jax_dir)
    if root is None:
        raise FfiBuildError(f"this install has neither {CPU_LIBRARY} nor the sources to build it (reinstall: "
                            f"from the clone's root, {CLONE_FIX})")
    ffi_include = jaxlib_ffi_include()
    if ffi_include is None:
        raise FfiBuildError(f"jaxlib's FFI headers were not found (install the [jax] extra: from the clone's root, "
                            f"{CLONE_FIX})")
    cxx = find_cxx()
    if cxx is None:
        raise FfiBuildError("building it needs a C++ compiler, and none was found (c++, g++ or clang++ on PATH, or "
                            "$CXX): install one (Debian/Ubuntu: apt install g++), or install a pycraftax wheel, "
                            "which carries the library")
    # the output name is not part of the key: the command is hashed with a placeholder
    key = _key(root, ffi_include, cpu_command(root, ffi_include, Path("OUT"), cxx))
    target = cache_dir() / "xla-ffi" / key / CPU_LIBRARY
    if not target.exists():
        print(f"pycraftax.jax: building {CPU_LIBRARY} against jaxlib {_jaxlib_version()} (once; into {target.parent})",
              file=sys.stderr)
        try:
            build_cpu(root, ffi_include, target, cxx)
        except OSError as exc:
            raise FfiBuildError(f"cannot write the build into {target.parent} ({exc}); set PYCRAFTAX_CACHE_DIR to a "
                                "writable directory") from exc
    return target


def cached_cuda_library(package_jax_dir: Path, cuda_library: Path) -> Path | None:
    """The CUDA handlers for this jaxlib and CUDA library, built into the cache first if need be;
    None where nvcc, the sources or jaxlib's headers are missing (pycraftax.jax then runs on the
    CPU only)."""
    root = packaged_source_root(package_jax_dir)
    ffi_include = jaxlib_ffi_include()
    nvcc = find_nvcc()
    if root is None or ffi_include is None or nvcc is None or not (Path(root) / CUDA_SOURCE).is_file():
        return None
    cuda_library = Path(cuda_library).resolve()
    command = cuda_command(root, ffi_include, cuda_library, Path("OUT"), nvcc, str(cuda_library.parent))
    key = _key(root, ffi_include, command)
    target = cache_dir() / "xla-ffi" / key / CUDA_LIBRARY
    if not target.exists():
        print(f"pycraftax.jax: building {CUDA_LIBRARY} against jaxlib {_jaxlib_version()} (once; into "
              f"{target.parent})", file=sys.stderr)
        build_cuda(root, ffi_include, cuda_library, target, str(cuda_library.parent), nvcc)
    return target
