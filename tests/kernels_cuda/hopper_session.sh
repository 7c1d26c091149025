#!/usr/bin/env bash
# The Hopper GPU session in one command, bounded to $TRACERACE_GPU_BUDGET
# seconds (540 by default, so under 10 minutes) on one H100/H200: build the
# sm_90a kernels, record each form with `tracerace record --backend cuda`,
# check what was recorded, run compute-sanitizer racecheck and synccheck on
# the same program, record again with Accel-Sim's tracer where one is at hand,
# print markdown tables of the verdicts (for docs/cuda.md), and pack each
# row's recording, xz-compressed, as CI fixtures.
#
#   tests/kernels_cuda/hopper_session.sh [FIXTURE_DIR]
#
# Rows (docs/cuda.md gives what each showed on an H200):
#   hopper-tma-wait / -nowait        warp-specialized tensor-TMA pipeline, with and
#                                    without the consumers' mbarrier wait (hopper_tma.cu)
#   hopper-ring-fence / -nofence     bulk-copy ring, with and without fence.proxy.async
#                                    (hopper_bulk_ring.cu)
#   hopper-cluster-sync / -nosync    two blocks of a cluster exchanging through
#                                    distributed shared memory, with and without the
#                                    cluster barrier (hopper_cluster.cu)
#   hopper-multicast-wait / -nowait  a multicast TMA load into a 2-block cluster whose
#                                    consumers read the tile with and without waiting
#                                    for it (hopper_multicast.cu, incident 5's shape)
#   triton-tma-separate / -aliased   a Triton kernel on tl.make_tensor_descriptor,
#                                    compiled by Triton for the GPU (triton_tma.py)
# A row the recorder refuses shows its one-line reason: that is a result too.
#
# Accel-Sim's tracer is an NVBit tool, and NVBit is a binary release from
# GitHub that this repository cannot carry and a GPU machine without network
# cannot download. The tracer rows run when the machine has one: set
# ACCELSIM_TRACER to a built tracer_tool.so (post-traces-processing beside it
# in traces-processing/, or ACCELSIM_POST), or ACCELSIM_DIR to an
# accel-sim-framework checkout whose util/tracer_nvbit/nvbit_release/ (or
# NVBIT_DIR) holds the release, and the session builds it. Otherwise the
# tracer table says why it did not run.
#
# Run from the repository root on a machine with an sm_90 GPU, nvcc (CUDA 12.4
# or newer), compute-sanitizer, and torch + triton for the Triton rows.
# Fixtures go to FIXTURE_DIR (default $OUT/hopper if $OUT is set, else
# tests/data/cuda/hopper); work files stay in $TRACERACE_GPU_WORK. Each step
# is bounded by $TRACERACE_GPU_LIMIT seconds (60) and by what is left of the
# budget; a step the budget no longer allows is skipped and its row says so.
# TRACERACE_GPU_ROWS (an extended regular expression) runs only the rows whose
# names match it, to rerun some within the budget. The checker's first compile
# runs beside the builds (TRACERACE_GPU_WARMUP=0: not at all).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
work=${TRACERACE_GPU_WORK:-$(mktemp -d)}
fixtures=${1:-${OUT:+$OUT/hopper}}
fixtures=${fixtures:-tests/data/cuda/hopper}
mkdir -p "$work" "$fixtures"
py=${PYTHON:-python3}
limit=${TRACERACE_GPU_LIMIT:-60}
deadline=$((SECONDS + ${TRACERACE_GPU_BUDGET:-540}))
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
skipped="skipped: session budget spent"

wanted() {  # row name: whether TRACERACE_GPU_ROWS selects it
  [[ $1 =~ ${TRACERACE_GPU_ROWS:-.} ]]
}

bounded() {  # seconds, command...: run it within both its bound and the budget
  local want=$1 left=$((deadline - SECONDS))
  shift
  if ((left < 5)); then
    echo "$skipped" >&2
    return 125
  fi
  timeout "$((want < left ? want : left))" "$@"
}

summary() {  # status, racecheck/synccheck log -> its summary line, or why there is none
  case $1 in
    124) echo "timed out" ;;
    125) echo "$skipped" ;;
    *) grep -Eo "(RACECHECK|ERROR) SUMMARY: [0-9]+ (hazards? displayed \([0-9]+ errors?, [0-9]+ warnings?\)|errors?)" \
         "$2" | head -n1 | grep . || echo "no summary" ;;
  esac
}

verdict() {  # a check --format json report -> the error kinds, or clean
  "$py" -c "import json,sys; r=json.load(open(sys.argv[1])); \
print(', '.join(sorted({g['kind'] for g in r['hazards'] if g['severity']=='error'})) or 'clean')" \
    "$1" 2>/dev/null || echo "check failed"
}

