#!/bin/sh
# cuda/dev/compare_sass.sh OLD NEW: compares the SASS of every kernel in two builds of the CUDA
# library (libcraftax_cuda.so, or an object such as build/craftax_cuda.o), kernel by kernel.
#
# Prints one line per kernel (identical / different / only in OLD / only in NEW) and exits 1
# when any kernel differs or is missing from one side, so a change that only moves code can be
# shown to compile to the same machine code. Each kernel's listing is compared with its
# instruction offsets and encodings; only the order in which the kernels appear in the file is
# ignored. Needs cuobjdump and nvdisasm: $CUOBJDUMP, else on PATH, else the pip wheels
# nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm in the Python that runs this script.
set -e
if [ $# -ne 2 ]; then
    echo "usage: $0 OLD.so NEW.so" >&2
    exit 2
fi
PYTHON=${PYTHON:-python3}
if [ -z "$CUOBJDUMP" ]; then
    if command -v cuobjdump >/dev/null 2>&1; then
        CUOBJDUMP=cuobjdump
    else
        wheel_bin=$("$PYTHON" -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "bin"))' 2>/dev/null || true)
        if [ -x "$wheel_bin/cuobjdump" ]; then
            CUOBJDUMP="$wheel_bin/cuobjdump"
            PATH="$wheel_bin:$PATH" # cuobjdump -sass runs nvdisasm
            export PATH
        else
            echo "$0: cuobjdump not found (set CUOBJDUMP, or pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)" >&2
            exit 2
        fi
    fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$CUOBJDUMP" -sass "$1" >"$tmp/old.sass"
"$CUOBJDUMP" -sass "$2" >"$tmp/new.sass"
exec "$PYTHON" - "$tmp/old.sass" "$tmp/new.sass" <<'PY'
import re
import sys


def kernels(path):
    """{(arch, kernel name): its listing}, every line stripped of trailing blanks."""
    out, arch, name, body = {}, "?", None, []

    def close():
        if name is not None:
            out[(arch, name)] = "\n".join(body)

    for line in open(path):
        line = line.rstrip()
        m = re.match(r"\s*code for (sm_\w+)", line)
        if m:
            close()
            arch, name, body = m.group(1), None, []
            continue
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            close()
            name, body = m.group(1), []
            continue
        if name is not None and line.strip():
            body.append(line.strip())
    close()
    return out


old, new = kernels(sys.argv[1]), kernels(sys.argv[2])
if not old or not new:
    sys.exit("no SASS found (is nvdisasm reachable?)")
bad = 0
for key in sorted(set(old) | set(new)):
    arch, name = key
    if key not in new:
        verdict = "only in OLD"
    elif key not in old:
        verdict = "only in NEW"
    elif old[key] == new[key]:
        verdict = "identical"
    else:
        a, b = old[key].split("\n"), new[key].split("\n")
        first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        verdict = f"different ({len(a)} vs {len(b)} lines, first at line {first + 1})"
    bad += verdict != "identical"
    print(f"{verdict:12s}  {arch}  {name}")
print(f"{len(set(old) | set(new)) - bad} identical, {bad} not", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
