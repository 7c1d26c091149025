#!/usr/bin/env bash
# Everything a lent GPU machine (one H100/H200, 16 cores) is needed for, in one
# command of under 10 minutes:
#   1. the Hopper session (tests/kernels_cuda/hopper_session.sh): the sm_90a
#      kernels recorded with `record --backend cuda`, checked, and compared with
#      compute-sanitizer, bounded to $HOPPER_BUDGET seconds (300);
#   2. the shards' curve: `python -m bench.jobs` for 1, 2, 4, 8 and 16 jobs on
#      tiled, pipeline and cpu at 10^7, 1 and 16 jobs with batches of 2^20
#      rows, then tiled at 10^8 while time is left,
#      with the cores otherwise idle (the traces are generated and the Numba
#      kernels compiled while step 1 runs).
# Results go to $OUT (or ./gpu-machine-out) in at most eight files: the
# session's fixtures and work files as two .tar.xz, the curve's JSON, the log.
# CURVE=0 leaves step 2 out, and runs `bench.ceiling` on 1-16 threads instead
# (what the machine itself gives); TRACERACE_GPU_ROWS picks session rows.
#
#   bash bench/gpu_machine.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-gpu-machine-out}
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export PATH=$PATH:/usr/local/cuda/bin
py=${PYTHON:-python3}
start=$SECONDS
data=/tmp/tracerace-bench
work=/tmp/hopper-work
fixtures=/tmp/hopper-fixtures
mkdir -p "$data" "$work" "$fixtures"

echo "== machine"
nproc
lscpu | grep -E "^(Model name|CPU\(s\)|Thread|Core|Socket)" || true
free -g | head -n2
"$py" -c "import sys, numba, numpy, pyarrow; print(sys.version.split()[0], 'numba', \
numba.__version__, 'numpy', numpy.__version__, 'pyarrow', pyarrow.__version__)"

# The curve's traces and the shards' kernels, while the GPU session runs.
prepare=
if [ "${CURVE:-1}" = 1 ]; then
  "$py" - >"$out/prepare.txt" 2>&1 <<'EOF' &
import sys
from pathlib import Path
from bench.run import ensure_trace
for name, n, label in [("tiled", 10**7, "1e7"), ("pipeline", 10**7, "1e7"),
                       ("cpu", 10**7, "1e7"), ("tiled", 10**8, "1e8")]:
    ensure_trace(name, n, label, Path("/tmp/tracerace-bench"), None, False,
                 lambda m: print(m, file=sys.stderr))
import tracerace
from bench.measure import _tiny
from tracerace.trace.writer import write_table
write_table("/tmp/tiny.arrow", _tiny())
tracerace.check("/tmp/tiny.arrow", jobs=1)
tracerace.check("/tmp/tiny.arrow", jobs=2)
print("curve inputs ready", file=sys.stderr)
EOF
  prepare=$!
fi

echo "== Hopper session ($((SECONDS - start)) s)"
TRACERACE_GPU_WORK=$work TRACERACE_GPU_BUDGET=${HOPPER_BUDGET:-300} \
  bash tests/kernels_cuda/hopper_session.sh "$fixtures"
echo "hopper session exit $? ($((SECONDS - start)) s)"
tar -C "$fixtures" -cJf "$out/hopper-fixtures.tar.xz" . 2>/dev/null
tar -C "$work" -cJf "$out/hopper-work.tar.xz" --exclude='*.stream' --exclude='hopper_*' \
  --exclude='*.accelsim' . 2>/dev/null

if [ -z "$prepare" ]; then
  echo "== what the machine gives ($((SECONDS - start)) s)"
  timeout 120 "$py" -m bench.ceiling --threads 1,2,4,8,16 --reps 2 --scale 0.5
  echo "== done ($((SECONDS - start)) s)"
  exit 0
fi
echo "== shards' curve ($((SECONDS - start)) s)"
timeout 120 tail --pid="$prepare" -f /dev/null
wait "$prepare"
echo "prepare exit $?"
left=$((${CURVE_END:-540} - SECONDS + start))
timeout "$left" "$py" -m bench.jobs --size 1e7 --workload tiled,pipeline,cpu \
  --jobs 1,2,4,8,16 --data-dir "$data" --out "$out/jobs-curve.json"
echo "curve 1e7 exit $? ($((SECONDS - start)) s)"
# What stops 16 shards at ~2x (bench/README.md, 1 to 16 jobs): batches of 2^20
# rows, where the deal batch by batch is more even than at the default 2^17.
left=$((${CURVE_END:-540} - SECONDS + start))
((left > 30)) && timeout "$left" "$py" -m bench.jobs --size 1e7 --workload tiled,pipeline \
  --jobs 1,16 --batch-size 1048576 --data-dir "$data"
left=$((${CURVE_END:-540} - SECONDS + start))
if ((left > 30)); then
  timeout "$left" "$py" -m bench.jobs --size 1e8 --workload tiled \
    --jobs 1,2,4,8,16 --data-dir "$data" --out "$out/jobs-curve.json"
  echo "curve 1e8 exit $? ($((SECONDS - start)) s)"
fi
echo "== done ($((SECONDS - start)) s)"
