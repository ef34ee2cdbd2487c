"""The perturbed test build: pycraftax compiled with -DPYCRAFTAX_TEST_PERTURB, which makes one
deliberately wrong rule per game (reference_c/include: craftax_get_damage_done_to_player does 1
more damage; craftax_classic_cap_inventory caps at 8), for conformance/test_porting.py.

`package()` builds the C extension and the parity-test extension with the switch
(pycraftax/_build.py: builders(defines=...)) into build/perturbed-<key>/pkg/pycraftax beside a copy
of the package's Python files, and returns the directory to put on PYTHONPATH. The key hashes
the C sources, the build script and the switch, so the compile is paid once per tree (once per
CI run) and redone when the sources change. The copy carries no reference_c/, so the finder in it
does not compare the build with a source tree's headers.

    python conformance/perturbed_build.py      # builds it (if needed) and prints the directory
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SWITCH = "PYCRAFTAX_TEST_PERTURB"
_BUILD = f"""
import importlib.util, shutil, sys
spec = importlib.util.spec_from_file_location("_pycraftax_build", {str(ROOT / "pycraftax" / "_build.py")!r})
build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build)
for builder in build.builders(defines=({SWITCH!r},), absolute_paths=True):
    built = builder.compile(tmpdir=sys.argv[1])
    shutil.copy2(built, sys.argv[2])
"""


def _key() -> str:
    h = hashlib.sha256(SWITCH.encode())
    for path in sorted((ROOT / "reference_c").rglob("*")) + [ROOT / "pycraftax" / "_build.py",
                                                                ROOT / "pycraftax" / "_rules_hash.py"]:
        if path.is_file() and path.suffix in (".h", ".c", ".py"):
            h.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def package() -> Path:
    """The directory holding the perturbed build's pycraftax package (built if needed)."""
    base = ROOT / "build" / f"perturbed-{_key()}"
    pkg = base / "pkg"
    done = base / "built"
    if done.exists():
        return pkg
    shutil.rmtree(base, ignore_errors=True)
    target = pkg / "pycraftax"
    shutil.copytree(ROOT / "pycraftax", target,
                    ignore=shutil.ignore_patterns("*.so", "__pycache__", "cuda_include", "agents"))
    subprocess.run([sys.executable, "-c", _BUILD, str(base / "work"), str(target)], check=True,
                   stdout=subprocess.DEVNULL)
    done.write_text("ok\n")
    return pkg


def environment(pkg: Path) -> dict:
    """The environment of a process that imports the perturbed package: it first on the path, and
    the baseline CPU variant, the one variant built here (an x86-64-v3 CPU would otherwise load the
    unperturbed x86-64-v3 extension of an editable install of the tree, which its finder resolves)."""
    return {**os.environ, "PYTHONPATH": str(pkg), "PYCRAFTAX_CPU_VARIANT": "baseline"}


if __name__ == "__main__":
    print(package())
