#!/usr/bin/env bash
# A real one-node Slurm on this machine, and a sweep through `sweep.py --backend slurm`.
#
#   scripts/slurm_test.sh            (as root; scripts/setup.sh installs slurm-wlm and munge)
#
# Starts munged, slurmctld and slurmd with a slurm.conf generated in a temp dir (this
# host's real CPU count and memory, proctrack/linuxproc and task/none: no cgroups),
# submits a 3-point sweep of configs/scenarios/c2c-kunpeng920.json, waits, collects,
# and compares the CSV with a local sweep of the same points byte for byte (the CSV
# has no host-timing columns, they stay in each point's JSON; the test checks that).
# Part 2 deletes one point's result file (what a lost task leaves: cohsim writes its
# JSON by rename), resubmits, and checks that only that point ran again. Part 3 kills
# a task for real: scancel as soon as its log says its ~2 s point started (so the
# kill lands mid-run unless scancel takes seconds, which fails the test rather than
# passing it), then --status must list it failed with its log, and a resubmission
# must run that point alone. Part 4 runs the job lists of `cohsim validate` and `cohsim
# sensitivity --points DIR --emit-joblist FILE` through `sweep.py --joblist FILE --backend
# slurm` and checks that the collecting command prints what a local run prints. Every daemon it started is stopped on
# every exit path (trap). A daemon that does not start fails the test with its log.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
COHSIM=${COHSIM:-$REPO/build/release/cohsim}
export COHSIM

fail() { echo "slurm_test: FAIL: $*" >&2; exit 1; }
for tool in munged slurmctld slurmd sbatch squeue scontrol sinfo; do
  command -v "$tool" >/dev/null || fail "$tool not found: run scripts/setup.sh (slurm-wlm, munge)"
done
[ "$(id -u)" -eq 0 ] || fail "needs root (slurmd runs the jobs as root here)"
[ -x "$COHSIM" ] || fail "no cohsim binary at $COHSIM"

T=$(mktemp -d /tmp/cohsim-slurm-test.XXXXXX)
STARTED_MUNGE=0
stop_all() {
  set +e
  if [ -f "$T/slurmctld.pid" ] && kill -0 "$(cat "$T/slurmctld.pid")" 2>/dev/null; then
    export SLURM_CONF=$T/slurm.conf    # end this cluster's jobs first: their slurmstepd
    timeout 5 scancel --user=root >/dev/null 2>&1   # outlives slurmd otherwise
    for _ in $(seq 25); do [ -z "$(timeout 5 squeue -h 2>/dev/null)" ] && break; sleep 0.2; done
    timeout 5 scontrol shutdown >/dev/null 2>&1
  fi
  for f in slurmd slurmctld; do
    [ -f "$T/$f.pid" ] || continue
    pid=$(cat "$T/$f.pid")
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill "$pid"
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  done
  # a step daemon of this cluster still there (its environment names our slurm.conf)
  for pid in $(pgrep -x slurmstepd); do
    if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "SLURM_CONF=$T/slurm.conf"; then
      kill -9 "$pid" 2>/dev/null
    fi
  done
  if [ "$STARTED_MUNGE" = 1 ] && [ -f "$T/munged.pid" ]; then
    pid=$(cat "$T/munged.pid")
    kill "$pid" 2>/dev/null
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  if [ "${KEEP_SLURM_TEST:-0}" = 1 ]; then echo "slurm_test: kept $T" >&2; else rm -rf "$T"; fi
}
trap stop_all EXIT
trap 'exit 130' INT TERM

show_log() { echo "---- $1 ----" >&2; tail -n 40 "$1" >&2 2>/dev/null || echo "(no log)" >&2; }

# ---- munge: its own socket and pid file in $T, so a munged already running is left alone
if [ ! -f /etc/munge/munge.key ]; then
  mkdir -p /etc/munge
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  chmod 400 /etc/munge/munge.key
  chown root:root /etc/munge/munge.key
fi
mkdir -p /run/munge /var/log/munge /var/lib/munge
SOCK=$T/munge.socket
munged --force --socket="$SOCK" --pid-file="$T/munged.pid" --log-file="$T/munged.log" \
  --seed-file="$T/munged.seed" || { show_log "$T/munged.log"; fail "munged did not start"; }
