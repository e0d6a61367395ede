#!/usr/bin/env bash
# fake_job.sh - a real mana_coordinator, fake ranks (fake_rank) and mana_status, through one
# scenario of the checkpoint protocol.
#
# usage: fake_job.sh SCENARIO
#   environment: MANA_BIN (mana_coordinator, mana_status, mana_launch), FAKE_RANK (the
#   fake_rank program), MPI_APP (an MPICH-linked program, for the launch scenario)
#
# Scenarios: commit refuse fail unparked disconnect raise stall timeout auth flood garbage kill
#            interval status-errors lock job-over sigterm launch ckpt-signal forked incremental
#            keep
#
# Exit status 0 when every check of the scenario held; otherwise the failed check, the
# fake ranks' output and the coordinator's log are printed and the status is 1.
set -u

scenario=${1:?usage: fake_job.sh SCENARIO}
here=$(cd "$(dirname "$0")" && pwd)
bin=${MANA_BIN:?MANA_BIN must name the directory of mana_coordinator}
fake=${FAKE_RANK:?FAKE_RANK must name the fake_rank program}
PY=${PYTHON:-python3}

work=$(mktemp -d "${TMPDIR:-/tmp}/mana-fake-job.XXXXXX") || exit 1
ck=$work/ck
coord_pid=""
ranks_pid=""
extra_pids=""

cleanup() {
  [ -n "$ranks_pid" ] && kill "$ranks_pid" 2>/dev/null
  for p in $extra_pids; do kill "$p" 2>/dev/null; done
  if [ -n "$coord_pid" ] && alive "$coord_pid"; then kill "$coord_pid" 2>/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT

alive() { # alive PID: running and not a zombie
  [ -e "/proc/$1/stat" ] && ! awk '{ exit !($3 == "Z") }' "/proc/$1/stat" 2>/dev/null
}

fail() {
  local printed=""
  echo "fake_job.sh: FAIL ($scenario): $*"
  for f in "$work"/*.out "$work"/*.err; do
    [ -s "$f" ] || continue
    echo "---- $(basename "$f") ----"
    tail -n 40 "$f"
  done
  for log in "$ck/.mana/coordinator.log" "$work"/*/.mana/coordinator.log \
             "$work"/*/*/.mana/coordinator.log; do
    [ -s "$log" ] || continue
    case "$log" in "$ck/.mana/coordinator.log") [ "$printed" ] && continue; printed=1 ;; esac
    echo "---- $log ----"
    tail -n 40 "$log"
  done
  exit 1
}

# wait_until SECONDS COMMAND...: polls every 50 ms
wait_until() {
  local limit=$1
  shift
  local end=$((SECONDS + limit + 1))
  while [ $SECONDS -lt $end ]; do
    "$@" && return 0
    sleep 0.05
  done
  return 1
}

# start_coord [OPTIONS...]: a daemon for $ck on 127.0.0.1
start_coord() {
  local out
  out=$("$bin/mana_coordinator" --daemon --ckptdir "$ck" --host 127.0.0.1 \
        --connect-timeout 30 "$@" 2>"$work/coord-start.err") ||
    fail "mana_coordinator did not start: $(cat "$work/coord-start.err")"
  coord_addr=${out% *}
  coord_pid=${out#* }
  [ -n "$coord_addr" ] && [ "$coord_pid" -gt 0 ] 2>/dev/null || fail "bad announcement '$out'"
  export MANA_COORDINATOR=$coord_addr MANA_SECRET_FILE=$ck/.mana/secret
}

# start_ranks N [fake_rank options...]: N fake ranks in the background
start_ranks() {
  local n=$1
  shift
  "$fake" --size "$n" "$@" >"$work/ranks.out" 2>&1 &
  ranks_pid=$!
}

status() { "$bin/mana_status" --ckptdir "$ck" "$@"; }

# json_get KEY: a field of the JSON status (ranks: rank list length)
json_get() {
  status --json | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
k = sys.argv[1]
print(len(d["ranks"]) if k == "nranks" else d.get(k, ""))' "$1"
}

connected_is() { [ "$(json_get connected 2>/dev/null)" = "$1" ]; }

wait_connected() {
  wait_until 10 connected_is "$1" || fail "expected $1 connected ranks, got '$(json_get connected)'"
}

coord_gone() { ! alive "$coord_pid"; }

expect_gone() {
  wait_until 5 coord_gone || fail "the coordinator (pid $coord_pid) did not exit"
  [ ! -e "$ck/.mana/coordinator" ] || fail "the port file was left behind"
}

latest() { cat "$ck/LATEST" 2>/dev/null; }
latest_is() { [ "$(latest)" = "$1" ]; }

# checkpoint_ok GEN: a --checkpoint --wait that commits GEN
checkpoint_ok() {
  local out
  out=$(status --checkpoint --wait 2>"$work/status.err") ||
    fail "checkpoint $1 failed: $(cat "$work/status.err")"
  case "$out" in
    "checkpoint committed: generation $1,"*) ;;
    *) fail "unexpected output of --checkpoint --wait: '$out'" ;;
  esac
  latest_is "$1" || fail "LATEST is '$(latest)', expected $1"
}

# checkpoint_aborts GEN TEXT: a --checkpoint --wait that aborts with TEXT in the reason
checkpoint_aborts() {
  local rc
  status --checkpoint --wait >"$work/abort.out" 2>"$work/abort.err"
  rc=$?
  [ $rc -eq 1 ] || fail "aborted checkpoint exited with $rc, expected 1"
  [ "$(wc -l <"$work/abort.err")" -eq 1 ] || fail "expected one line on stderr: $(cat "$work/abort.err")"
  grep -q "generation $1 aborted: .*$2" "$work/abort.err" ||
    fail "abort reason: $(cat "$work/abort.err"), expected '$2'"
  [ ! -e "$ck/gen-$(printf %06d "$1")" ] || fail "the aborted generation $1 was not removed"
}

no_violations() {
  ! grep -q VIOLATION "$work/ranks.out" || fail "a fake rank saw a violation"
}

manifest_field() { # manifest_field GEN VERB KEY
  "$PY" - "$ck/gen-$(printf %06d "$1")/MANIFEST" "$2" "$3" <<'EOF'
import sys, urllib.parse
path, verb, key = sys.argv[1:]
for line in open(path):
    words = line.split()
    if words and words[0] == verb:
        fields = dict(w.split("=", 1) for w in words[1:])
        if key in fields:
            print(urllib.parse.unquote(fields[key]))
            break
EOF
}

