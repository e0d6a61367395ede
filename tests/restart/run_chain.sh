#!/usr/bin/env bash
# run_chain.sh - chains of checkpoints at random moments, compared with a native run.
#
# usage: run_chain.sh [options] PROGRAM [ARGS...]
#
# Runs PROGRAM natively once (the reference stdout and exit status), then, for every launch
# form, one chain under mana:
#
#   launch -> [checkpoint without kill]... -> checkpoint+kill -> restart -> ... -> restart
#          -> [checkpoint without kill]... -> the program finishes
#
# Every checkpoint is requested with mana_status at a random moment (a seeded delay counted
# from the moment every rank is connected), every kill checkpoint is followed by a restart
# in one of the restart forms, and the stdout of all segments, concatenated, must equal the
# native stdout byte for byte, with the same final exit status.  A killed segment must exit 0.
#
# Options:
#   -n, --ranks N          ranks (default 2)
#   --bin DIR              directory of mana_launch, mana_status, ... (default $MANA_BIN, else
#                          <build>/bin when PROGRAM is in <build>/tests/...)
#   --launcher L           mpiexec (mpiexec.mpich, the default) or srun (srun --mpi=pmi2)
#   --launcher-args "A B"  extra launcher arguments, after -n N (split on spaces)
#   --forms LIST           launch forms to chain, comma separated (default outer,inner):
#                            outer  mana_launch --ckptdir D LAUNCHER -n N PROGRAM ARGS
#                            inner  LAUNCHER -n N mana_launch --ckptdir D PROGRAM ARGS, with a
#                                   coordinator started first with mana_coordinator --daemon
#                                   (the per-rank form checkpoints only through one)
#   --restart-forms LIST   restart forms, used in turn (default outer,inner):
#                            outer  mana_restart --ckptdir D LAUNCHER -n N
#                            inner  LAUNCHER -n N mana_restart --ckptdir D, with a coordinator
#                                   started first and MANA_COORDINATOR/MANA_SECRET_FILE set
#   --kills K              checkpoint+kill+restart cycles per chain (default 2)
#   --checkpoints J        extra checkpoints without kill per chain (default 1)
#   --min-restarts M       restarts each chain must complete (default: K); a chain whose
#                          program finished early is run again with shorter delays
#   --rounds R             attempts per chain to reach M restarts (default 3)
#   --delay LO:HI          random delay range in ms (default: from the native run time T:
#                          0.15..0.9 x T / (K + J + 1))
#   --seed S               random seed (default: from the clock); printed, to reproduce a run
#   --attempts A           requests per checkpoint that may be refused or abandoned before
#                          the checkpoint counts as skipped (default 40)
#   --timeout S            limit per segment and for the native run (default: 600 s for the
#                          native run, then 120 s or 4 x the native run time + 60 s per
#                          segment, whichever is longer: a loaded machine is slow for both)
#   --ckpt-timeout S       limit for one mana_status --wait (default 60)
#   --keep                 keep the work directory (printed)
#   --restart-prefix CMD   each restart runs under CMD (words split on spaces): another node's
#                          view of something, e.g. tests/restart/clock_namespace.sh's clocks
#
# ARGS may contain @WORK@, replaced by a private directory (for programs that write files).
# Exit status: 0 all chains identical to native, 1 a failure (one FAIL line says which),
# 2 usage error, 77 the launcher is not usable here (srun without a running Slurm).
set -euo pipefail

me=run_chain.sh
usage() {
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2
  exit 2
}
die_usage() { echo "$me: $*" >&2; exit 2; }

