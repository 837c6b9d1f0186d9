# Shared by the single-GPU switch benchmarks, lm_switches.sh and wam_switches.sh (source
# it): the configurations worth timing, read from a trainer manifest, and the helpers of
# their markdown table. Needs jq.

# switch_configs WORKLOAD MANIFEST: sets SINGLE (an array: every available switch of
# WORKLOAD, no "workloads" field meaning every workload, with a non-default value worth
# timing, with its requires, as "SG_A=1 SG_B=1") and ALL (every speed and schedule switch
# together plus no activation recompute, and whatever they require). Bools 1, enums each
# non-default value (ALL: the last), int memory switches their smallest candidate
# (CKPT_LAYERS=0: no recompute), int schedule switches their largest (most workers).
# A switch of another workload (lm's PAD_TO_8 for wam) would make the trainer refuse the
# whole configuration.
switch_configs() {
  local pick='def pick: .effect as $eff
  | if .type == "int"
    then (.values - [.default] | map(tonumber)
          | if length == 0 then empty else (if $eff == "schedule" then max else min end | tostring) end)
    else (.values - [.default])[] end;'
  local applies='select(.available and ((.workloads // [$w]) | index($w)))'
  mapfile -t SINGLE < <(jq -r --arg w "$1" "$pick"'
  .switches[] | '"$applies"' | . as $s | ($s | pick) as $v
  | ([$s.requires[] | "SG_" + .] + ["\($s.env)=\($v)"]) | join(" ")' <<<"$2")
  ALL=$(jq -r --arg w "$1" "$pick"'
  [.switches[] | '"$applies"' | select(.effect == "speed" or .effect == "schedule") | . as $s
   | ([$s | pick] | last) as $v | ([$s.requires[] | "SG_" + .] + ["\($s.env)=\($v)"])[]]
  + [.switches[] | '"$applies"' | select(.name == "CKPT_LAYERS") | "\(.env)=0"] | unique | join(" ")' <<<"$2")
}

# median: the median of the numbers on stdin, one a line; "nan" when there are none.
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# table_provenance RESULT ROOT: sets DEVICE (RESULT's device name, "?" without one), SHA
# (ROOT's commit) and DATE (today, UTC) for the table's header.
table_provenance() {
  DEVICE=$(jq -r '.fingerprint.device_name // "?"' "$1" 2>/dev/null || echo "?")
  SHA=$(git -C "$2" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
  DATE=$(date -u +%Y-%m-%d)
}

# result_gib RESULT allocated|reserved: rank 0's peak in GiB, "nan" without a result.
result_gib() { jq -r ".memory.peak_$2_bytes[0] / 1073741824" "$1" 2>/dev/null || echo nan; }

# speedup_mfu RATE BASE_RATE FLOPS_PER_ITEM PEAK_FLOPS MFU_FORMAT: "S.SSx MFU%" with the
# MFU printed by MFU_FORMAT (e.g. %.1f), or "nan nan" when a rate is missing.
speedup_mfu() {
  awk -v s="$1" -v b="$2" -v f="$3" -v p="$4" -v fmt="%.2fx $5%%\n" \
    'BEGIN {if (s=="nan" || b=="nan" || b==0) print "nan nan"; else printf fmt, s/b, 100*s*f/p}'
}