failed() {  # status, log[, what failed] -> why a step gave no result
  case $1 in
    124) echo "timed out" ;;
    125) echo "$skipped" ;;
    *) echo "${3:-not recorded}: $(tail -n1 "$2" | cut -c1-160)" ;;
  esac
}

# The checker's Numba kernels compile on a fresh machine's first check; compile
# them (a demo trace checked) while the kernels build, so no row's check step
# spends its bound on it (TRACERACE_GPU_WARMUP=0 leaves this out).
if [ "${TRACERACE_GPU_WARMUP:-1}" = 1 ]; then
  bounded 300 "$py" -m tracerace demo incident5 -o "$work/warmup.arrow" >"$work/warmup.log" 2>&1 &
else
  true &
fi
warmup=$!
trap 'kill "$warmup" 2>/dev/null' EXIT

for k in hopper_tma hopper_bulk_ring hopper_cluster hopper_multicast; do
  bounded 120 nvcc -O2 -lineinfo -gencode arch=compute_90a,code=sm_90a \
    -o "$work/$k" "tests/kernels_cuda/$k.cu" || exit 2
done
{
  bounded 10 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1
  bounded 10 nvcc --version | tail -n1
  bounded 10 "$sanitizer" --version | tail -n1
  bounded 10 "$py" -c "import triton; print('triton', triton.__version__)"
} >"$fixtures/DEVICE.txt" 2>&1

# The recorder's tool library is built on first use; build it here, bounded
# on its own, so the first row's record step does not spend its bound on it.
bounded 240 "$py" -c "from tracerace.record.cuda.build import find_toolkit, tool_library; \
print(tool_library(find_toolkit()))" >"$work/tool-build.log" 2>&1 \
  || failed $? "$work/tool-build.log" "tool build failed"
wait "$warmup"
status=$?
trap - EXIT
# demo exits 1: the incident's hazards were found, as they should be
[ "$status" = 0 ] || [ "$status" = 1 ] \
  || echo "checker warm-up: $(failed "$status" "$work/warmup.log" "failed")"