STARTED_MUNGE=1
munge -n --socket="$SOCK" | unmunge --socket="$SOCK" >/dev/null \
  || { show_log "$T/munged.log"; fail "munge round trip failed"; }

# ---- slurm.conf: this node, its CPUs, a bit under its memory
HOST=$(hostname)
MEM=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -1)
[ -n "$MEM" ] || fail "slurmd -C gave no RealMemory: $(slurmd -C 2>&1)"
MEM=$(( MEM * 95 / 100 ))
cat > "$T/slurm.conf" <<EOF
ClusterName=cohsimtest
SlurmctldHost=$HOST
AuthType=auth/munge
AuthInfo=socket=$SOCK
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
NodeName=$HOST CPUs=$(nproc) RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
mkdir -p "$T/state" "$T/spool"
export SLURM_CONF=$T/slurm.conf
slurmctld -f "$SLURM_CONF" || { show_log "$T/slurmctld.log"; fail "slurmctld did not start"; }
slurmd -f "$SLURM_CONF" || { show_log "$T/slurmd.log"; fail "slurmd did not start"; }
alive() { [ -f "$T/$1.pid" ] && kill -0 "$(cat "$T/$1.pid")" 2>/dev/null; }
up=0
deadline=$(( SECONDS + 30 ))
while [ $SECONDS -lt $deadline ]; do  # a client call waits ~10 s for a dead controller: bound it
  for d in slurmctld slurmd; do
    alive $d || { sleep 0.5; alive $d; } || { show_log "$T/$d.log"; fail "$d exited after starting"; }
  done
  state=$(timeout 5 sinfo -h -n "$HOST" -o %T 2>/dev/null || true)
  case "$state" in idle*|mix*|alloc*) up=1; break ;; esac
  sleep 0.5
done
[ $up = 1 ] || { show_log "$T/slurmctld.log"; show_log "$T/slurmd.log"; fail "node $HOST not idle after 30 s (state: ${state:-none})"; }
echo "slurm_test: slurmctld and slurmd up ($(sinfo -h -o '%N %c CPUs %m MB %T'))"