ranks=2 bin=${MANA_BIN:-} launcher=mpiexec launcher_args="" forms=outer,inner
rforms=outer,inner kills=2 ckpts=1 min_restarts="" rounds=3 delay="" seed="" attempts=40
limit="" ckpt_limit=60 keep=0 restart_prefix=()
while [ $# -gt 0 ]; do
  opt=$1
  case "$opt" in
    --*=*) set -- "${opt%%=*}" "${opt#*=}" "${@:2}"; continue ;;
  esac
  case "$opt" in
    -n|--ranks|--bin|--launcher|--launcher-args|--forms|--restart-forms|--kills|--checkpoints|\
    --min-restarts|--rounds|--delay|--seed|--attempts|--timeout|--ckpt-timeout|--restart-prefix)
      [ $# -ge 2 ] || die_usage "$opt needs a value"
      val=$2
      shift 2 ;;
    --keep) keep=1; shift; continue ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) die_usage "unknown option $opt (see --help)" ;;
    *) break ;;
  esac
  case "$opt" in
    -n|--ranks) ranks=$val ;;
    --bin) bin=$val ;;
    --launcher) launcher=$val ;;
    --launcher-args) launcher_args=$val ;;
    --forms) forms=$val ;;
    --restart-forms) rforms=$val ;;
    --kills) kills=$val ;;
    --checkpoints) ckpts=$val ;;
    --min-restarts) min_restarts=$val ;;
    --rounds) rounds=$val ;;
    --delay) delay=$val ;;
    --seed) seed=$val ;;
    --attempts) attempts=$val ;;
    --timeout) limit=$val ;;
    --ckpt-timeout) ckpt_limit=$val ;;
    --restart-prefix) read -r -a restart_prefix <<<"$val" ;;
  esac
done
[ $# -ge 1 ] || die_usage "no program (see --help)"
for v in ranks kills ckpts rounds attempts ${limit:+limit} ckpt_limit; do
  case "${!v}" in ''|*[!0-9]*) die_usage "$v must be a whole number, not '${!v}'" ;; esac
done
[ "$ranks" -ge 1 ] || die_usage "--ranks must be at least 1"
min_restarts=${min_restarts:-$kills}
case "$min_restarts" in ''|*[!0-9]*) die_usage "--min-restarts must be a whole number" ;; esac
[ "$min_restarts" -le "$kills" ] || die_usage "--min-restarts $min_restarts > --kills $kills"
if [ -n "$delay" ]; then
  [[ "$delay" =~ ^[0-9]+:[0-9]+$ ]] || die_usage "--delay must be LO:HI in ms, not '$delay'"
  delay_lo=${delay%:*} delay_hi=${delay#*:}
  [ "$delay_lo" -le "$delay_hi" ] || die_usage "--delay: LO > HI"
fi
IFS=, read -r -a launch_forms <<<"$forms"
IFS=, read -r -a restart_forms <<<"$rforms"
for f in "${launch_forms[@]}" "${restart_forms[@]}"; do
  case "$f" in outer|inner) ;; *) die_usage "unknown form '$f' (outer or inner)" ;; esac