tree_sum() { (cd "$1" && find . -type f -exec md5sum {} + | sort); }

# --------------------------------------------------------------------------------------------

scenario_commit() {
  start_coord --ranks 3
  start_ranks 3
  wait_connected 3
  checkpoint_ok 1
  local dir=$ck/gen-000001
  [ "$(stat -c %a "$dir")" = 700 ] || fail "generation directory mode $(stat -c %a "$dir")"
  [ "$(manifest_field 1 MANA_MANIFEST v)" = 1 ] || fail "MANIFEST version"
  [ "$(manifest_field 1 GENERATION size)" = 3 ] || fail "MANIFEST size"
  [ "$(manifest_field 1 GENERATION previous)" = 0 ] || fail "MANIFEST previous"
  [ "$(manifest_field 1 GENERATION bytes)" = 12288 ] || fail "MANIFEST bytes"
  [ "$(grep -c '^RANK ' "$dir/MANIFEST")" = 3 ] || fail "MANIFEST rank lines"
  [ "$(tail -n 1 "$dir/MANIFEST")" = "END ranks=3" ] || fail "MANIFEST end"
  local r name xxh
  for r in 0 1 2; do
    read -r name xxh < <(sed -n "s/^rank $r: written \([^ ]*\) \([0-9a-f]*\)$/\1 \2/p" \
                         "$work/ranks.out" | head -n 1)
    [ -n "$name" ] || fail "rank $r did not write"
    grep -q "^RANK rank=$r file=$name bytes=4096 xxh=$xxh host=" "$dir/MANIFEST" ||
      fail "MANIFEST line of rank $r does not match its image $name $xxh"
    [ "$(stat -c %s "$dir/$name")" = 4096 ] || fail "image size of rank $r"
  done
  # targets: group 0x1000 is at 10*r on rank r, so every rank drained at 20
  [ "$(grep -c 'drain gen 1 epoch 1 seq0 20$' "$work/ranks.out")" = 3 ] ||
    fail "the ranks did not all drain at the computed target"

  local out
  out=$(status --checkpoint --wait --json) || fail "second checkpoint"
  "$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); assert d=={"gen":2,"status":"committed"}, d' \
    "$out" || fail "JSON of --checkpoint --wait: $out"
  latest_is 2 || fail "LATEST after the second checkpoint"
  [ "$(manifest_field 2 GENERATION previous)" = 1 ] || fail "previous generation in MANIFEST"
  [ -e "$ck/gen-000001/MANIFEST" ] || fail "generation 1 disappeared"

  out=$(status --checkpoint) || fail "checkpoint without --wait"
  [ "$out" = "checkpoint started: generation 3" ] || fail "--checkpoint printed '$out'"
  wait_until 10 latest_is 3 || fail "generation 3 was not committed"

  status >"$work/human.out" || fail "human status"
  grep -q '^Job:          3 ranks, 3 connected (running)$' "$work/human.out" || fail "status job line"
  grep -q '^Last commit:  generation 3 at ' "$work/human.out" || fail "status last commit"
  [ "$(grep -cE '^ +[0-2]  running ' "$work/human.out")" = 3 ] || fail "status rank table"
  status --json >"$work/json.out" || fail "JSON status"
  "$PY" - "$work/json.out" <<'EOF' || fail "JSON status content"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["size"] == 3 and d["connected"] == 3 and d["committed"] == 3, d
assert d["state"] == "running" and isinstance(d["committed_seconds"], float), d
assert [r["rank"] for r in d["ranks"]] == [0, 1, 2], d
assert all(r["state"] == "running" and isinstance(r["pid"], int) for r in d["ranks"]), d
EOF
  no_violations

  out=$(status --quit) || fail "--quit"
  [ "$out" = "the coordinator is ending the job" ] || fail "--quit printed '$out'"
  wait "$ranks_pid" || fail "the fake ranks did not exit cleanly on QUIT"
  ranks_pid=""
  [ "$(grep -c 'quit: ' "$work/ranks.out")" = 3 ] || fail "not every rank got QUIT"
  expect_gone
}

# A refused, a failed and an interrupted generation: aborted, its directory removed, LATEST
# and the previous generation untouched, the job goes on.
aborted_generation() { # aborted_generation FAKE_OPTION REASON
  start_coord
  start_ranks 3 "$1" 1:2
  wait_connected 3
  checkpoint_ok 1
  local before
  before=$(tree_sum "$ck/gen-000001")
  checkpoint_aborts 2 "$2"
  latest_is 1 || fail "LATEST changed by an aborted generation"
  [ "$(tree_sum "$ck/gen-000001")" = "$before" ] || fail "generation 1 was modified"
  status >"$work/human.out"
  grep -q "^Last failure: generation 2: .*$2" "$work/human.out" || fail "status lacks the failure"
  [ "$(json_get error_gen)" = 2 ] || fail "JSON error_gen"
  grep -q "rank 0: abort gen 2" "$work/ranks.out" || fail "rank 0 was not told ABORT"
}

scenario_refuse() {
  aborted_generation --refuse "rank 1 refused the checkpoint: MPI_Win_allocate memory (simulated)"
  checkpoint_ok 3
  no_violations
}

scenario_fail() {
  aborted_generation --fail "rank 1 could not write its image: disk full (simulated)"
  checkpoint_ok 3
  no_violations
}

# A rank whose threads would not park: the others are suspended and must be told ABORT,
# never GO (the drain is collective: a rank draining alone leaves exchanges posted).
scenario_unparked() {
  aborted_generation --unparked "rank 1 could not suspend its threads: 1 of 2 threads parked (simulated)"
  ! grep -q "go gen 2" "$work/ranks.out" || fail "a rank was told GO while another could not park"
  checkpoint_ok 3
  no_violations
}

scenario_disconnect() {
  aborted_generation --disconnect "rank 1 disconnected during the checkpoint"
  local rc
  status --checkpoint >/dev/null 2>"$work/status.err"
  rc=$?
  [ $rc -eq 1 ] || fail "a checkpoint with a rank gone exited with $rc"
  grep -q "only 2 of 3 ranks are connected" "$work/status.err" || fail "$(cat "$work/status.err")"
  status --json >"$work/json.out"
  "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ranks"][1]["state"]=="gone", d' \
    "$work/json.out" || fail "rank 1 is not shown as gone"
}

