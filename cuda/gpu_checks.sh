#!/bin/bash
# cuda/gpu_checks.sh: on a machine with a GPU, check and measure the CUDA build in one go.
#   cuda/gpu_checks.sh [OUTDIR]
# 1. loads cuda/build/libcraftax_cuda.so (rebuilds it with `make -C cuda -B` if it does not load),
# 2. runs conformance/test_cuda*.py (anchors, C-vs-CUDA lockstep, zero-copy, out-of-memory,
#    optimistic resets, the trainer, lazy levels),
# 3. compute-sanitizer memcheck (with leak check) and racecheck (shared-memory hazards) over
#    cuda/sanitize_run.py (small C-vs-CUDA run; skipped when compute-sanitizer is not on the
#    PATH or SANITIZE=0),
# 4. the CUDA env suite (bench/test_bench_cuda.py, needs pytest-benchmark) into
#    OUTDIR/<date>-<machine kind>-cuda.json, the name `nox -s bench` gives it.
# Needs the C extension (pip install -e .) and cffi; PyTorch/CuPy/JAX only for the handoff checks.
set -o pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench/results}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
if ! $PY -c "import pycraftax, sys; sys.exit(0 if pycraftax.cuda_available() else 1)"; then
    $PY -c "from pycraftax import cuda_env; print('CUDA library does not load:', cuda_env.unavailable_reason())"
    make -C cuda -B || exit 1
fi
$PY -c "from pycraftax import cuda_env; l = cuda_env.load(); print(l.device_name, l.path)" || exit 1
timeout ${TEST_TIMEOUT:-300} $PY -m pytest conformance/test_cuda*.py -q -rs --durations=10 -p no:cacheprovider 2>&1 \
    | tee "$OUT/test_cuda.log"
test_rc=$?
if [ "${SANITIZE:-1}" != 0 ] && command -v compute-sanitizer >/dev/null; then
    timeout ${SANITIZE_TIMEOUT:-150} compute-sanitizer --tool memcheck --leak-check full --error-exitcode 3 \
        $PY cuda/sanitize_run.py 2>&1 | tee "$OUT/sanitizer.log"
    [ $? -eq 0 ] || test_rc=1
    timeout ${SANITIZE_TIMEOUT:-150} compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 3 \
        $PY cuda/sanitize_run.py 2>&1 | tee -a "$OUT/sanitizer.log"
    [ $? -eq 0 ] || test_rc=1
fi
DATE=$(date -u +%Y-%m-%d)
KIND=$($PY -c "import sys; sys.path.insert(0, 'bench'); import conftest; print(conftest.pycraftax_machine_info()['kind'])")
timeout ${BENCH_TIMEOUT:-300} $PY -m pytest -p no:cacheprovider bench/test_bench_cuda.py \
    --benchmark-json="$OUT/$DATE-$KIND-cuda.json" --benchmark-columns=median,rounds ${BENCH_ARGS:-} 2>&1 \
    | tee "$OUT/bench.log"
exit $test_rc
