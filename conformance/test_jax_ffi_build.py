"""pycraftax.jax's XLA FFI library where the install does not carry it (`pip install ".[jax]"`
builds pycraftax before pip installs jaxlib): the first import builds it against the installed
jaxlib into the cache, later imports reuse it, and it steps exactly as the C env; where it cannot
be built, the error names what fixes it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("jax")

from pycraftax import _native  # noqa: E402
from pycraftax.jax import ffi_build  # noqa: E402

pytestmark = pytest.mark.jax
ROOT = Path(__file__).resolve().parent.parent

# In an "installed" copy of the package (no FFI library, the sources in jax/ffi_src): import
# pycraftax.jax, reset and step 4 envs in a jitted scan, and compare with the C env stepped by
# the parity hooks on the same keys and actions; then reset and step 4 Craftax-Classic envs.
FIRST_IMPORT = textwrap.dedent("""
    import sys
    sys.meta_path[:] = [f for f in sys.meta_path if "Editable" not in getattr(f, "__name__", "")]
    sys.path.insert(0, sys.argv[1])
    import jax, jax.numpy as jnp, numpy as np
    import pycraftax, pycraftax.jax as pjax
    from pycraftax import jax_random
    from pycraftax.jax import _ffi
    assert pycraftax.__file__.startswith(sys.argv[1]), pycraftax.__file__
    env = pjax.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=False)
    keys = jax.random.split(jax.random.PRNGKey(7), 4)
    actions = np.random.default_rng(0).integers(0, 43, size=(20, 4)).astype(np.int32)
    step_keys = jax.random.split(jax.random.PRNGKey(8), 20 * 4).reshape(20, 4, 2)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, env.default_params)
    def body(s, xs):
        k, a = xs
        o, s, r, d, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(k, s, a, env.default_params)
        return s, (o, r, d)
    _, (o, r, d) = jax.jit(lambda s: jax.lax.scan(body, s, (step_keys, jnp.asarray(actions))))(state)
    c = pycraftax.make("Craftax-Symbolic-v1", num_envs=4, backend="c")
    c_obs, _ = c.reset_with_keys(np.asarray(keys))
    assert np.array_equal(np.asarray(obs), c_obs)
    for t in range(20):
        c_obs, c_r, c_done, _ = c.step_with_keys(actions[t], np.asarray(step_keys[t]))
        assert np.array_equal(np.asarray(o[t]), c_obs), t
        assert np.array_equal(np.asarray(r[t]), c_r) and np.array_equal(np.asarray(d[t]), c_done), t
    # Craftax-Classic's handlers, from the same library
    classic = pjax.make_craftax_env_from_name("Craftax-Classic-Symbolic-v1", auto_reset=False)
    obs, state = jax.vmap(classic.reset, in_axes=(0, None))(keys, classic.default_params)
    o, state, r, d, _ = jax.jit(jax.vmap(classic.step, in_axes=(0, 0, 0, None)))(
        keys, state, jnp.arange(4, dtype=jnp.int32), classic.default_params)
    c = pycraftax.make("Craftax-Classic-Symbolic-v1", num_envs=4, backend="c")
    c_obs, _ = c.reset_with_keys(np.asarray(keys))
    assert np.array_equal(np.asarray(obs), c_obs)
    c_obs, c_r, c_done, _ = c.step_with_keys(np.arange(4, dtype=np.int32), np.asarray(keys))
    assert np.array_equal(np.asarray(o), c_obs) and np.array_equal(np.asarray(state.data), c._native_host_states())
    print("library", _ffi._LIBRARY._name)
""")


def _installed_copy(site: Path) -> Path:
    """The package as an install without jaxlib at build time lays it out: the modules and the
    compiled extensions, no XLA FFI library, the handlers' sources in jax/ffi_src."""
    package = site / "pycraftax"
    shutil.copytree(ROOT / "pycraftax", package,
                    ignore=shutil.ignore_patterns("__pycache__", "_craftax_xla*.so", "libcraftax_cuda.so",
                                                  "cuda_include", "agents"))
    ffi_build.copy_sources(ROOT, package / "jax" / ffi_build.PACKAGED_SOURCES)
    return site


def _first_import(site: Path, cache: Path, **env):
    environ = {"PATH": "/usr/bin:/bin", "HOME": str(cache.parent), "PYCRAFTAX_CACHE_DIR": str(cache), **env}
    return subprocess.run([sys.executable, "-c", FIRST_IMPORT, str(site)], capture_output=True, text=True,
                          timeout=600, cwd=site, env=environ)