scenario_raise() {
  start_coord --ranks 3
  # 1500 groups: SEQ and TARGETS tables split over several lines
  start_ranks 3 --groups 1500 --raise 0:1 --delay-park 2:300
  wait_connected 3
  checkpoint_ok 1
  grep -q "rank 0: raise ggid 1000 to 21" "$work/ranks.out" || fail "rank 0 did not raise"
  [ "$(grep -c 'drain gen 1 epoch 2 seq0 21$' "$work/ranks.out")" = 3 ] ||
    fail "the ranks did not all converge on the raised target at epoch 2"
  grep -q "generation 1 committed: .*(2 epochs, 1 raises, 0 releases)" "$ck/.mana/coordinator.log" ||
    fail "log of the commit"
  no_violations
}

scenario_stall() {
  start_coord
  start_ranks 3 --stall 1:1
  wait_connected 3
  checkpoint_ok 1
  grep -q "rank 1: blocked" "$work/ranks.out" || fail "rank 1 did not block"
  grep -q "rank 1: released" "$work/ranks.out" || fail "rank 1 was not released"
  grep -q "generation 1 committed: .*(2 epochs, 0 raises, 1 releases)" "$ck/.mana/coordinator.log" ||
    fail "the stall release is not in the log"
  grep -q "generation 1: stalled for 5 ms; parked ranks released (epoch 2)" \
    "$ck/.mana/coordinator.log" || fail "the grace period is not in the log"
  no_violations
}

scenario_timeout() {
  start_coord --ckpt-timeout 1
  start_ranks 2 --delay-park 1:2500
  wait_connected 2
  checkpoint_aborts 1 "the ranks did not reach a safe point within 1 s"
  [ ! -e "$ck/LATEST" ] || fail "LATEST written"
  connected_is 2 || fail "the job lost ranks"
}

scenario_auth() {
  start_coord
  start_ranks 2
  wait_connected 2
  local other=$work/other-secret rc
  (umask 077 && "$PY" -c 'import os; print(os.urandom(32).hex())' >"$other")
  status --secret-file "$other" >"$work/auth.out" 2>"$work/auth.err"
  rc=$?
  [ $rc -eq 1 ] || fail "a wrong secret gave exit status $rc"
  [ "$(wc -l <"$work/auth.err")" -eq 1 ] || fail "not one line: $(cat "$work/auth.err")"
  grep -q "authentication failed" "$work/auth.err" || fail "$(cat "$work/auth.err")"

  cp "$ck/.mana/secret" "$work/open-secret" && chmod 640 "$work/open-secret"
  status --secret-file "$work/open-secret" 2>"$work/auth.err"
  [ $? -eq 1 ] || fail "a group-readable secret was used"
  grep -q "refusing secret file .*mode 640" "$work/auth.err" || fail "$(cat "$work/auth.err")"

  MANA_SECRET_FILE=$other "$fake" --size 2 --only 0 >"$work/intruder.out" 2>&1
  [ $? -eq 1 ] || fail "a rank with a wrong secret was admitted"
  grep -q "cannot join: the coordinator refused us: authentication failed" "$work/intruder.out" ||
    fail "intruder: $(cat "$work/intruder.out")"
  "$fake" --size 2 --only 1 >"$work/twin.out" 2>&1
  grep -q "rank 1 is already connected" "$work/twin.out" || fail "twin: $(cat "$work/twin.out")"
  "$fake" --size 5 --only 0 >"$work/size.out" 2>&1
  grep -q "size=5 does not match the job's 2 ranks" "$work/size.out" || fail "size: $(cat "$work/size.out")"

  # a coordinator refuses a secret others can read
  mkdir -p "$work/d2/.mana" && chmod 700 "$work/d2/.mana"
  cp "$ck/.mana/secret" "$work/d2/.mana/secret" && chmod 644 "$work/d2/.mana/secret"
  "$bin/mana_coordinator" --ckptdir "$work/d2" --host 127.0.0.1 2>"$work/coord2.err"
  [ $? -eq 1 ] || fail "a coordinator started with an open secret file"
  grep -q "refusing secret file" "$work/coord2.err" || fail "$(cat "$work/coord2.err")"

  connected_is 2 || fail "the job lost ranks"
  checkpoint_ok 1
  [ "$(grep -c 'rejected connection from' "$ck/.mana/coordinator.log")" -ge 4 ] ||
    fail "rejections are not logged"
}

