#!/usr/bin/env bash
# A coordinated checkpoint through the whole tool chain: mana_launch starts the job and its
# coordinator, mana_status --checkpoint --kill --wait checkpoints it and ends it, mana_restart
# (both forms where available) continues it, possibly several times; the concatenated output
# must equal an uninterrupted native run.  Also the bad-input cases of mana_restart.
#   usage: run_coordinated_restart.sh MANA_BIN RANKS CYCLES DELAY_S PROGRAM [ARGS...]
set -u
bin=$1 ranks=$2 cycles=$3 delay=$4
shift 4
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ckpt=$work/ckpt

timeout 120 mpiexec.mpich -n "$ranks" "$@" >"$work/native" 2>"$work/native.err" ||
  fail "native run failed: $(tail -3 "$work/native.err")"

# Waits until every rank of the job is connected to its coordinator (a loaded machine may take
# seconds to start it), or fails when the job ends first.
wait_connected() {
  local label=$1 job=$2 j
  while kill -0 "$job" 2>/dev/null; do
    if j=$("$bin/mana_status" --ckptdir "$ckpt" --json --timeout 5 2>/dev/null) &&
       printf '%s\n' "$j" | grep -q '"state": "running"' &&
       printf '%s\n' "$j" | grep -q "\"connected\": $ranks,"; then
      return 0
    fi
    sleep 0.05
  done
  fail "$label: the job ended before all its ranks connected: $(tail -3 "$work/$label.err")"
}

# Starts a job in the background, checkpoints and kills it $delay s after every rank is in.
checkpoint_and_kill() {
  local label=$1
  shift
  "$@" >>"$work/mana" 2>"$work/$label.err" &
  local job=$!
  wait_connected "$label" "$job"
  sleep "$delay"
  local st
  st=$("$bin/mana_status" --ckptdir "$ckpt" --checkpoint --kill --wait 2>&1) ||
    fail "$label: mana_status --checkpoint --kill --wait: $st"
  wait "$job" || fail "$label: job ended with $?: $(tail -3 "$work/$label.err")"
  echo "$label: $st"
}

: >"$work/mana"
checkpoint_and_kill run0 timeout 120 "$bin/mana_launch" --ckptdir "$ckpt" mpiexec.mpich -n "$ranks" "$@"
for ((i = 1; i < cycles; i++)); do
  checkpoint_and_kill "restart$i" timeout 120 "$bin/mana_restart" --ckptdir "$ckpt" mpiexec.mpich -n "$ranks"
done
timeout 120 mpiexec.mpich -n "$ranks" "$bin/mana_restart" --ckptdir "$ckpt" >>"$work/mana" \
  2>"$work/last.err" || fail "last restart (per-rank form) failed: $(tail -3 "$work/last.err")"
if ! cmp -s "$work/native" "$work/mana"; then
  diff "$work/native" "$work/mana" | head -20
  fail "output after $cycles checkpoint/kill/restart cycle(s) differs from the native run"
fi
echo "identical to native after $cycles coordinated checkpoint/kill/restart cycle(s)"

# Bad input: one clear line and a non-zero exit each, and the committed generation intact.
expect_error() {
  local what=$1 pattern=$2
  shift 2
  local out rc=0 t0 ms
  t0=$(date +%s%N)
  out=$("$@" 2>&1) || rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ "$rc" -ne 0 ] || fail "$what: exit status 0"
  [ "$rc" -ne 124 ] || fail "$what: still running when its time limit ran out (a hang): $out"
  [ "$(printf '%s\n' "$out" | grep -c .)" -ge 1 ] || fail "$what: no error message"
  printf '%s\n' "$out" | grep -q "$pattern" || fail "$what: unexpected message: $out"
  # every rank of a refused restart ends with it, within 10 s
  [ "$ms" -le 10000 ] || fail "$what: took $ms ms to end (more than 10 s)"
  echo "ok: $what ($((ms / 1000)).$(printf '%02d' $((ms % 1000 / 10))) s, status $rc): $(printf '%s\n' "$out" | head -1)"
}
expect_error "missing directory" "No such file" "$bin/mana_restart" --ckptdir "$work/none"
expect_error "unknown generation" "does not exist" "$bin/mana_restart" --ckptdir "$ckpt" --generation 999
expect_error "wrong rank count" "restart with -n $ranks" \
  timeout 60 mpiexec.mpich -n $((ranks + 1)) "$bin/mana_restart" --ckptdir "$ckpt"
expect_error "unknown option" "unknown option" "$bin/mana_restart" --frobnicate
expect_error "negative generation" "needs a positive number, not '-1'" \
  "$bin/mana_restart" --ckptdir "$ckpt" --generation -1
# the launcher form says the same about the rank count, with the status the man page gives
rc=0 t0=$(date +%s%N)
out=$(timeout 60 "$bin/mana_restart" --ckptdir "$ckpt" mpiexec.mpich -n $((ranks + 1)) 2>&1) || rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$rc" -eq 1 ] && printf '%s\n' "$out" | grep -q "start it with -n $ranks" ||
  fail "wrong rank count (launcher form): exit status $rc (mana_restart(1) says 1): $out"
