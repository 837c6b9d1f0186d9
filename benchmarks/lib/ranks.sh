# Shared by the multi-GPU benchmark scripts (source it): start W speedgate-train ranks the
# way torchrun does (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), one per GPU,
# and read fields of their result. Needs BIN (the bin directory) and jq; NVLink multicast
# stays off (NCCL_NVLS_ENABLE=0 etc., see the device host's notes).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
SG_RANKS_PORT=${SG_RANKS_PORT:-29611}

# run_ranks W RESULT TRAINER-ARGS...: rank r runs on GPU r; rank 0 writes RESULT; each
# rank's output goes to RESULT.rankR.log. Returns the first non-zero exit code.
run_ranks() {
  local world=$1 res=$2
  shift 2
  local pids=() r code=0 p c
  SG_RANKS_PORT=$((SG_RANKS_PORT + 1))
  for r in $(seq 0 $((world - 1))); do
    RANK=$r WORLD_SIZE=$world LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$SG_RANKS_PORT \
      "$BIN/speedgate-train" run "$@" --result "$res" >"$res.rank$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do
    wait "$p"
    c=$?
    [ "$code" = 0 ] && code=$c
  done
  return $code
}

# field RESULT JQ-FILTER: the value, or "-" when the file or field is missing.
field() { jq -r "$2" "$1" 2>/dev/null || echo -; }

# peak_gib RESULT allocated|reserved: the largest rank's peak in GiB (2 decimals).
peak_gib() { field "$1" "(.memory.peak_$2_bytes // [0] | max) / 1073741824 * 100 | round / 100"; }

# efficiency ONE_GPU K_GPUS K: K-GPU samples/s / (K x 1-GPU samples/s), 3 decimals, or "-".
efficiency() { awk -v a="$1" -v b="$2" -v k="$3" 'BEGIN{ if (a>0 && b>0) printf "%.3f", b/(k*a); else print "-" }'; }

# finish_report NAME: copy the tee'd WORK/NAME.md to OUT and pack WORK (results, rank logs)
# into OUT/NAME_logs.tgz.
finish_report() {
  cp "$WORK/$1.md" "$OUT/$1.md"
  tar czf "$OUT/$1_logs.tgz" -C "$WORK" . 2>/dev/null || true
}