# send_raw DATA-COMMAND: pipes the output of a command into a fresh connection (which the
# coordinator may close before everything is written: no SIGPIPE for the script)
send_raw() {
  local port=${coord_addr##*:}
  (trap '' PIPE; "$@" >"/dev/tcp/127.0.0.1/$port") 2>/dev/null || true
}

# Other users hold the TCP port full of idle connections: the owner's mana_status (local
# socket) and clients that authenticate at once over TCP still get in, the job
# checkpoints, refusals are logged within a budget, and the local socket refuses another
# user. Two floods: 200 idle connections from the owner's own address renewed every 5 s
# (what locked owners out before), then 300 from another address replaced as soon as they
# are dropped (limited per address, so it cannot crowd out the others).
scenario_flood() {
  start_coord --auth-timeout 5
  start_ranks 2
  wait_connected 2
  local port=${coord_addr##*:} flood="$here/flood.py" rejects flooder gen=0 round
  # the system's python: a per-user interpreter (pyenv) may not be readable by nobody
  if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null &&
     [ -x /usr/bin/python3 ]; then
    setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 "$flood" local "$port" \
      "$(cat "$ck/.mana/secret")" >"$work/other-user.out" 2>&1 &&
      fail "another user came in through the local socket: $(cat "$work/other-user.out")"
    grep -qE "Connection reset|Broken pipe|closed without a reply" "$work/other-user.out" ||
      fail "another user on the local socket: $(cat "$work/other-user.out")"
    wait_until 10 grep -q "is not the job's owner" "$ck/.mana/coordinator.log" ||
      fail "the local socket did not log refusing another user"
  fi
  for round in "127.0.0.1 200 5" "127.0.0.2 300 0"; do
    set -- $round
    rm -f "$work/flood.ready"
    "$PY" "$flood" hold "$port" "$2" "$work/flood.ready" "$1" "$3" >"$work/flood.out" 2>&1 &
    flooder=$!
    extra_pids="$extra_pids $flooder"
    wait_until 30 test -e "$work/flood.ready" || fail "the flood from $1 did not start"
    status --json >"$work/flood-status.json" 2>"$work/flood-status.err" ||
      fail "mana_status during the flood from $1: $(cat "$work/flood-status.err")"
    for i in 1 2 3; do
      "$PY" "$flood" hello "$port" "$ck/.mana/secret" >"$work/tcp-hello.out" 2>&1 ||
        fail "a client over TCP was locked out by the flood from $1: $(cat "$work/tcp-hello.out")"
    done
    gen=$((gen + 1))
    checkpoint_ok "$gen"
    connected_is 2 || fail "the job lost ranks during the flood from $1"
    # the auth timeout (5 s) has not passed for most: they were dropped to make room
    grep -q "^closed" "$work/flood.out" ||
      fail "the flood's connections from $1 were not dropped to make room"
    kill "$flooder" 2>/dev/null
  done
  grep -q "dropped connection from 127.0.0.1:" "$ck/.mana/coordinator.log" ||
    fail "dropping connections is not logged"
  wait_until 20 grep -q "refused connections in 10 s were not logged" \
    "$ck/.mana/coordinator.log" || fail "no summary of the refusals left out of the log"
  rejects=$(grep -cE "(rejected|dropped) connection from" "$ck/.mana/coordinator.log")
  [ "$rejects" -le 40 ] || fail "$rejects refusals logged one by one (the budget is 10 per 10 s)"
}

scenario_garbage() {
  start_coord --auth-timeout 1
  start_ranks 2
  wait_connected 2
  local port=${coord_addr##*:} secret line reply
  secret=$(cat "$ck/.mana/secret")

  send_raw head -c 5000 /dev/urandom
  send_raw printf 'HELLO v=1 secret=\000\n'
  send_raw sh -c 'head -c 70000 /dev/zero | tr "\0" A'
  send_raw printf '\n\n\n'
  send_raw printf 'CKPT gen=1 dir=/tmp\n'

  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf 'HELLO v=2 secret=%s role=control\n' "$secret" >&3
  read -r -t 3 reply <&3
  exec 3>&-
  case "$reply" in
    "ERROR reason=unsupported%20protocol%20version%202"*) ;;
    *) fail "reply to HELLO v=2: '$reply'" ;;
  esac

  # a silent connection is dropped after --auth-timeout
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  read -r -t 3 reply <&3
  exec 3>&-
  case "$reply" in
    "ERROR reason=no%20HELLO%20within%201000%20ms") ;;
    *) fail "silent connection: '$reply'" ;;
  esac

  # an authenticated control connection: unknown commands keep it, garbage closes it
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf 'HELLO v=1 secret=%s role=control\nFROB\nSTATUS\nBAD x\001\nSTATUS\n' "$secret" >&3
  read -r -t 3 line <&3 && [ "$line" = "WELCOME v=1" ] || fail "control HELLO: '$line'"
  read -r -t 3 line <&3 && [ "$line" = "ERROR reason=unknown%20command%20FROB" ] || fail "FROB: '$line'"
  read -r -t 3 line <&3 && case "$line" in JOB*) ;; *) fail "STATUS: '$line'" ;; esac
  while read -r -t 3 line <&3 && [ "$line" != END ]; do :; done
  read -r -t 3 line <&3
  case "$line" in "ERROR reason=malformed%20message"*) ;; *) fail "garbage: '$line'" ;; esac
  read -r -t 3 line <&3 && fail "the connection stayed open after garbage: '$line'"
  exec 3>&-

  connected_is 2 || fail "the job lost ranks"
  checkpoint_ok 1
  no_violations
  local rejected
  rejected=$(grep -c 'rejected connection from' "$ck/.mana/coordinator.log")
  [ "$rejected" -ge 6 ] || fail "only $rejected rejections logged"
}

scenario_kill() {
  start_coord
  start_ranks 2
  wait_connected 2
  local out
  out=$(status --kill --wait) || fail "--kill --wait"
  case "$out" in "checkpoint committed: generation 1,"*) ;; *) fail "--kill printed '$out'" ;; esac
  wait "$ranks_pid" || fail "the ranks did not exit cleanly"
  ranks_pid=""
  [ "$(grep -c 'committed gen 1 then exit' "$work/ranks.out")" = 2 ] || fail "ranks not told to exit"
  expect_gone
  latest_is 1 || fail "LATEST"
  grep -q "exiting: the job ended after its last checkpoint" "$ck/.mana/coordinator.log" ||
    fail "exit reason not logged"

  # a coordinator killed with SIGKILL leaves its port file: mana_status names it as gone
  start_coord
  kill -KILL "$coord_pid"
  wait_until 5 coord_gone || fail "the coordinator survived SIGKILL"
  [ -e "$ck/.mana/coordinator" ] || fail "SIGKILL removed the port file?"
  expect_exit 1 "that wrote $ck/.mana/coordinator is gone (killed?)" \
    "$bin/mana_status" --ckptdir "$ck"
}

# The checkpoint signal reaches the coordinator (Slurm signals every process of a step):
# a checkpoint that ends the job with status 85.  A kill request during a plain checkpoint
# makes that checkpoint end the job, with the status asked for, instead of being refused.
scenario_ckpt_signal() {
  start_coord --ckpt-signal USR1
  start_ranks 2
  wait_connected 2
  kill -USR1 "$coord_pid"
  wait "$ranks_pid" || fail "the ranks did not exit cleanly"
  ranks_pid=""
  [ "$(grep -c 'committed gen 1 then exit status 85' "$work/ranks.out")" = 2 ] ||
    fail "ranks not told to exit with 85: $(cat "$work/ranks.out")"
  expect_gone
  latest_is 1 || fail "LATEST"
  grep -q "generation 1 started (the coordinator received SIGUSR1, the job ends once it is committed)" \
    "$ck/.mana/coordinator.log" || fail "the signal's checkpoint is not logged"

  start_coord
  start_ranks 2 --delay-park 1:1500
  wait_connected 2
  local out
  out=$(status --checkpoint) || fail "--checkpoint"
  out=$(status --kill --exit-status 85 --wait) || fail "--kill during a checkpoint: $out"
  case "$out" in "checkpoint committed: generation 2,"*) ;; *) fail "--kill printed '$out'" ;; esac
  wait "$ranks_pid" || fail "the ranks did not exit cleanly"
  ranks_pid=""
  [ "$(grep -c 'committed gen 2 then exit status 85' "$work/ranks.out")" = 2 ] ||
    fail "the plain checkpoint did not end the job: $(cat "$work/ranks.out")"
  grep -q "generation 2: the job ends once it is committed (requested from" \
    "$ck/.mana/coordinator.log" || fail "the change is not logged"
  expect_gone
  expect_exit 2 "--exit-status goes with --kill" "$bin/mana_status" --ckptdir "$ck" --checkpoint \
    --exit-status 3
  expect_exit 2 "--ckpt-signal: that signal cannot be caught or mana needs it for itself" \
    "$bin/mana_coordinator" --ckpt-signal KILL --ckptdir "$ck"
}

