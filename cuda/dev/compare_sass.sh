#!/bin/bash
# cuda/dev/compare_sass.sh OLD NEW: compares the machine code (SASS) of two CUDA builds kernel by
# kernel, e.g. a library before and after a refactor that should only have moved code:
#   cuda/dev/compare_sass.sh /tmp/old/cuda/build/libcraftax_cuda.so cuda/build/libcraftax_cuda.so
# OLD and NEW: anything cuobjdump reads (.so, .o, .cubin, executables). Prints one line per kernel
# (identical, DIFFERENT, only in OLD, only in NEW) and a count; exits 1 if any kernel is not
# identical, 2 on a usage or tool error. Set SHOW_DIFF=1 to print the diff of each different kernel.
# Normalised: only the order of the kernels in the file and each instruction's offset comment
# (/*0a30*/); the instruction text and its encoding words, control bits included, must match.
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 OLD NEW" >&2
    exit 2
fi
# cuobjdump: $CUOBJDUMP, else on PATH, else the nvidia-cuda-cuobjdump wheel in the checkout's .venv
# (it runs nvdisasm, found beside it: the nvidia-cuda-nvdisasm wheel)
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump ||
    ls "$(dirname "$0")"/../../.venv/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump 2>/dev/null | head -1)}
if [ -z "$CUOBJDUMP" ]; then
    echo "cuobjdump not found: set CUOBJDUMP, or pip install nvidia-cuda-cuobjdump" >&2
    exit 2
fi
export PATH="$PATH:$(dirname "$CUOBJDUMP")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$CUOBJDUMP" -sass "$1" > "$tmp/old.sass" || exit 2
"$CUOBJDUMP" -sass "$2" > "$tmp/new.sass" || exit 2
SHOW_DIFF=${SHOW_DIFF:-0} python3 - "$tmp/old.sass" "$tmp/new.sass" <<'PY'
import difflib, os, re, sys

def kernels(path):
    """{kernel name: [normalised lines]} of one cuobjdump -sass listing (one per arch it holds)."""
    out, name, arch = {}, None, ""
    for line in open(path):
        if line.startswith("arch = "):
            arch = line.split("=", 1)[1].strip()
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            name = f"{m.group(1)} [{arch}]"
            if name in out:  # the same kernel in two cubins of one file: keep both copies
                name += " (copy)"
            out[name] = []
            continue
        if name is None or not line.strip() or line.strip().startswith("....."):
            continue
        out[name].append(re.sub(r"^\s*/\*[0-9a-f]{4,}\*/", "", line).rstrip())
    return out

old, new = kernels(sys.argv[1]), kernels(sys.argv[2])
if not old or not new:
    print("no SASS found in", sys.argv[1] if not old else sys.argv[2])
    sys.exit(2)
bad = 0
for name in sorted(set(old) | set(new)):
    if name not in new:
        status = "only in OLD"
    elif name not in old:
        status = "only in NEW"
    elif old[name] == new[name]:
        status = "identical"
    else:
        status = "DIFFERENT"
    bad += status != "identical"
    print(f"{status:12s} {name}")
    if status == "DIFFERENT" and os.environ["SHOW_DIFF"] == "1":
        sys.stdout.writelines(l + "\n" for l in difflib.unified_diff(old[name], new[name], "OLD", "NEW", n=2,
                                                                    lineterm=""))
print(f"{len(set(old) | set(new)) - bad} identical, {bad} not identical "
      f"({len(old)} kernels in OLD, {len(new)} in NEW)")
sys.exit(1 if bad else 0)
PY
