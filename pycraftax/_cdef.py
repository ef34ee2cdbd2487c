"""Header text -> declarations that cffi's cdef accepts (shared by the C build in
_build.py and the CUDA loader in cuda_env.py, so both read the real headers the same way).
No imports from the package: _build.py loads this file by path before the package exists."""

from __future__ import annotations

import re


def cdef_declarations(text: str) -> str:
    """Drop include guards, #include lines and the C++ `extern "C"` wrapper; keep
    `#define CRAFTAX_NAME <integer>` constants, which cdef understands."""
    text = re.sub(r"#ifdef __cplusplus.*?#endif", "", text, flags=re.S)
    kept = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            if re.fullmatch(r"#define\s+CRAFTAX_\w+\s+-?\d+", stripped):
                kept.append(stripped)
            continue
        kept.append(line)
    return "\n".join(kept)