done
[ ${#launch_forms[@]} -ge 1 ] && [ ${#restart_forms[@]} -ge 1 ] || die_usage "empty form list"

program=$1
shift
prog_args=("$@")
[ -x "$program" ] || { echo "$me: FAIL: program $program not found or not executable"; exit 1; }
case "$program" in /*) ;; *) program="$(cd "$(dirname "$program")" && pwd)/$(basename "$program")" ;; esac
if [ -z "$bin" ]; then
  case "$program" in
    */tests/*) bin="${program%%/tests/*}/bin" ;;
    *) die_usage "--bin (or MANA_BIN) is needed: cannot derive it from $program" ;;
  esac
fi
for t in mana_launch mana_status mana_restart mana_coordinator; do
  [ -x "$bin/$t" ] || { echo "$me: FAIL: $bin/$t not found (--bin)"; exit 1; }
done

case "$launcher" in
  mpiexec|mpiexec.mpich|mpirun) launch=(mpiexec.mpich -n "$ranks") ;;
  srun)
    launch=(srun -n "$ranks" --mpi=pmi2)
    # the private cluster of tests/setup/slurm-local.sh, unless SLURM_CONF names another
    if [ -z "${SLURM_CONF:-}" ] && [ -s "${MANA_SLURM_DIR:-/tmp/mana-slurm-$(id -u)}/slurm.conf" ]; then
      export SLURM_CONF=${MANA_SLURM_DIR:-/tmp/mana-slurm-$(id -u)}/slurm.conf
    fi
    if ! command -v srun >/dev/null || ! timeout 10 sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      echo "$me: SKIP: srun is not usable here (no running Slurm; start one with tests/setup/slurm-local.sh start)"
      exit 77
    fi ;;
  *) die_usage "unknown launcher '$launcher' (mpiexec or srun)" ;;
esac
[ -n "$launcher_args" ] && read -r -a extra <<<"$launcher_args" && launch+=("${extra[@]}")

if [ -z "$seed" ]; then
  seed=$(( $(date +%s%N) % 1000000 ))
fi
case "$seed" in ''|*[!0-9]*) die_usage "--seed must be a whole number" ;; esac
RANDOM=$seed

work=$(mktemp -d "${TMPDIR:-/tmp}/mana-chain.XXXXXX")
coord_pids=()
cleanup() {
  local p
  for p in "${coord_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "${seg_pid:-}" ] && kill -0 "$seg_pid" 2>/dev/null; then
    kill -TERM "$seg_pid" 2>/dev/null || true
    wait "$seg_pid" 2>/dev/null || true
  fi
  if [ "$keep" = 1 ]; then echo "$me: work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
for sig in INT TERM HUP; do
  trap "echo \"$me: FAIL: killed by SIG$sig\"; exit 1" "$sig"
done
for i in "${!prog_args[@]}"; do prog_args[$i]=${prog_args[$i]//@WORK@/$work}; done

t0=$EPOCHREALTIME
now_ms() { local t=${EPOCHREALTIME/./}; echo $(( t / 1000 )); }
start_ms=$(now_ms)
say() { local t; t=$(now_ms); printf '%s [%7.3f s] %s\n' "$me" "$(( t - start_ms ))e-3" "$*"; }
fail() { say "FAIL: $*"; exit 1; }
tail_of() { [ -s "$1" ] && tail -n "${2:-5}" "$1" | sed 's/^/    | /' || true; }

# rand LO HI: a random whole number in [LO, HI] in $r (in this shell, so the sequence is
# reproducible from the seed)
rand() { r=$(( $1 + (RANDOM * 32768 + RANDOM) % ($2 - $1 + 1) )); }

say "seed $seed (reproduce with --seed $seed); $ranks rank(s), launcher ${launch[*]}"
say "program: $program ${prog_args[*]}"

# ---- native reference ---------------------------------------------------------------------
n0=$(now_ms)
native_limit=${limit:-600}
set +e
timeout -k 5 "$native_limit" "${launch[@]}" "$program" "${prog_args[@]}" </dev/null \
  >"$work/native.out" 2>"$work/native.err"
native_rc=$?
set -e
native_ms=$(( $(now_ms) - n0 ))
[ "$native_rc" -ne 124 ] && [ "$native_rc" -ne 137 ] ||
  { tail_of "$work/native.err"; fail "the native run timed out after $native_limit s"; }
if [ -z "$limit" ]; then
  limit=$(( native_ms * 4 / 1000 + 60 ))
  [ "$limit" -ge 120 ] || limit=120
fi
say "native run: exit $native_rc, $(wc -l <"$work/native.out") lines, $(( native_ms ))ms"
if [ -z "$delay" ]; then
  per=$(( native_ms / (kills + ckpts + 1) ))
  delay_lo=$(( per * 15 / 100 )) delay_hi=$(( per * 90 / 100 ))
  [ "$delay_hi" -ge 1 ] || fail "the native run is too short (${native_ms} ms) to checkpoint in"
fi
say "checkpoint delays: ${delay_lo}..${delay_hi} ms after all ranks are connected"

# ---- one segment of a chain ---------------------------------------------------------------
seg_pid=""
# start_segment LABEL CMD...: run in the background, stdout appended to the chain's output
start_segment() {
  local label=$1
  shift
  seg_label=$label
  seg_err=$work/$chain_id.$label.err
  seg_start=$(now_ms)
  timeout -k 5 "$limit" "$@" </dev/null >>"$work/$chain_id.out" 2>"$seg_err" &
  seg_pid=$!
  say "$chain_id $label: started: $*"
}

# finish_segment: wait for the segment; sets seg_rc
finish_segment() {
  set +e
  wait "$seg_pid"
  seg_rc=$?
  set -e
  seg_pid=""
  case "$seg_rc" in
    124|137) tail_of "$seg_err" 10; fail "$chain_id $seg_label: timed out after $limit s" ;;
  esac
}

alive() { [ -n "$seg_pid" ] && kill -0 "$seg_pid" 2>/dev/null; }

json_field() { # json_field KEY < json: the value of a top-level scalar field
  sed -n "s/^  \"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" | head -1
}

# Starts a coordinator by hand for the per-rank forms; sets coord_addr.
start_coordinator() {
  local out
  out=$("$bin/mana_coordinator" --daemon --ckptdir "$ckdir" --ranks "$ranks" \
    --connect-timeout "$limit" 2>&1) || fail "$chain_id: mana_coordinator --daemon: $out"
  coord_addr=${out%% *}
  coord_pids+=("${out##* }")
  say "$chain_id: coordinator started for the per-rank form: $coord_addr (pid ${out##* })"
}

# wait_connected: poll until every rank is connected (state running); 1 if the segment ended
wait_connected() {
  local j state conn
  while alive; do
    if j=$("$bin/mana_status" --ckptdir "$ckdir" --json --timeout 5 2>/dev/null); then
      state=$(json_field state <<<"$j")
      conn=$(json_field connected <<<"$j")
      [ "$state" = running ] && [ "$conn" = "$ranks" ] && return 0
    fi
    sleep 0.02
  done
  return 1
}

# checkpoint KIND: KIND is kill or keep. Waits a random delay, then asks until one attempt is
# committed.  Sets ck_result to committed or skipped (the program finished first).
checkpoint() {
  local kind=$1 opts=(--checkpoint --wait) out rc tries=0 waited t1
  [ "$kind" = kill ] && opts+=(--kill)
  if ! wait_connected; then ck_result=skipped; return; fi
  rand "$delay_lo" "$delay_hi"
  local d=$r
  sleep "$(printf '%d.%03d' $(( d / 1000 )) $(( d % 1000 )))"
  while :; do
    tries=$(( tries + 1 ))
    if ! alive; then
      say "$chain_id $seg_label: checkpoint ($kind) after ${d} ms: skipped, the program finished first"
      ck_result=skipped
      return
    fi
    t1=$(now_ms)
    set +e
    out=$(timeout "$ckpt_limit" "$bin/mana_status" --ckptdir "$ckdir" "${opts[@]}" 2>&1)
    rc=$?
    set -e
    waited=$(( $(now_ms) - t1 ))
    if [ "$rc" -eq 0 ]; then
      ck_ok=$(( ck_ok + 1 ))
      say "$chain_id $seg_label: checkpoint ($kind) after ${d} ms, attempt $tries: ${out} [request to commit ${waited} ms]"
      ck_result=committed
      return
    fi
    if [ "$rc" -eq 124 ]; then
      say "$chain_id $seg_label: the coordinator's view of the stuck checkpoint:"
      "$bin/mana_status" --ckptdir "$ckdir" 2>&1 | sed 's/^/    | /' || true
      tail_of "$ckdir/.mana/coordinator.log" 8
      fail "$chain_id $seg_label: checkpoint ($kind) not finished after $ckpt_limit s"
    fi
    # A job whose ranks have all left is over even if its launcher is still tearing down: the
    # coordinator of the per-rank form exits then.  Give the launcher time to go too.
    case "$out" in
      *"no coordinator is running"*|*"Connection refused"*|*"all ranks have disconnected"*)
        local gone=0
        for _ in $(seq 1 200); do alive || { gone=1; break; }; sleep 0.05; done
        [ "$gone" = 1 ] || fail "$chain_id $seg_label: the coordinator is gone but the job still runs: $out" ;;
      *"disconnected during the checkpoint"*)
        # A rank that ended (MPI_Finalize, exit) as the request came: the job must end too
        # (its exit status and output are compared as always, so a rank that died fails there)
        local ended=0
        for _ in $(seq 1 200); do alive || { ended=1; break; }; sleep 0.05; done
        [ "$ended" = 1 ] || fail "$chain_id $seg_label: a rank left during the checkpoint but the job still runs: $out" ;;
    esac
    if ! alive; then
      say "$chain_id $seg_label: checkpoint ($kind) after ${d} ms: skipped, the program finished first ($out)"
      ck_result=skipped
      return
    fi
    # Refusals (state mana cannot save yet) and requests before every rank is connected are
    # retried; anything else (a rank that failed to drain or write, an error) is a failure.
    case "$out" in
      *"refused the checkpoint"*|*"ranks are connected"*|*"no rank has connected"*|*"already in progress"*) ;;
      *)
        tail_of "$seg_err"
        tail_of "$ckdir/.mana/coordinator.log" 5
        fail "$chain_id $seg_label: checkpoint ($kind) after ${d} ms, attempt $tries: $out" ;;
    esac
    ck_refused=$(( ck_refused + 1 ))
    if [ "$tries" -ge "$attempts" ]; then
      say "$chain_id $seg_label: checkpoint ($kind): skipped after $tries refused attempts, last: $out"
      ck_result=skipped
      return
    fi
    [ "$tries" -le 3 ] && say "$chain_id $seg_label: attempt $tries not committed (${waited} ms): $out"
    rand 10 80
    sleep "0.0$(printf '%02d' "$r")"
  done
}

# The commands of each form.
launch_cmd() { # launch_cmd FORM: sets cmd
  if [ "$1" = outer ]; then
    cmd=("$bin/mana_launch" --ckptdir "$ckdir" "${launch[@]}" "$program" "${prog_args[@]}")
  else
    start_coordinator
    cmd=("${launch[@]}" "$bin/mana_launch" --ckptdir "$ckdir" "$program" "${prog_args[@]}")
  fi
}
restart_cmd() { # restart_cmd FORM: sets cmd
  if [ "$1" = outer ]; then
    cmd=("${restart_prefix[@]}" "$bin/mana_restart" --ckptdir "$ckdir" "${launch[@]}")
  else
    start_coordinator
    cmd=("${restart_prefix[@]}" env MANA_COORDINATOR="$coord_addr"
         MANA_SECRET_FILE="$ckdir/.mana/secret" MANA_CKPTDIR="$ckdir" "${launch[@]}"
         "$bin/mana_restart" --ckptdir "$ckdir")
  fi
}

# run_chain FORM ROUND: one chain; sets chain_restarts
run_chain() {
  local form=$1 round=$2 seg=0 restarts=0 i e nevents chain_start
  chain_start=$(now_ms)
  ckdir=$work/$chain_id.ckpt
  : >"$work/$chain_id.out"
  # the plan: which segment gets how many checkpoints without kill
  local -a keep_in=()
  for ((i = 0; i <= kills; i++)); do keep_in[$i]=0; done
  for ((i = 0; i < ckpts; i++)); do rand 0 "$kills"; keep_in[$r]=$(( keep_in[r] + 1 )); done
  launch_cmd "$form"
  start_segment "launch($form)" "${cmd[@]}"
  while :; do
    nevents=${keep_in[$seg]}
    for ((e = 0; e < nevents; e++)); do
      checkpoint keep
      [ "$ck_result" = committed ] || break
    done
    if [ "$seg" -lt "$kills" ] && alive; then
      checkpoint kill
    else
      ck_result=none
    fi
    if [ "$ck_result" = committed ]; then
      finish_segment
      [ "$seg_rc" -eq 0 ] || { tail_of "$seg_err"; fail "$chain_id $seg_label: exit $seg_rc after the kill checkpoint (expected 0)"; }
      say "$chain_id $seg_label: ended by the kill checkpoint after $(( $(now_ms) - seg_start )) ms, exit 0"
      seg=$(( seg + 1 ))
      local rf=${restart_forms[$(( (seg - 1 + round + chain_no) % ${#restart_forms[@]} ))]}
      restart_cmd "$rf"
      start_segment "restart$seg($rf)" "${cmd[@]}"
      restarts=$(( restarts + 1 ))
      continue
    fi
    finish_segment
    say "$chain_id $seg_label: finished after $(( $(now_ms) - seg_start )) ms, exit $seg_rc"
    break
  done
  # A program reports its failed checks on stdout: show the difference either way.
  local same_out=1
  cmp -s "$work/native.out" "$work/$chain_id.out" || same_out=0
  if [ "$seg_rc" -ne "$native_rc" ] || [ "$same_out" = 0 ]; then
    [ "$same_out" = 1 ] ||
      diff -u --label native --label "$chain_id" "$work/native.out" "$work/$chain_id.out" | head -40 | sed 's/^/    | /'
    tail_of "$seg_err" 10
    [ "$seg_rc" -eq "$native_rc" ] || fail "$chain_id: final exit status $seg_rc differs from native $native_rc"
    fail "$chain_id: stdout after $restarts restart(s) differs from the native run"
  fi
  say "$chain_id: stdout identical to native ($(wc -l <"$work/$chain_id.out") lines), exit $seg_rc, after $restarts restart(s)"
  chain_restarts=$restarts chain_ms=$(( $(now_ms) - chain_start ))
}

total_restarts=0 ck_ok=0 ck_refused=0 chain_no=0
for form in "${launch_forms[@]}"; do
  chain_no=$(( chain_no + 1 ))
  done_restarts=0
  for ((round = 0; round < rounds; round++)); do
    chain_id="chain$chain_no-$form.r$round"
    run_chain "$form" "$round"
    done_restarts=$(( done_restarts + chain_restarts ))
    total_restarts=$(( total_restarts + chain_restarts ))
    [ "$chain_restarts" -ge "$min_restarts" ] && break
    say "$chain_id: only $chain_restarts of $min_restarts restarts (the program finished first); again with shorter delays"
    delay_lo=$(( delay_lo / 2 )) delay_hi=$(( delay_hi / 2 ))
    # The delays came from the native run, which the machine's load may have slowed far more
    # than this chain (24 s native, 2.5 s for the chain beside MPICH's suite): scaled to the
    # chain's own run when that gives shorter ones.
    per=$(( chain_ms / (kills + ckpts + 1) ))
    if [ $(( per * 90 / 100 )) -lt "$delay_hi" ]; then
      delay_lo=$(( per * 15 / 100 )) delay_hi=$(( per * 90 / 100 ))
    fi
    say "checkpoint delays now: ${delay_lo}..${delay_hi} ms"
    [ "$delay_hi" -ge 1 ] || break
  done
  [ "$chain_restarts" -ge "$min_restarts" ] ||
    fail "form $form: no chain reached $min_restarts restarts in $rounds round(s) (checkpoints committed $ck_ok, refused or abandoned $ck_refused)"
done
say "PASS: ${#launch_forms[@]} chain(s), $total_restarts restarts, $ck_ok checkpoints committed, $ck_refused requests refused or abandoned (seed $seed)"