# --forked-writers: CKPT says fork=1, but not for a checkpoint that ends the job; a kill asked
# for while a forked generation runs is the next generation, started once that one commits.
scenario_forked() {
  start_coord --forked-writers
  start_ranks 2 --delay-park 1:1500
  wait_connected 2
  local out
  out=$(status --checkpoint) || fail "--checkpoint"
  out=$(status --kill --wait) || fail "--kill during a forked checkpoint: $out"
  case "$out" in "checkpoint committed: generation 2,"*) ;; *) fail "--kill printed '$out'" ;; esac
  wait "$ranks_pid" || fail "the ranks did not exit cleanly"
  ranks_pid=""
  [ "$(grep -c 'ckpt gen 1 fork$' "$work/ranks.out")" = 2 ] || fail "gen 1 not forked: $(cat "$work/ranks.out")"
  [ "$(grep -c 'ckpt gen 2$' "$work/ranks.out")" = 2 ] || fail "gen 2 forked: $(cat "$work/ranks.out")"
  [ "$(grep -c 'committed gen 1$' "$work/ranks.out")" = 2 ] || fail "gen 1 ended the job"
  [ "$(grep -c 'committed gen 2 then exit status 0' "$work/ranks.out")" = 2 ] ||
    fail "gen 2 did not end the job: $(cat "$work/ranks.out")"
  grep -q "generation 1 is written in the background: the job ends with the next checkpoint" \
    "$ck/.mana/coordinator.log" || fail "the deferred kill is not logged"
  expect_gone
  latest_is 2 || fail "LATEST"
}

scenario_interval() {
  start_coord
  start_ranks 2
  wait_connected 2
  local out
  out=$(status --interval 1) || fail "--interval"
  [ "$out" = "checkpoint interval set to 1 s" ] || fail "--interval printed '$out'"
  [ "$(json_get interval)" = 1 ] || fail "interval not in the status"
  latest_ge_2() { [ "$(latest)" -ge 2 ] 2>/dev/null; }
  wait_until 6 latest_ge_2 || fail "no two periodic checkpoints (LATEST '$(latest)')"
  out=$(status --interval 0) || fail "--interval 0"
  [ "$out" = "periodic checkpoints turned off" ] || fail "--interval 0 printed '$out'"
  local was
  sleep 0.3
  was=$(latest)
  sleep 1.5
  [ "$(latest)" = "$was" ] || fail "checkpoints went on after --interval 0"
  grep -q "generation 1 started (periodic)" "$ck/.mana/coordinator.log" || fail "not periodic"
  no_violations
}

expect_exit() { # expect_exit CODE TEXT COMMAND...: one line on stderr containing TEXT
  local code=$1 text=$2 rc
  shift 2
  "$@" >"$work/cmd.out" 2>"$work/cmd.err"
  rc=$?
  [ $rc -eq "$code" ] || fail "'$*' exited with $rc, expected $code: $(cat "$work/cmd.err")"
  [ "$(wc -l <"$work/cmd.err")" -eq 1 ] || fail "'$*' did not print one line: $(cat "$work/cmd.err")"
  grep -q -- "$text" "$work/cmd.err" || fail "'$*' said: $(cat "$work/cmd.err")"
}

scenario_status_errors() {
  local st=$bin/mana_status
  expect_exit 1 "no coordinator is running for $work/none" "$st" --ckptdir "$work/none"
  mkdir -p "$work/stale/.mana" && chmod 700 "$work/stale/.mana"
  "$PY" -c 'import os; print(os.urandom(32).hex())' >"$work/stale/.mana/secret"
  chmod 600 "$work/stale/.mana/secret"
  echo 127.0.0.1:1 >"$work/stale/.mana/coordinator"
  # no coordinator holds the lock: the port file is a leftover, and the message says so
  expect_exit 1 "the one at 127.0.0.1:1 that wrote $work/stale/.mana/coordinator is gone" \
    "$st" --ckptdir "$work/stale"
  expect_exit 2 "unknown option '--bogus'" "$st" --bogus
  expect_exit 2 "needs --checkpoint" "$st" --wait
  expect_exit 2 "cannot be combined" "$st" --quit --checkpoint
  expect_exit 2 "invalid number of seconds" "$st" --interval x
  expect_exit 2 "unknown option '--bogus'" "$bin/mana_coordinator" --bogus
  "$st" --help | grep -q '^Usage: mana_status' || fail "mana_status --help"
  "$bin/mana_coordinator" --help | grep -q '^Usage: mana_coordinator' || fail "--help"

  start_coord --ranks 3
  # a live coordinator that this host cannot reach on loopback (as from a login node)
  cp "$ck/.mana/coordinator" "$work/port-file"
  echo 127.0.0.1:1 >"$ck/.mana/coordinator"
  expect_exit 1 "it listens on its own host only: run mana_status there" "$st" --ckptdir "$ck"
  cp "$work/port-file" "$ck/.mana/coordinator"
  expect_exit 1 "no rank has connected yet" "$st" --ckptdir "$ck" --checkpoint
  local r
  for r in 0 1; do
    "$fake" --size 3 --only $r >"$work/rank$r.out" 2>&1 &
    extra_pids="$extra_pids $!"
  done
  wait_connected 2
  expect_exit 1 "only 2 of 3 ranks are connected" "$st" --ckptdir "$ck" --checkpoint
  "$fake" --size 3 --only 2 --delay-park 2:1500 >"$work/rank2.out" 2>&1 &
  extra_pids="$extra_pids $!"
  wait_connected 3
  status --checkpoint >/dev/null || fail "first checkpoint"
  expect_exit 1 "checkpoint already in progress" "$st" --ckptdir "$ck" --checkpoint
  wait_until 10 latest_is 1 || fail "the checkpoint did not commit"
}