echo "ok: wrong rank count (launcher form) ($((ms / 1000)).$(printf '%02d' $((ms % 1000 / 10))) s, status 1): $out"
latest=$(cat "$ckpt/LATEST")
gen=$(printf '%s/gen-%06d' "$ckpt" "$latest")
cp -r "$gen" "$work/damaged"
img=$(ls "$work/damaged"/rank-*.img | head -1)
printf '\377\377\377\377' | dd of="$img" bs=1 seek=$(($(stat -c %s "$img") / 2)) conv=notrunc 2>/dev/null
gen_name=$(basename "$gen")
mkdir -p "$work/ckpt2" && mv "$work/damaged" "$work/ckpt2/$gen_name" && echo "$latest" >"$work/ckpt2/LATEST"
expect_error "corrupt image (--check)" "checksum\|damaged\|mismatch" "$bin/mana_restart" --ckptdir "$work/ckpt2" --check
# One rank's image damaged and the others sound: that rank says so and the whole job ends
# (the sound ranks waited in MPI_Init for it, under Hydra as under srun).
last=$(printf 'rank-%06d.img' $((ranks - 1)))
cp -r "$gen" "$work/ckpt3"
mkdir -p "$work/ckpt4" && mv "$work/ckpt3" "$work/ckpt4/$gen_name" && echo "$latest" >"$work/ckpt4/LATEST"
printf '\132' | dd of="$work/ckpt4/$gen_name/$last" bs=1 seek=40 conv=notrunc 2>/dev/null
expect_error "one rank's image damaged (per-rank form)" "the header is damaged" \
  timeout 60 mpiexec.mpich -n "$ranks" "$bin/mana_restart" --ckptdir "$work/ckpt4"
expect_error "one rank's image damaged (launcher form)" "the header is damaged" \
  timeout 60 "$bin/mana_restart" --ckptdir "$work/ckpt4" mpiexec.mpich -n "$ranks"
# Rank 0's image of the generation before put in the newest one (its size made to agree, as it
# may by chance): --check and the restart name the mix instead of restoring the wrong state.
prev=$(printf '%s/gen-%06d' "$ckpt" $((latest - 1)))
if [ -f "$prev/rank-000000.img" ]; then
  cp -r "$gen" "$work/ckpt5" && mkdir -p "$work/ckpt6" && mv "$work/ckpt5" "$work/ckpt6/$gen_name"
  echo "$latest" >"$work/ckpt6/LATEST"
  cp "$prev/rank-000000.img" "$work/ckpt6/$gen_name/rank-000000.img"
  size=$(stat -c %s "$prev/rank-000000.img")
  sed -i "s/^\(RANK rank=0 .*bytes=\)[0-9]*/\1$size/" "$work/ckpt6/$gen_name/MANIFEST"
  expect_error "an image of the previous generation (--check)" "checkpoints are mixed" \
    "$bin/mana_restart" --ckptdir "$work/ckpt6" --check
  expect_error "an image of the previous generation" "checkpoints are mixed" \
    timeout 60 mpiexec.mpich -n "$ranks" "$bin/mana_restart" --ckptdir "$work/ckpt6"
else
  echo "skipped: the mixed-generations case needs two cycles"
fi
# A damaged LATEST: the message says that a generation can still be named.
cp -a "$ckpt" "$work/latest-damaged" && echo "x7" >"$work/latest-damaged/LATEST"
expect_error "damaged LATEST" "can still be named with --generation N" \
  "$bin/mana_restart" --ckptdir "$work/latest-damaged" --check
"$bin/mana_restart" --ckptdir "$work/latest-damaged" --generation "$latest" --check >/dev/null ||
  fail "with a damaged LATEST, --generation $latest --check fails"
# A checkpoint another user could have changed is never restarted, nor written to (as root,
# the files are given to 'nobody').
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
  cp -a "$ckpt" "$work/foreign1" && chown nobody "$work/foreign1/LATEST"
  expect_error "LATEST of another user" "belongs to uid" "$bin/mana_restart" --ckptdir "$work/foreign1" --check
  cp -a "$ckpt" "$work/foreign2" && chmod g+w "$work/foreign2/$gen_name/MANIFEST"
  expect_error "group-writable MANIFEST" "lets group or others change it" \
    timeout 60 mpiexec.mpich -n "$ranks" "$bin/mana_restart" --ckptdir "$work/foreign2"
  cp -a "$ckpt" "$work/foreign3" && chown -R nobody "$work/foreign3" && chmod 0777 "$work/foreign3"
  expect_error "a directory of another user (restart)" "belongs to uid" \
    "$bin/mana_restart" --ckptdir "$work/foreign3"
  expect_error "a directory of another user (launch)" "belongs to uid" \
    timeout 60 "$bin/mana_launch" --ckptdir "$work/foreign3" mpiexec.mpich -n "$ranks" "$@"
else
  echo "skipped: the checks on another user's files need root and the user nobody"
fi
img=$work/ckpt2/$gen_name/$(basename "$img")
truncate -s 100 "$img"
expect_error "truncated image" "bytes but the manifest says" "$bin/mana_restart" --ckptdir "$work/ckpt2"
"$bin/mana_restart" --ckptdir "$ckpt" --check >/dev/null || fail "the committed generation was damaged"
echo "ok: the committed generation still verifies"
echo "1 passed, 0 failed"