def test_first_import_builds_the_ffi_library_into_the_cache_and_steps_as_the_c_env(tmp_path):
    if ffi_build.find_cxx() is None:
        pytest.fail("no C++ compiler: this test needs one (it builds the FFI library)")
    site, cache = _installed_copy(tmp_path / "site"), tmp_path / "cache"
    first = _first_import(site, cache)
    assert first.returncode == 0, first.stderr[-3000:]
    built = sorted(cache.glob(f"xla-ffi/*/{ffi_build.CPU_LIBRARY}"))
    assert len(built) == 1 and f"library {built[0]}" in first.stdout
    assert f"building {ffi_build.CPU_LIBRARY} against jaxlib" in first.stderr
    assert not (site / "pycraftax" / "jax" / ffi_build.CPU_LIBRARY).exists()  # the package stays as installed
    mtime = built[0].stat().st_mtime_ns
    again = _first_import(site, cache)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "building" not in again.stderr and built[0].stat().st_mtime_ns == mtime  # reused, not rebuilt


def test_without_a_compiler_the_error_says_what_fixes_it(tmp_path):
    site, cache = _installed_copy(tmp_path / "site"), tmp_path / "cache"
    bare = tmp_path / "bin"
    bare.mkdir()
    out = _first_import(site, cache, PATH=str(bare), CXX=str(bare / "no-such-compiler"))
    assert out.returncode != 0
    assert "ImportError" in out.stderr and "C++ compiler" in out.stderr and "apt install g++" in out.stderr


def test_without_jaxlib_headers_or_sources_the_error_names_the_clone_command(monkeypatch, tmp_path):
    package_jax = Path(ffi_build.__file__).parent
    monkeypatch.setattr(ffi_build, "jaxlib_ffi_include", lambda: None)
    with pytest.raises(ffi_build.FfiBuildError, match=r'from the clone\'s root, pip install "\.\[jax\]"'):
        ffi_build.cached_cpu_library(package_jax)
    monkeypatch.setattr(ffi_build, "packaged_source_root", lambda _: None)
    with pytest.raises(ffi_build.FfiBuildError, match=r'neither _craftax_xla.so nor the sources.*pip install "\.\[jax\]"'):
        ffi_build.cached_cpu_library(package_jax)


def test_handlers_call_the_loaded_extension():
    """The CPU handlers hold no copy of the C reference: the API calls are the extension's."""
    from pycraftax.jax import _ffi

    out = subprocess.run(["nm", "-D", "--undefined-only", _ffi._LIBRARY._name], capture_output=True, text=True)
    assert out.returncode == 0, f"binutils' nm: {out.stderr.strip()}"
    undefined = {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}
    assert {"craftax_reset_with_keys", "craftax_step_autoreset", "craftax_step_with_keys",
            "craftax_classic_reset_with_keys", "craftax_classic_step_autoreset", "craftax_classic_step_with_keys",
            "craftax_classic_pixels_step_autoreset"} <= undefined
    assert _native.EXTENSION_MODULE.startswith("pycraftax._craftax_c")


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def _included_files(source: Path, include_dirs: list[Path]) -> set[Path]:
    """Every repository file `source` includes with quotes, transitively (jaxlib's own headers,
    which the key hashes from jaxlib's include directory, are not in the repository)."""
    seen, todo = set(), [source]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _INCLUDE.findall(path.read_text()):
            for directory in [path.parent, *include_dirs]:
                if (directory / name).is_file():
                    todo.append((directory / name).resolve())
                    break
            else:
                assert name.startswith("xla/ffi/"), f"{path.name} includes {name}, found nowhere"
    return seen


def test_the_cache_key_covers_every_file_the_handlers_include(tmp_path):
    """The first-import build is cached under a key of its sources: every file the CPU and CUDA
    handlers include (the Classic envs' C API headers among them) must be hashed, so that a
    change to any of them builds a new library instead of loading a stale one."""
    dirs = [ROOT / "reference_c" / "include", ROOT / "reference_c" / "xla", ROOT / "cuda"]
    included = _included_files((ROOT / ffi_build.CPU_SOURCE).resolve(), dirs)
    included |= _included_files((ROOT / ffi_build.CUDA_SOURCE).resolve(), dirs)
    hashed = {p.resolve() for p in ffi_build.source_files(ROOT)}
    for header in ("craftax_api_classic.h", "craftax_api_pixels.h", "craftax_classic/constants.h"):
        assert (ROOT / "reference_c" / "include" / header).resolve() in included, header
    assert not included - hashed, sorted(str(p.relative_to(ROOT)) for p in included - hashed)

    # and the key moves when one of them changes
    ffi_build.copy_sources(ROOT, tmp_path)
    include = Path(jax_ffi_include())
    command = ffi_build.cpu_command(tmp_path, include, Path("OUT"), "c++")
    before = ffi_build._key(tmp_path, include, command)
    assert ffi_build._key(tmp_path, include, command) == before
    header = tmp_path / "reference_c" / "include" / "craftax_api_classic.h"
    header.write_text(header.read_text() + "\n/* changed */\n")
    assert ffi_build._key(tmp_path, include, command) != before


def jax_ffi_include() -> str:
    import jax.ffi

    return jax.ffi.include_dir()