scenario_lock() {
  start_coord
  [ "$(stat -c %a "$ck/.mana")" = 700 ] || fail ".mana mode"
  [ "$(stat -c %a "$ck/.mana/secret")" = 600 ] || fail "secret mode"
  [ "$(cat "$ck/.mana/coordinator")" = "$coord_addr" ] || fail "port file content"
  expect_exit 1 "in use by another coordinator (pid $coord_pid)" \
    "$bin/mana_coordinator" --ckptdir "$ck" --host 127.0.0.1
  start_ranks 2
  wait_connected 2
  checkpoint_ok 1
  status --quit >/dev/null || fail "--quit"
  wait "$ranks_pid"
  ranks_pid=""
  expect_gone
  # a new coordinator continues the numbering and removes an incomplete generation
  mkdir "$ck/gen-000007" && touch "$ck/gen-000007/rank-000000.img"
  start_coord --port-file "$work/port"
  [ "$(cat "$work/port")" = "$coord_addr" ] || fail "--port-file content"
  [ ! -e "$ck/gen-000007" ] || fail "the incomplete generation 7 was kept"
  start_ranks 2
  wait_connected 2
  checkpoint_ok 8
  [ "$(manifest_field 8 GENERATION previous)" = 1 ] || fail "previous of generation 8"
  kill -TERM "$coord_pid"
  expect_gone
  [ ! -e "$work/port" ] || fail "--port-file left behind"
}

scenario_job_over() {
  start_coord
  start_ranks 2 --lifetime 1
  wait_connected 2
  wait "$ranks_pid"
  ranks_pid=""
  expect_gone
  grep -q "exiting: all ranks have disconnected: the job is over" "$ck/.mana/coordinator.log" ||
    fail "job over not logged"
  # and one nobody joins gives up after --connect-timeout
  local out pid
  out=$("$bin/mana_coordinator" --daemon --ckptdir "$work/lonely" --host 127.0.0.1 \
        --connect-timeout 1) || fail "second coordinator"
  pid=${out#* }
  coord_pid=$pid
  wait_until 5 coord_gone || fail "the lonely coordinator did not give up"
  grep -q "no rank connected within 1 s" "$work/lonely/.mana/coordinator.log" || fail "not logged"
}

scenario_sigterm() {
  start_coord
  start_ranks 2 --delay-park 1:2000
  wait_connected 2
  status --checkpoint >/dev/null || fail "checkpoint"
  sleep 0.5
  [ -d "$ck/gen-000001" ] || fail "no generation directory while checkpointing"
  kill -TERM "$coord_pid"
  expect_gone
  [ ! -e "$ck/gen-000001" ] || fail "the interrupted generation was kept"
  [ ! -e "$ck/LATEST" ] || fail "LATEST was written"
  wait_until 5 grep -q "rank 0: abort gen 1: the coordinator was stopped by a signal" \
    "$work/ranks.out" || fail "rank 0 was not told ABORT"
}

scenario_launch() {
  local app=${MPI_APP:?MPI_APP must name an MPICH-linked program} out rc
  mkdir -p "$work/bin" "$work/run"
  # A launcher that starts fake ranks instead of the program, checkpoints and ends.
  cat >"$work/bin/fakerun" <<EOF
#!/usr/bin/env bash
echo "fakerun: \$*"
echo "fakerun: MANA_COORDINATOR=\$MANA_COORDINATOR MANA_SECRET_FILE=\$MANA_SECRET_FILE MANA_CKPTDIR=\$MANA_CKPTDIR"
"$bin/mana_status" --json | $PY -c 'import json,sys; print("fakerun: size", json.load(sys.stdin)["size"])'
"$fake" --size "\$2" --exit-after 1 > "$work/ranks.out" 2>&1 &
for i in \$(seq 100); do
  "$bin/mana_status" --json | grep -q '"connected": 2' && break
  sleep 0.05
done
"$bin/mana_status" --checkpoint --wait
wait
EOF
  printf '#!/bin/sh\nexit 3\n' >"$work/bin/failrun"
  chmod +x "$work/bin/fakerun" "$work/bin/failrun"

  (cd "$work/run" && PATH=$work/bin:$PATH MANA_LAUNCHERS=fakerun:failrun:norun \
     "$bin/mana_launch" --interval 0 fakerun -n 2 "$app") >"$work/launch.out" 2>&1
  rc=$?
  [ $rc -eq 0 ] || fail "mana_launch fakerun exited with $rc"
  local dir=$work/run/mana-ckpt
  grep -q "fakerun: -n 2 $bin/mana_lh $app" "$work/launch.out" || fail "launcher command"
  grep -q "MANA_COORDINATOR=[^ ]*:[0-9]* MANA_SECRET_FILE=$dir/.mana/secret MANA_CKPTDIR=$dir$" \
    "$work/launch.out" || fail "environment of the ranks"
  grep -q "fakerun: size 2" "$work/launch.out" || fail "the coordinator was not told --ranks 2"
  grep -q "checkpoint committed: generation 1" "$work/launch.out" || fail "no checkpoint"
  [ "$(stat -c %a "$dir")" = 700 ] || fail "default checkpoint directory mode"
  ck=$dir
  latest_is 1 || fail "LATEST in the default directory"
  grep -q "^COMMAND line=.*mana_launch%20--interval%200%20fakerun%20-n%202%20" \
    "$dir/gen-000001/MANIFEST" || fail "the command is not in MANIFEST"
  wait_until 5 test ! -e "$dir/.mana/coordinator" || fail "coordinator left after the job"

  # the incremental options reach the coordinator mana_launch starts
  (cd "$work/run" && PATH=$work/bin:$PATH MANA_LAUNCHERS=fakerun \
     "$bin/mana_launch" --ckptdir "$work/incr" --incremental --full-every 2 --keep 1 \
     fakerun -n 2 "$app") >"$work/incr.out" 2>&1 || fail "mana_launch --incremental"
  grep -q "incremental checkpoints: a full one every 2$" "$work/incr/.mana/coordinator.log" &&
    grep -q "keeping the 1 newest committed generations and what they need$" \
      "$work/incr/.mana/coordinator.log" ||
    fail "--incremental --full-every 2 --keep 1 did not reach the coordinator"
  wait_until 5 test ! -e "$work/incr/.mana/coordinator" || fail "coordinator left after the job"

  # a launcher that fails at once, and one that cannot be run: no coordinator stays
  for launcher in failrun norun; do
    (cd "$work/run" && PATH=$work/bin:$PATH MANA_LAUNCHERS=fakerun:failrun:norun \
       "$bin/mana_launch" --ckptdir "$work/$launcher" "$launcher" -n 2 "$app") \
       >"$work/$launcher.out" 2>&1
    rc=$?
    case $launcher in
      failrun) [ $rc -eq 3 ] || fail "failrun gave $rc" ;;
      norun) [ $rc -eq 127 ] || fail "norun gave $rc: $(cat "$work/$launcher.out")" ;;
    esac
    wait_until 5 test ! -e "$work/$launcher/.mana/coordinator" ||
      fail "a coordinator outlived $launcher"
    grep -q "exiting: " "$work/$launcher/.mana/coordinator.log" || fail "no exit logged ($launcher)"
  done

  # the launcher form uses a coordinator that waits for a job ...
  ck=$work/waiting
  start_coord
  (cd "$work/run" && env -u MANA_COORDINATOR -u MANA_SECRET_FILE PATH="$work/bin:$PATH" \
     MANA_LAUNCHERS=fakerun "$bin/mana_launch" --verbose --ckptdir "$ck" fakerun -n 2 "$app") \
     >"$work/reuse.out" 2>&1 || fail "mana_launch with a waiting coordinator"
  local running
  running=$(grep "^mana_launch: running: " "$work/reuse.out")
  case "$running" in
    *" MANA_COORDINATOR=$coord_addr "*) ;;
    *) fail "the waiting coordinator was not used: $running" ;;
  esac
  case "$running" in
    *" MANA_SECRET_FILE=$ck/.mana/secret "*) ;;
    *) fail "the waiting coordinator's secret was not passed on: $running" ;;
  esac
  latest_is 1 || fail "LATEST with the waiting coordinator"
  expect_gone
  # ... but not one that belongs to another launcher
  sleep 30 &
  local holder=$!
  extra_pids="$extra_pids $holder"
  out=$("$bin/mana_coordinator" --daemon --ckptdir "$work/taken" --host 127.0.0.1 \
        --watch-pid "$holder") || fail "coordinator of another launcher"
  coord_pid=${out#* }
  ck=$work/taken
  (cd "$work/run" && env -u MANA_COORDINATOR -u MANA_SECRET_FILE PATH="$work/bin:$PATH" \
     MANA_LAUNCHERS=fakerun "$bin/mana_launch" --ckptdir "$ck" fakerun -n 2 "$app") \
     >"$work/taken.out" 2>&1
  rc=$?
  [ $rc -eq 1 ] || fail "a job joined another launcher's coordinator (exit $rc)"
  grep -q "checkpoint directory $ck is in use by another job" "$work/taken.out" ||
    fail "taken: $(cat "$work/taken.out")"
  kill "$holder"
  expect_gone

  # ... and one that is going away (its launcher ended) and drops the connection is waited
  # for, not taken for a refusal: a stand-in holds the lock, answers one connection by
  # resetting it, and exits 0.3 s later (a restart right after a --kill checkpoint met the
  # real one so)
  ck=$work/exiting
  mkdir -p "$ck/.mana" && chmod 700 "$ck/.mana"
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$ck/.mana/secret"
  chmod 600 "$ck/.mana/secret"
  $PY - "$ck/.mana" >"$work/exiting-coord.out" 2>&1 <<'PYEOF' &
import fcntl, os, socket, struct, sys, time
meta = sys.argv[1]
lock = open(os.path.join(meta, "lock"), "a")
fcntl.flock(lock, fcntl.LOCK_EX)
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(4)
with open(os.path.join(meta, "coordinator"), "w") as f:
    f.write("127.0.0.1:%d\n" % srv.getsockname()[1])
srv.settimeout(20)
conn, _ = srv.accept()
conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
conn.close()
print("reset one connection", flush=True)
time.sleep(0.3)
os.unlink(os.path.join(meta, "coordinator"))
PYEOF
  local exiting=$!
  extra_pids="$extra_pids $exiting"
  wait_until 5 test -s "$ck/.mana/coordinator" || fail "the exiting stand-in did not start"
  (cd "$work/run" && env -u MANA_COORDINATOR -u MANA_SECRET_FILE PATH="$work/bin:$PATH" \
     MANA_LAUNCHERS=fakerun "$bin/mana_launch" --ckptdir "$ck" fakerun -n 2 "$app") \
     >"$work/exiting.out" 2>&1 || fail "mana_launch gave up on a coordinator that was exiting"
  grep -q "reset one connection" "$work/exiting-coord.out" || fail "the stand-in was not asked"
  latest_is 1 || fail "LATEST after the exiting coordinator"
  expect_gone

  # the per-rank form finds a coordinator already serving the directory
  ck=$work/run/mana-ckpt
  start_coord
  unset MANA_COORDINATOR MANA_SECRET_FILE
  (cd "$work/run" && timeout 20 "$bin/mana_launch" --verbose "$app") >"$work/perrank.out" 2>&1
  grep -q "^mana_launch: running: MANA_COORDINATOR=$coord_addr MANA_SECRET_FILE=$ck/.mana/secret MANA_CKPTDIR=$ck $bin/mana_lh " \
    "$work/perrank.out" || fail "per-rank form: $(cat "$work/perrank.out")"
  kill -TERM "$coord_pid"
  expect_gone
}

