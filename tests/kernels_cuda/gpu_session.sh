#!/usr/bin/env bash
# The GPU session of the cuda backend in one go: build the kernels, record
# each form with `tracerace record --backend cuda`, check it, run
# `compute-sanitizer --tool racecheck` on the same program, and print a
# markdown table of the verdicts, then one of the recording overhead (for
# docs/cuda.md and bench/README.md). Run from the repository root on a machine
# with an NVIDIA GPU, nvcc and compute-sanitizer (and torch + triton for the
# Triton rows). Work files (traces, reports, racecheck logs, and each row's raw
# record stream and cubins under NAME.stream/) stay in $TRACERACE_GPU_WORK.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
work=${TRACERACE_GPU_WORK:-$(mktemp -d)}
mkdir -p "$work"
py=${PYTHON:-python3}
nvcc -O2 -lineinfo -arch=native -o "$work/reduce" tests/kernels_cuda/reduce.cu || exit 2
nvcc -O2 -lineinfo -arch=native -o "$work/pipeline" tests/kernels_cuda/pipeline.cu || exit 2
nvcc -O2 -lineinfo -arch=native -o "$work/exchange" tests/kernels_cuda/exchange.cu || exit 2
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
limit=${TRACERACE_GPU_LIMIT:-300}

seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

row() {  # name, command...
  local name=$1; shift
  local t0 t1 t2 verdict racecheck
  t0=$EPOCHREALTIME; timeout "$limit" "$@" >"$work/$name.plain.log" 2>&1; t1=$EPOCHREALTIME
  if TRACERACE_CUDA_KEEP="$work/$name.stream" timeout "$limit" \
       "$py" -m tracerace record --backend cuda -o "$work/$name.arrow" -- "$@" \
       >"$work/$name.record.log" 2>&1; then
    t2=$EPOCHREALTIME
    timeout "$limit" "$py" -m tracerace check "$work/$name.arrow" >"$work/$name.txt" 2>&1
    timeout "$limit" "$py" -m tracerace check "$work/$name.arrow" --format json \
      >"$work/$name.json" 2>/dev/null
    verdict=$("$py" -c "import json,sys; r=json.load(open(sys.argv[1])); \
print(', '.join(sorted({g['kind'] for g in r['hazards'] if g['severity']=='error'})) or 'clean')" \
      "$work/$name.json" 2>/dev/null || echo "check failed")
  else
    t2=$EPOCHREALTIME; verdict="not recorded: $(tail -n1 "$work/$name.record.log")"
  fi
  timeout "$limit" "$sanitizer" --tool racecheck --racecheck-report hazard "$@" \
    >"$work/$name.racecheck" 2>&1
  racecheck=$(grep -Eo "RACECHECK SUMMARY: [0-9]+ hazards? displayed \([0-9]+ errors?, [0-9]+ warnings?\)" \
    "$work/$name.racecheck" | head -n1)
  printf '| %s | %s | %s | %s s | %s s |\n' "$name" "$verdict" "${racecheck:-no hazard}" \
    "$(seconds "$t0" "$t1")" "$(seconds "$t1" "$t2")"
}

kernel_ms() { grep -Eo "kernel_ms=[0-9.]+" "$1" | tail -n1 | cut -d= -f2; }

overhead() {  # blocks: the reduction's kernel time plain and recorded (CUDA events)
  local blocks=$1 plain recorded
  "$work/reduce" sync "$blocks" >"$work/overhead-$blocks.plain.log" 2>&1
  "$work/reduce" sync "$blocks" >"$work/overhead-$blocks.plain.log" 2>&1
  TRACERACE_CUDA_BUFFER_MB=${TRACERACE_CUDA_BUFFER_MB:-1024} timeout "$limit" \
    "$py" -m tracerace record --backend cuda -o "$work/overhead-$blocks.arrow" -- \
    "$work/reduce" sync "$blocks" >"$work/overhead-$blocks.record.log" 2>&1
  plain=$(kernel_ms "$work/overhead-$blocks.plain.log")
  recorded=$(kernel_ms "$work/overhead-$blocks.record.log")
  printf '| reduce sync, %s blocks of 256 | %s ms | %s ms | %s |\n' "$blocks" "${plain:-?}" \
    "${recorded:-?}" "$(awk -v a="${plain:-0}" -v b="${recorded:-0}" \
      'BEGIN { if (a > 0 && b > 0) printf "%.0fx", b / a; else print "?" }')"
}

echo "| kernel | tracerace | racecheck | plain run | recorded run |"
echo "|---|---|---|---|---|"
row reduce-sync "$work/reduce" sync
row reduce-nosync "$work/reduce" nosync
row reduce-exit "$work/reduce" exit
row pipeline-wait "$work/pipeline" wait
row pipeline-nowait "$work/pipeline" nowait
row exchange-wait "$work/exchange" wait
row exchange-nowait "$work/exchange" nowait
row triton-separate "$py" tests/kernels_cuda/triton_add.py separate
row triton-aliased "$py" tests/kernels_cuda/triton_add.py aliased
echo
echo "| kernel | plain (CUDA events) | recorded (launch to drained) | slowdown |"
echo "|---|---|---|---|"
for blocks in 64 512; do overhead "$blocks"; done
echo "(work files in $work)"