GRID=(configs/scenarios/c2c-kunpeng920.json --param cpu_b=1,8,24 --set rounds=20 --set warmup=2)
wait_done() {  # wait_done DIR: until --status says every point is done, or fail
  local deadline=$(( SECONDS + 120 ))
  while [ $SECONDS -lt $deadline ]; do
    if timeout 30 scripts/sweep.py --status "$1" > "$T/status.txt"; then cat "$T/status.txt"; return 0; fi
    if grep -q ' [1-9][0-9]* failed' "$T/status.txt" && ! grep -qE ' [1-9][0-9]* (running|pending)' "$T/status.txt"; then
      cat "$T/status.txt" >&2; for l in "$1"/slurm/logs/*.log; do show_log "$l"; done
      fail "the array ended with failed points"
    fi
    sleep 0.5
  done
  cat "$T/status.txt" >&2; show_log "$T/slurmctld.log"; show_log "$T/slurmd.log"
  fail "the array did not finish in 120 s"
}
# The CSV holds a point's metrics only; the host's timings stay in the JSON's "host"
# object. A column named after the host would be a wall-clock reading: refuse it
# rather than compare around it.
no_host_columns() {
  if head -1 "$1" | tr ',' '\n' | grep -i 'host\|wall'; then fail "$1 has host-timing columns"; fi
}

# ---- the cluster refuses a job: sbatch's own message, exit 2, nothing recorded
set +e
out=$(scripts/sweep.py "${GRID[@]}" --out "$T/refused" --backend slurm --partition no-such-partition 2>&1)
rc=$?
set -e
[ $rc -eq 2 ] || fail "a refused job exited $rc, not 2: $out"
echo "$out" | grep -q "the cluster refused the job: .*[Ii]nvalid partition" || fail "no sbatch message in: $out"
[ ! -f "$T/refused/slurm/submissions.json" ] || fail "a refused job was recorded as submitted"
echo "slurm_test: a refused job: $out"

# ---- part 1: the sweep on Slurm vs. the same sweep here
scripts/sweep.py "${GRID[@]}" --out "$T/local" -q
scripts/sweep.py "${GRID[@]}" --out "$T/slurm" --backend slurm --partition debug
wait_done "$T/slurm"
scripts/sweep.py --collect "$T/slurm"
no_host_columns "$T/local/results.csv"
cp "$T/local/results.csv" "$T/local.csv"
cp "$T/slurm/results.csv" "$T/slurm.csv"
[ "$(wc -l < "$T/local.csv")" -eq 4 ] || fail "local CSV has not 3 points: $(cat "$T/local.csv")"
cmp "$T/local.csv" "$T/slurm.csv" || { diff "$T/local.csv" "$T/slurm.csv" >&2; fail "Slurm CSV differs from the local one"; }
echo "slurm_test: part 1 ok: the Slurm sweep's CSV equals the local one byte for byte"

# ---- part 2: one point lost (a killed task), resubmit, only it runs again
LOST=default__cpu_b=8__s1
[ -f "$T/slurm/points/$LOST.json" ] || fail "no $LOST.json in $T/slurm/points"
for f in "$T"/slurm/points/*.json; do stat -c '%n %Y.%y' "$f"; done | grep -v "/$LOST.json" > "$T/before.txt"
rm "$T/slurm/points/$LOST.json"
scripts/sweep.py --status "$T/slurm" && fail "--status says done with a point missing"
out=$(scripts/sweep.py "${GRID[@]}" --out "$T/slurm" --backend slurm 2>&1) || fail "resubmit: $out"
echo "$out"
echo "$out" | grep -q "resubmitting failed $LOST" || fail "the lost point was not listed as failed with its log"
echo "$out" | grep -q "submitted job [0-9]*: 1 point(s) in 1 array task(s)" || fail "resubmit did not submit just 1 point"
wait_done "$T/slurm"
last=$(ls -t "$T"/slurm/slurm/jobs-*.txt | head -1)
[ "$(wc -l < "$last")" -eq 1 ] && grep -q "/$LOST.json" "$last" || fail "the resubmitted job list is not just $LOST: $(cat "$last")"
for f in "$T"/slurm/points/*.json; do stat -c '%n %Y.%y' "$f"; done | grep -v "/$LOST.json" > "$T/after.txt"
cmp "$T/before.txt" "$T/after.txt" || fail "points other than $LOST were rewritten"
scripts/sweep.py --collect "$T/slurm"
cp "$T/slurm/results.csv" "$T/slurm2.csv"
cmp "$T/local.csv" "$T/slurm2.csv" || fail "CSV after the resubmission differs from the local one"
echo "$(scripts/sweep.py "${GRID[@]}" --out "$T/slurm" --backend slurm 2>&1)" | grep -q "nothing to submit" \
  || fail "a third submission of a complete sweep submitted something"
echo "slurm_test: part 2 ok: only $LOST was recomputed"
# ---- part 3: kill one array task mid-run (scancel once its log says the point started;
# the point takes ~2 s, the other ~50 ms), resubmit, and only the killed point runs again
KGRID=(configs/scenarios/c2c-kunpeng920.json --param rounds=20,4000000 --set cpu_b=8 --set warmup=2)
KILLED=default__rounds=4000000__s1
KEPT=default__rounds=20__s1
scripts/sweep.py "${KGRID[@]}" --out "$T/kill" --backend slurm -q > "$T/job.txt"
job=$(cat "$T/job.txt")
task=$(python3 -c "import json,sys; s=json.load(open(sys.argv[1]))[-1]; print([i for i,t in enumerate(s['tasks']) if sys.argv[2] in t][0])" "$T/kill/slurm/submissions.json" "$KILLED")
klog=$T/kill/slurm/logs/${job}_${task}.log
for _ in $(seq 200); do grep -q "cohsim-sweep-start $KILLED" "$klog" 2>/dev/null && break; sleep 0.1; done
grep -q "cohsim-sweep-start $KILLED" "$klog" 2>/dev/null || { show_log "$T/slurmd.log"; fail "task ${job}_$task did not start in 20 s"; }
scripts/sweep.py --status "$T/kill" > "$T/status.txt" || true   # exit 1: not all done
cat "$T/status.txt"
grep -Eq " [12] running" "$T/status.txt" || fail "--status does not show the task running"   # the ~50 ms point may not have finished yet
scancel "${job}_${task}"
for _ in $(seq 100); do [ -z "$(squeue -h -j "$job" -r 2>/dev/null)" ] && break; sleep 0.1; done
[ -z "$(squeue -h -j "$job" -r 2>/dev/null)" ] || fail "job $job still in the queue 10 s after scancel"
[ ! -e "$T/kill/points/$KILLED.json" ] || fail "$KILLED finished before the kill (the test needs a longer point)"
[ -f "$T/kill/points/$KEPT.json" ] || fail "$KEPT has no result"
stat -c %Y.%y "$T/kill/points/$KEPT.json" > "$T/kept-before.txt"
set +e; scripts/sweep.py --status "$T/kill" > "$T/status.txt"; rc=$?; set -e
cat "$T/status.txt"
[ $rc -eq 1 ] && grep -q "1 done, 0 running, 0 pending, 1 failed" "$T/status.txt" \
  && grep -q "failed $KILLED (job $job task $task, killed while running): log $klog" "$T/status.txt" \
  || fail "--status after the kill"
out=$(scripts/sweep.py "${KGRID[@]}" --out "$T/kill" --backend slurm 2>&1) || fail "resubmit: $out"
echo "$out"
echo "$out" | grep -q "submitted job [0-9]*: 1 point(s) in 1 array task(s)" || fail "resubmit did not submit just 1 point"
wait_done "$T/kill"
last=$(ls -t "$T"/kill/slurm/jobs-*.txt | head -1)
[ "$(wc -l < "$last")" -eq 1 ] && grep -q "/$KILLED.json" "$last" || fail "the resubmitted job list is not just $KILLED"
stat -c %Y.%y "$T/kill/points/$KEPT.json" | cmp - "$T/kept-before.txt" || fail "$KEPT was recomputed"
scripts/sweep.py --collect "$T/kill"
echo "slurm_test: part 3 ok: the killed task's point alone was recomputed"

# ---- part 4: the job lists cohsim writes (validate and sensitivity --emit-joblist) through
# `sweep.py --joblist FILE --backend slurm`; the collecting command reads every run from the
# folder (none runs here) and prints what the same command prints without a folder
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['rows']=[r for r in d['rows'] if r['id'].startswith('kp920.c2c')]; json.dump(d, open(sys.argv[2], 'w'))" \
  data/calibration.json "$T/calibration-c2c.json"
jobs_through_slurm() {  # jobs_through_slurm NAME COHSIM-ARGS...: emit, submit, wait, collect, compare
  local name=$1
  shift
  "$COHSIM" "$@" > "$T/$name-local.txt"
  "$COHSIM" "$@" --points "$T/$name-points" --emit-joblist "$T/$name-jobs.txt" > "$T/$name-emit.txt"
  grep -q "wrote [1-9][0-9]* job(s) to $T/$name-jobs.txt (0 run(s) already in" "$T/$name-emit.txt" \
    || fail "$name --emit-joblist: $(cat "$T/$name-emit.txt")"
  scripts/sweep.py --joblist "$T/$name-jobs.txt" --backend slurm --chunk 20 -q > /dev/null
  wait_done "$T/$name-jobs.sweep"
  "$COHSIM" "$@" --points "$T/$name-points" > "$T/$name-slurm.txt" 2> "$T/$name-collect.err"
  grep -q "read from $T/$name-points, 0 run here" "$T/$name-collect.err" \
    || fail "$name collected with runs of its own: $(cat "$T/$name-collect.err")"
  cmp "$T/$name-local.txt" "$T/$name-slurm.txt" \
    || { diff "$T/$name-local.txt" "$T/$name-slurm.txt" >&2; fail "$name from the Slurm runs differs from the local one"; }
  scripts/sweep.py --joblist "$T/$name-jobs.txt" --backend slurm 2>&1 | grep -q "nothing to submit" \
    || fail "a second submission of $name's complete job list submitted something"
  echo "slurm_test: part 4: $name from $(wc -l < "$T/$name-jobs.txt") Slurm runs equals the local one"
}
jobs_through_slurm validate validate --calibration "$T/calibration-c2c.json"
jobs_through_slurm sensitivity sensitivity configs/scenarios/c2c-kunpeng920.json --set rounds=20 \
  --set warmup=2 --calibration "$T/calibration-c2c.json"
echo "slurm_test: PASS"
