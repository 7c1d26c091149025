#!/usr/bin/env bash
# The Hopper GPU session in one command (under 10 minutes on one H100/H200):
# build the sm_90a kernels, record each form with `tracerace record --backend
# cuda`, check what was recorded, run compute-sanitizer racecheck and synccheck
# on the same program, print a markdown table of the verdicts (for
# docs/cuda.md), and pack each row's record stream and cubins, xz-compressed,
# as CI fixtures.
#
#   tests/kernels_cuda/hopper_session.sh [FIXTURE_DIR]
#
# Rows: hopper-tma-wait / -nowait (a warp-specialized tensor-TMA pipeline with
# and without the consumers' mbarrier wait), hopper-ring-fence / -nofence (a
# bulk-copy ring with and without fence.proxy.async), hopper-cluster-sync /
# -nosync (two blocks of a cluster exchanging through distributed shared
# memory with and without the cluster barrier). A row the recorder refuses
# shows its one-line reason: that is a result too (what the Compute Sanitizer
# API cannot report, or what the converter does not follow yet).
#
# Run from the repository root on a machine with an sm_90 GPU, nvcc (CUDA 12.4
# or newer) and compute-sanitizer. Fixtures go to FIXTURE_DIR (default
# $OUT/hopper if $OUT is set, else tests/data/cuda/hopper); work files stay in
# $TRACERACE_GPU_WORK. Each step is bounded by $TRACERACE_GPU_LIMIT seconds.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${TRACERACE_GPU_WORK:-$(mktemp -d)}
fixtures=${1:-${OUT:+$OUT/hopper}}
fixtures=${fixtures:-tests/data/cuda/hopper}
mkdir -p "$work" "$fixtures"
py=${PYTHON:-python3}
limit=${TRACERACE_GPU_LIMIT:-60}
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)

for k in hopper_tma hopper_bulk_ring hopper_cluster; do
  nvcc -O2 -lineinfo -arch=sm_90a -o "$work/$k" "tests/kernels_cuda/$k.cu" || exit 2
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1 \
  >"$fixtures/DEVICE.txt" 2>/dev/null
nvcc --version | tail -n1 >>"$fixtures/DEVICE.txt"
"$sanitizer" --version | tail -n1 >>"$fixtures/DEVICE.txt"

summary() {  # racecheck/synccheck log -> its summary line
  grep -Eo "(RACECHECK|ERROR) SUMMARY: [0-9]+ (hazards? displayed \([0-9]+ errors?, [0-9]+ warnings?\)|errors?)" \
    "$1" | head -n1
}

row() {  # name, command...
  local name=$1; shift
  local verdict racecheck synccheck
  if TRACERACE_CUDA_KEEP="$work/$name.stream" timeout "$limit" \
       "$py" -m tracerace record --backend cuda -o "$work/$name.arrow" -- "$@" \
       >"$work/$name.record.log" 2>&1; then
    timeout "$limit" "$py" -m tracerace check "$work/$name.arrow" --format json \
      >"$work/$name.json" 2>/dev/null
    verdict=$("$py" -c "import json,sys; r=json.load(open(sys.argv[1])); \
print(', '.join(sorted({g['kind'] for g in r['hazards'] if g['severity']=='error'})) or 'clean')" \
      "$work/$name.json" 2>/dev/null || echo "check failed")
  else
    verdict="not recorded: $(tail -n1 "$work/$name.record.log" | cut -c1-160)"
  fi
  timeout "$limit" "$sanitizer" --tool racecheck --racecheck-report hazard "$@" \
    >"$work/$name.racecheck" 2>&1
  timeout "$limit" "$sanitizer" --tool synccheck "$@" >"$work/$name.synccheck" 2>&1
  racecheck=$(summary "$work/$name.racecheck")
  synccheck=$(summary "$work/$name.synccheck")
  # The stream and the cubins the tool kept, compressed, as fixtures.
  for f in "$work/$name.stream"/*.trc; do
    [ -f "$f" ] && xz -9 -c "$f" >"$fixtures/$name.trc.xz"
  done
  for f in "$work/$name.stream"/*.cubin; do
    [ -f "$f" ] || continue
    module=$(basename "$f" .cubin | grep -Eo "module-[0-9]+" || basename "$f" .cubin)
    xz -9 -c "$f" >"$fixtures/$name.$module.cubin.xz"
  done
  cp "$work/$name.record.log" "$fixtures/$name.record.log" 2>/dev/null
  printf '| %s | %s | %s | %s |\n' "$name" "$verdict" "${racecheck:-no summary}" \
    "${synccheck:-no summary}"
}

{
  echo "| kernel | tracerace | racecheck | synccheck |"
  echo "|---|---|---|---|"
  row hopper-tma-wait "$work/hopper_tma" wait
  row hopper-tma-nowait "$work/hopper_tma" nowait
  row hopper-ring-fence "$work/hopper_bulk_ring" fence
  row hopper-ring-nofence "$work/hopper_bulk_ring" nofence
  row hopper-cluster-sync "$work/hopper_cluster" sync
  row hopper-cluster-nosync "$work/hopper_cluster" nosync
} | tee "$fixtures/VERDICTS.md"
echo "(fixtures in $fixtures, work files in $work)"