pack() {  # name, stream dir: its record stream and cubins, xz-compressed, as fixtures
  local name=$1 f module
  for f in "$2"/*.trc; do
    [ -f "$f" ] && xz -9 -c "$f" >"$fixtures/$name.trc.xz"
  done
  for f in "$2"/*.cubin; do
    [ -f "$f" ] || continue
    module=$(basename "$f" .cubin | grep -Eo "module-[0-9]+" || basename "$f" .cubin)
    # A library's large module (PyTorch's, in the Triton rows) stays out: its
    # sites stay offsets. Its name and size are listed instead.
    if [ "$(stat -c %s "$f")" -gt 1048576 ]; then
      echo "$module $(stat -c %s "$f") bytes" >>"$fixtures/$name.left-out.txt"
    else
      xz -9 -c "$f" >"$fixtures/$name.$module.cubin.xz"
    fi
  done
}

row() {  # name, command...
  local name=$1 verdict racecheck synccheck status
  shift
  wanted "$name" || return 0
  bounded "$limit" env TRACERACE_CUDA_KEEP="$work/$name.stream" \
    "$py" -m tracerace record --backend cuda -o "$work/$name.arrow" -- "$@" \
    >"$work/$name.record.log" 2>&1
  status=$?
  if [ "$status" = 0 ]; then
    bounded "$limit" "$py" -m tracerace check "$work/$name.arrow" --format json \
      >"$work/$name.json" 2>"$work/$name.check.log"
    status=$?
    case $status in
      0 | 1) verdict=$(verdict "$work/$name.json") ;;
      *) verdict=$(failed "$status" "$work/$name.check.log" "check failed") ;;
    esac
  else
    verdict=$(failed "$status" "$work/$name.record.log")
  fi
  bounded "$limit" "$sanitizer" --tool racecheck --racecheck-report hazard "$@" \
    >"$work/$name.racecheck" 2>&1
  racecheck=$(summary $? "$work/$name.racecheck")
  bounded "$limit" "$sanitizer" --tool synccheck "$@" >"$work/$name.synccheck" 2>&1
  synccheck=$(summary $? "$work/$name.synccheck")
  pack "$name" "$work/$name.stream"
  cp "$work/$name.record.log" "$fixtures/$name.record.log" 2>/dev/null
  printf '| %s | %s | %s | %s |\n' "$name" "$verdict" "$racecheck" "$synccheck"
}

accelsim_tool() {  # prints the tracer_tool.so to use, or why there is none (status 1)
  if [ -n "${ACCELSIM_TRACER:-}" ]; then
    [ -f "$ACCELSIM_TRACER" ] && { echo "$ACCELSIM_TRACER"; return 0; }
    echo "ACCELSIM_TRACER=$ACCELSIM_TRACER is not a file"; return 1
  fi
  if [ -z "${ACCELSIM_DIR:-}" ]; then
    echo "no tracer: NVBit is not in this repository and cannot be downloaded offline;" \
      "set ACCELSIM_TRACER or ACCELSIM_DIR"; return 1
  fi
  local tools=$ACCELSIM_DIR/util/tracer_nvbit
  local nvbit=${NVBIT_DIR:-$tools/nvbit_release}
  if [ ! -f "$nvbit/core/libnvbit.a" ]; then
    echo "no NVBit release at $nvbit (core/libnvbit.a)"; return 1
  fi
  if ! bounded 180 make -C "$tools/tracer_tool" NVBIT_PATH="$nvbit/core" \
         >"$work/accelsim-build.log" 2>&1 \
     || ! bounded 60 make -C "$tools/tracer_tool/traces-processing" \
         >>"$work/accelsim-build.log" 2>&1; then
    echo "tracer build failed: $(tail -n1 "$work/accelsim-build.log" | cut -c1-120)"; return 1
  fi
  echo "$tools/tracer_tool/tracer_tool.so"
}

traced() {  # tool, post-processor, name, command...: the kernel under Accel-Sim's tracer
  local tool=$1 post=$2 name=$3 dir status list lists grouped
  shift 3
  wanted "$name" || return 0
  dir="$work/$name.accelsim"
  mkdir -p "$dir"
  # The tracer writes under $TRACES_FOLDER/traces/ one kernelslist per CUDA
  # context (kernelslist_ctx_0x..., or kernelslist in older tracers) naming
  # kernel-N*.trace; the post-processor groups each list's traces by block and
  # writes LIST.g beside it, which the import reads as kernelslist.g.
  bounded "$limit" env USER_DEFINED_FOLDERS=1 TRACES_FOLDER="$dir" TRACE_LINEINFO=1 \
    TRACE_FILE_COMPRESS=0 CUDA_INJECTION64_PATH="$tool" "$@" >"$dir/tracer.log" 2>&1
  status=$?
  if [ "$status" != 0 ]; then
    echo "| $name | $(failed "$status" "$dir/tracer.log") |"; return
  fi
  mapfile -t lists < <(find "$dir" -type f -name 'kernelslist*' ! -name '*.g')
  if [ "${#lists[@]}" = 0 ]; then
    echo "| $name | not recorded: the tracer wrote no kernelslist |"; return
  fi
  for list in "${lists[@]}"; do
    bounded "$limit" "$post" "$list" >>"$dir/post.log" 2>&1
  done
  grouped="${lists[0]}.g"
  [ -f "$grouped" ] && [ "$grouped" != "$(dirname "$grouped")/kernelslist.g" ] \
    && cp "$grouped" "$(dirname "$grouped")/kernelslist.g"
  bounded "$limit" "$py" -m tracerace convert "$(dirname "$grouped")/kernelslist.g" \
    "$work/$name.accelsim.arrow" >"$dir/convert.log" 2>&1
  status=$?
  if [ "$status" = 0 ]; then
    bounded "$limit" "$py" -m tracerace check "$work/$name.accelsim.arrow" --format json \
      >"$work/$name.accelsim.json" 2>"$dir/check.log"
    status=$?
    case $status in
      0 | 1) echo "| $name | $(verdict "$work/$name.accelsim.json") |" ;;
      *) echo "| $name | $(failed "$status" "$dir/check.log" "check failed") |" ;;
    esac
  else
    echo "| $name | $(failed "$status" "$dir/convert.log") |"
  fi
  tar -C "$dir" -cJf "$fixtures/$name.accelsim.tar.xz" \
    --exclude='*.trace' --exclude='*.trace.xz' . 2>/dev/null
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
  row hopper-multicast-wait "$work/hopper_multicast" wait
  row hopper-multicast-nowait "$work/hopper_multicast" nowait
  row triton-tma-separate "$py" tests/kernels_cuda/triton_tma.py separate
  row triton-tma-aliased "$py" tests/kernels_cuda/triton_tma.py aliased
} | tee "$fixtures/VERDICTS.md"

{
  echo
  echo "| kernel | tracerace (Accel-Sim tracer) |"
  echo "|---|---|"
  if tool=$(accelsim_tool); then
    post=${ACCELSIM_POST:-$(dirname "$tool")/traces-processing/post-traces-processing}
    for form in "hopper-tma-wait hopper_tma wait" "hopper-tma-nowait hopper_tma nowait" \
                "hopper-cluster-sync hopper_cluster sync" \
                "hopper-cluster-nosync hopper_cluster nosync" \
                "hopper-multicast-wait hopper_multicast wait" \
                "hopper-multicast-nowait hopper_multicast nowait"; do
      read -r name binary arg <<<"$form"
      traced "$tool" "$post" "$name" "$work/$binary" "$arg"
    done
  else
    echo "| (all) | not run: $tool |"
  fi
} | tee -a "$fixtures/VERDICTS.md"
echo "(fixtures in $fixtures, work files in $work; $SECONDS s)"
