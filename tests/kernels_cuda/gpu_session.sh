#!/usr/bin/env bash
# The GPU session of the cuda backend in one go: build the kernels, record
# each form with `tracerace record --backend cuda`, check it, run
# `compute-sanitizer --tool racecheck` on the same program, and print a
# markdown table of the verdicts and the recording overhead (for docs/cuda.md
# and bench/README.md). Run from the repository root on a machine with an
# NVIDIA GPU, nvcc and compute-sanitizer (and torch + triton for the Triton row).
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${TRACERACE_GPU_WORK:-$(mktemp -d)}
nvcc -O2 -lineinfo -arch=native -o "$work/reduce" tests/kernels_cuda/reduce.cu || exit 2
nvcc -O2 -lineinfo -arch=native -o "$work/pipeline" tests/kernels_cuda/pipeline.cu || exit 2
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)

row() {  # name, command...
  local name=$1; shift
  local t0 t1 t2 verdict racecheck
  t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N)
  if python -m tracerace record --backend cuda -o "$work/$name.arrow" -- "$@" \
       2>"$work/$name.record.log"; then
    t2=$(date +%s.%N)
    python -m tracerace check "$work/$name.arrow" --format json >"$work/$name.json" 2>/dev/null
    verdict=$(python -c "import json,sys; r=json.load(open(sys.argv[1])); \
print(', '.join(sorted({g['kind'] for g in r['groups'] if g['severity']=='error'})) or 'clean')" \
      "$work/$name.json" 2>/dev/null || echo "check failed")
  else
    t2=$(date +%s.%N); verdict="not recorded: $(tail -n1 "$work/$name.record.log")"
  fi
  "$sanitizer" --tool racecheck --racecheck-report hazard "$@" >"$work/$name.racecheck" 2>&1
  racecheck=$(grep -Eo "RACECHECK SUMMARY: [0-9]+ hazards? displayed \([0-9]+ errors?, [0-9]+ warnings?\)" \
    "$work/$name.racecheck" | head -n1)
  printf '| %s | %s | %s | %.2f s | %.2f s |\n' "$name" "$verdict" "${racecheck:-no hazard}" \
    "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)"
}

echo "| kernel | tracerace | racecheck | plain run | recorded run |"
echo "|---|---|---|---|---|"
row reduce-sync "$work/reduce" sync
row reduce-nosync "$work/reduce" nosync
row pipeline-wait "$work/pipeline" wait
row pipeline-nowait "$work/pipeline" nowait
row triton-separate python tests/kernels_cuda/triton_add.py separate
row triton-aliased python tests/kernels_cuda/triton_add.py aliased
echo "(work files in $work)"
