#!/usr/bin/env bash
# The GPU verification of ember-cuda-cupy, for a machine with an NVIDIA GPU on which cupy, numpy,
# pytest and pluggy are preinstalled and there is no network. Run from anywhere:
#     OUT=/some/dir bash backends/cuda_cupy/gpu_check.sh
# It installs ember and the backends from this checkout (no dependencies, no build isolation),
# then runs, each with its log under $OUT:
#   1. the conformance suite on cuda (real cupy)           -> $OUT/suite.log
#   2. the backend's logic tests (fake cupy) and real-GPU tests -> $OUT/backend_tests.log, gpu_tests.log
#   3. the issue's speed targets (bench_gpu.py)            -> $OUT/targets.log, targets.json
#   4. python -m benchmarks --backend cuda_cupy            -> $OUT/benchmarks.log
# and writes $OUT/summary.txt. Exit status: 0 when every step passed.
set -u
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${OUT:-$ROOT/gpu-check-out}"
mkdir -p "$OUT"
cd "$ROOT"
PY="${PYTHON:-python}"
summary="$OUT/summary.txt"
: > "$summary"
status=0

step() {  # step NAME LOG COMMAND...
    local name="$1" log="$2"; shift 2
    local t0=$(date +%s)
    "$@" > "$log" 2>&1
    local rc=$?
    local tail_line
    tail_line="$(grep -E '(passed|failed|skipped|error)' "$log" | tail -1)"
    printf '%-22s rc=%-3s %4ss  %s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" "$tail_line" | tee -a "$summary"
    [ "$rc" -eq 0 ] || status=1
}

{
    echo "ember-cuda-cupy GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not found"
    "$PY" -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'CUDA runtime', cupy.cuda.runtime.runtimeGetVersion(), 'devices', cupy.cuda.runtime.getDeviceCount())" 2>&1
} | tee -a "$summary"

# what the backends import besides cupy/numpy/pytest/pluggy: ml_dtypes is required (bfloat16 on the
# host); scipy (accurate erf on cpu) and hypothesis (the suite's property tests) are optional
for mod in ml_dtypes scipy hypothesis; do
    if ! "$PY" -c "import $mod" 2>/dev/null; then
        case $mod in
            ml_dtypes) echo "preflight: ml_dtypes is missing and REQUIRED (bring its wheel: pip install --no-deps ml_dtypes-*.whl)" | tee -a "$summary"; status=1 ;;
            *) echo "preflight: $mod is missing (optional: the tests that need it skip)" | tee -a "$summary" ;;
        esac
    fi
done

install_status=$status
step install "$OUT/install.log" "$PY" -m pip install --no-deps --no-build-isolation -e . -e backends/cpu_numpy -e backends/cuda_cupy
if ! grep -q "Successfully installed" "$OUT/install.log"; then
    status=$install_status  # the fallback below stands in for the install
    # pip could not build (an old setuptools without the wheel package, no network to fetch one):
    # run from the checkout, with hand-written dist-info folders carrying the entry points
    site="$OUT/site"; rm -rf "$site"; mkdir -p "$site"
    ln -s "$ROOT/core" "$site/ember"
    mkdist() {  # mkdist NAME GROUP ENTRY
        local d="$site/$1-0.1.0.dist-info"; mkdir -p "$d"
        printf 'Metadata-Version: 2.1\nName: %s\nVersion: 0.1.0\n' "$1" > "$d/METADATA"
        printf '[%s]\n%s\n' "$2" "$3" > "$d/entry_points.txt"
    }
    mkdist ember pytest11 "ember = ember.testing.pytest_plugin"
    mkdist ember_cpu_numpy ember "cpu_numpy = ember_cpu_numpy"
    mkdist ember_cuda_cupy ember "cuda_cupy = ember_cuda_cupy"
    export PYTHONPATH="$site:$ROOT/backends/cpu_numpy:$ROOT/backends/cuda_cupy${PYTHONPATH:+:$PYTHONPATH}"
    echo "install: pip failed; running from the checkout through $site (PYTHONPATH)" | tee -a "$summary"
fi
step info "$OUT/info.log" "$PY" -m ember info
cat "$OUT/info.log" >> "$summary"
step suite "$OUT/suite.log" "$PY" -m pytest --pyargs ember.testing.suite --ember-backend cuda_cupy -p no:cacheprovider -q -rs
step backend_tests "$OUT/backend_tests.log" "$PY" -m pytest backends/cuda_cupy/tests -p no:cacheprovider -q
step gpu_tests "$OUT/gpu_tests.log" "$PY" -m pytest backends/cuda_cupy/gpu_tests -p no:cacheprovider -q -rs
step targets "$OUT/targets.log" "$PY" backends/cuda_cupy/bench_gpu.py --json "$OUT/targets.json"
cat "$OUT/targets.log" >> "$summary"
step benchmarks "$OUT/benchmarks.log" "$PY" -m benchmarks --backend cuda_cupy --no-write
echo "overall: $([ $status -eq 0 ] && echo PASS || echo FAIL)" | tee -a "$summary"
exit $status