gendir() { printf '%s/gen-%06d' "$ck" "$1"; }

# expect_chain GEN NEEDS DEPTH: the GENERATION line of GEN's MANIFEST
expect_chain() {
  local needs depth
  needs=$(manifest_field "$1" GENERATION needs)
  depth=$(manifest_field "$1" GENERATION depth)
  [ "$needs $depth" = "$2 $3" ] ||
    fail "generation $1: MANIFEST needs=$needs depth=$depth, expected needs=$2 depth=$3"
}

# expect_ckpt GEN [BASE]: both ranks were told CKPT for GEN with base= BASE's directory, or
# with no base at all
expect_ckpt() {
  local want="ckpt gen $1"
  [ $# -gt 1 ] && want="$want base $(gendir "$2")"
  [ "$(grep -c "^rank [01]: $want\$" "$work/ranks.out")" = 2 ] ||
    fail "expected '$want' from both ranks: $(grep "ckpt gen $1" "$work/ranks.out")"
}

scenario_incremental() {
  start_coord --incremental --full-every 3
  start_ranks 2 --fail 1:3
  wait_connected 2
  checkpoint_ok 1
  expect_ckpt 1
  expect_chain 1 1 0
  checkpoint_ok 2
  expect_ckpt 2 1
  expect_chain 2 1 1
  grep -q "generation 2 is written against generation 1$" "$ck/.mana/coordinator.log" ||
    fail "the base is not logged"
  # an aborted generation is never a base: the next one goes on from the last commit
  checkpoint_aborts 3 "disk full"
  expect_ckpt 3 2
  checkpoint_ok 4
  expect_ckpt 4 2
  expect_chain 4 1 2
  # --full-every 3: two incremental generations after a full one, then a full one
  checkpoint_ok 5
  expect_ckpt 5
  expect_chain 5 5 0
  checkpoint_ok 6
  expect_ckpt 6 5
  expect_chain 6 5 1
  [ "$(json_get committed_depth) $(json_get committed_needs)" = "1 5" ] ||
    fail "status: depth $(json_get committed_depth), needs $(json_get committed_needs)"
  status | grep -q "^Last commit:  generation 6 at .*, incremental (depth 1, needs generation 5)$" ||
    fail "text status: $(status | grep 'Last commit')"
  no_violations

  # a new coordinator (and new ranks) goes on with the chain LATEST is in
  kill -TERM "$coord_pid"
  expect_gone
  wait "$ranks_pid"
  ranks_pid=""
  mv "$work/ranks.out" "$work/ranks-first.out"
  start_coord --incremental --full-every 3
  start_ranks 2 --full 0:7 --full 0:9 --oldest 1:9:0 --oldest 1:10:11
  wait_connected 2
  [ "$(json_get committed) $(json_get committed_depth)" = "6 1" ] ||
    fail "restarted status: committed $(json_get committed) depth $(json_get committed_depth)"
  # rank 0 writes a full image, rank 1 refers to 5: the generation needs 5
  checkpoint_ok 7
  expect_ckpt 7 6
  expect_chain 7 5 2
  checkpoint_ok 8
  expect_ckpt 8
  expect_chain 8 8 0
  # offered a base, both write full images (rank 1 says nothing: its own generation):
  # the chain starts afresh
  checkpoint_ok 9
  expect_ckpt 9 8
  expect_chain 9 9 0
  checkpoint_aborts 10 "referring to generation 11"
  checkpoint_ok 11
  expect_ckpt 11 9
  expect_chain 11 9 1
  # a checkpoint that ends the job may be incremental too
  local out
  out=$(status --kill --wait) || fail "--kill --wait"
  case "$out" in "checkpoint committed: generation 12,"*) ;; *) fail "--kill printed '$out'" ;; esac
  expect_ckpt 12 11
  expect_chain 12 9 2
  wait "$ranks_pid" || fail "the ranks did not exit cleanly"
  ranks_pid=""
  no_violations
  expect_gone
  # without --incremental, nothing names a base and every generation is full
  start_coord --full-every 2
  start_ranks 2
  wait_connected 2
  checkpoint_ok 13
  expect_ckpt 13
  expect_chain 13 13 0
  ! grep -q " base " "$work/ranks.out" || fail "a base without --incremental"
}

# gens_are LIST: the generation directories in $ck, e.g. "2 4 5"
gens_are() {
  local have
  have=$(cd "$ck" && ls -d gen-* 2>/dev/null | sed 's/^gen-0*//' | sort -n | tr '\n' ' ')
  [ "$have" = "$1 " ] || fail "generations on disk: '$have', expected '$1 '"
}

expect_usage_error() { # expect_usage_error TEXT COMMAND...: exit 2, TEXT the one stderr line
  local text=$1 rc
  shift
  "$@" >"$work/usage.out" 2>"$work/usage.err"
  rc=$?
  [ $rc -eq 2 ] || fail "$* exited with $rc, expected 2"
  [ "$(wc -l <"$work/usage.err")" = 1 ] || fail "$*: expected one line: $(cat "$work/usage.err")"
  grep -qF -- "$text" "$work/usage.err" || fail "$*: $(cat "$work/usage.err")"
}

scenario_keep() {
  expect_usage_error "invalid value 'x' for --keep" "$bin/mana_coordinator" --keep x
  expect_usage_error "--full-every must be at least 1" "$bin/mana_coordinator" --full-every 0
  expect_usage_error "invalid value '0' for --full-every: expected a whole number of at least 1" \
    "$bin/mana_launch" --full-every 0 mpiexec -n 2 ./app
  expect_usage_error "invalid value '-1' for --keep: expected a whole number" \
    "$bin/mana_launch" --keep -1 mpiexec -n 2 ./app
  expect_usage_error "--keep needs a whole number, not 'x'" "$bin/mana_restart" --keep x
  expect_usage_error "--full-every needs a whole number of at least 1, not '0'" \
    "$bin/mana_restart" --full-every 0

  start_coord --incremental --full-every 3 --keep 2
  start_ranks 2
  wait_connected 2
  local g
  for g in 1 2 3 4; do checkpoint_ok $g; done
  # 4 is full, but 3 is one of the two newest and needs 1
  expect_chain 3 1 2
  expect_chain 4 4 0
  gens_are "1 2 3 4"
  # a MANIFEST that does not read: what it needs is unknown, so it stays
  echo garbage >"$(gendir 2)/MANIFEST"
  checkpoint_ok 5
  gens_are "2 4 5"
  grep -q "removed generation 1 (--keep 2: the newest need generation 4 and later)" \
    "$ck/.mana/coordinator.log" || fail "removal of 1 not logged"
  grep -q "removed generation 3 " "$ck/.mana/coordinator.log" || fail "removal of 3 not logged"
  grep -q "generation 2 kept: its MANIFEST does not read" "$ck/.mana/coordinator.log" ||
    fail "the unreadable MANIFEST is not logged"
  checkpoint_ok 6
  gens_are "2 4 5 6"
  checkpoint_ok 7
  expect_chain 7 7 0
  gens_are "2 4 5 6 7"
  checkpoint_ok 8
  gens_are "2 7 8"
  [ -z "$(cd "$ck" && ls -a | grep '^\.aborted-')" ] || fail "leftovers of removed generations"
  no_violations
  kill -TERM "$coord_pid"
  expect_gone
  wait "$ranks_pid"
  ranks_pid=""

  # without --incremental every generation needs only itself
  ck=$work/plain
  start_coord --keep 1
  start_ranks 2
  wait_connected 2
  checkpoint_ok 1
  gens_are "1"
  checkpoint_ok 2
  gens_are "2"
  expect_chain 2 2 0
  checkpoint_ok 3
  gens_are "3"
  grep -q "removed generation 2 (--keep 1: the newest need generation 3 and later)" \
    "$ck/.mana/coordinator.log" || fail "removal not logged"
}

case "$scenario" in
  commit|refuse|fail|unparked|disconnect|raise|stall|timeout|auth|flood|garbage|kill|interval|lock|sigterm|launch|incremental|keep)
    "scenario_$scenario" ;;
  status-errors) scenario_status_errors ;;
  job-over) scenario_job_over ;;
  ckpt-signal) scenario_ckpt_signal ;;
  forked) scenario_forked ;;
  *) echo "fake_job.sh: unknown scenario '$scenario'" >&2; exit 2 ;;
esac
echo "fake_job.sh: $scenario: PASS"
exit 0
