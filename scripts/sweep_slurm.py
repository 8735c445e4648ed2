"""The Slurm backend of scripts/sweep.py: a sweep as one job array.

  scripts/sweep.py SCENARIO ... --out DIR --backend slurm [--chunk N]
      [--partition P] [--time T] [--mem M]
  scripts/sweep.py --status DIR
  scripts/sweep.py --collect DIR

The points to run are those of sweep.py's own --emit-joblist (so the same
resume / staleness rule as a local sweep): one job line per point, written to
DIR/slurm/jobs-<n>.txt. One array task runs --chunk lines (default 1); each
line is `cd REPO && ... cohsim run ... --json DIR/points/<id>.json`, and
cohsim writes that file atomically (temporary file + rename), so a killed
task leaves no partial result. Every task logs to DIR/slurm/logs/<job>_<task>.log
with a `start <id> <epoch>` and `end <id> <rc> <epoch>` line per point.
DIR/slurm/submissions.json records each array (job id, its points by task).

A job list that cohsim wrote (`cohsim sensitivity|validate ... --points P
--emit-joblist FILE`) goes the same way: `scripts/sweep.py --joblist FILE
--backend slurm [--out DIR]` submits its lines whose result (each line's
`--json PATH`) is not complete, `--status DIR` follows them, and the same
cohsim command with `--points P` collects. DIR (default: FILE without its
suffix + ".sweep") holds only the Slurm state.

The repo (with the binary) and DIR must be on a filesystem the compute nodes
share, at the same absolute path.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cohsim_results as cr  # noqa: E402

# Per-task estimates when --mem / --time are not given, from the point's CPU
# count N (its `cpus` value from --param/--set, else DEFAULT_CPUS):
# memory 512 MB + 1 MB x N, time 5 min + 2 s x N per point of the task's chunk.
DEFAULT_CPUS = 64
ESTIMATE_HELP = ("default per task: --mem 512M + 1M x N and --time 5 min + 2 s x N for each "
                 "point of its chunk, N the point's `cpus` (--param/--set), %d if it has none"
                 % DEFAULT_CPUS)


class SlurmError(Exception):
    """sbatch missing or the cluster refused the job (exit 2)."""


def slurm_dir(out_dir):
    return Path(out_dir) / "slurm"


def point_cpus(point, fixed):
    for k, v in list(fixed) + list(point["params"].items()):
        if k == "cpus":
            n = cr.parse_number(v)
            if n is not None and n >= 1:
                return int(n)
    return DEFAULT_CPUS


def parse_joblist(path):
    """[(id, result path, cpus, line)] for each line of a job list of `cohsim run` commands: the
    result is the line's `--json FILE` (relative to a leading `cd DIR &&`), the id its stem, the
    CPU count its `--set cpus=N` (else DEFAULT_CPUS)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise SlurmError("cannot read the job list %s: %s" % (path, e.strerror))
    entries, seen = [], {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            argv = shlex.split(line)
        except ValueError as e:
            raise SlurmError("%s line %d: not a shell command (%s)" % (path, n, e))
        if "--json" not in argv or argv.index("--json") + 1 >= len(argv):
            raise SlurmError("%s line %d: no --json FILE: a job line must write its result with "
                             "--json (cohsim ... --emit-joblist writes such lines)" % (path, n))
        result = Path(argv[argv.index("--json") + 1])
        if not result.is_absolute():
            base = Path(argv[1]) if len(argv) > 2 and argv[0] == "cd" else Path(path).resolve().parent
            result = base / result
        cpus = DEFAULT_CPUS
        for k, a in enumerate(argv[:-1]):
            if a == "--set" and argv[k + 1].startswith("cpus="):
                v = cr.parse_number(argv[k + 1][5:])
                cpus = int(v) if v is not None and v >= 1 else cpus
        pid = result.stem
        if pid in seen:
            raise SlurmError("%s lines %d and %d write results named %s.json: the ids of a job "
                             "list must differ" % (path, seen[pid], n, pid))
        seen[pid] = n
        entries.append((pid, result, cpus, line))
    return entries


def estimate_cpus(cpus):
    """(mem in MB, time in minutes) for one task running points of these CPU counts."""
    mem = 512 + max(cpus)
    seconds = sum(300 + 2 * n for n in cpus)
    return mem, (seconds + 59) // 60


def estimate(points_by_id, chunk_ids, fixed):
    """(mem in MB, time in minutes) for one task running `chunk_ids`."""
    return estimate_cpus([point_cpus(points_by_id[i], fixed) for i in chunk_ids])


def load_submissions(out_dir):
    path = slurm_dir(out_dir) / "submissions.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []


def log_path(out_dir, job_id, task):
    return slurm_dir(out_dir) / "logs" / ("%s_%d.log" % (job_id, task))


def read_log(path):
    """{point id: {"start": t, "end": t, "rc": rc}} from a task's log."""
    out = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        f = line.split()
        if len(f) == 3 and f[0] == "cohsim-sweep-start":
            out.setdefault(f[1], {})["start"] = float(f[2])
        elif len(f) == 4 and f[0] == "cohsim-sweep-end":
            out.setdefault(f[1], {}).update(rc=int(f[2]), end=float(f[3]))
    return out


def queue_states(job_ids):
    """{(job id, task): 'RUNNING'|'PENDING'|...} from squeue, or None without squeue."""
    if not job_ids or not shutil.which("squeue"):
        return None
    done = subprocess.run(["squeue", "-h", "-r", "-j", ",".join(job_ids), "-o", "%i %T"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        # squeue refuses ids the controller has forgotten: ask for all and filter
        done = subprocess.run(["squeue", "-h", "-r", "-o", "%i %T"], capture_output=True,
                              text=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            return None
    states = {}
    for line in done.stdout.splitlines():
        f = line.split()
        if len(f) == 2 and "_" in f[0]:
            job, _, task = f[0].partition("_")
            if job in job_ids and task.isdigit():
                states[(job, int(task))] = f[1]
    return states


def sacct_states(job_ids):
    """{(job id, task): state} from sacct when accounting is there, else {}."""
    if not job_ids or not shutil.which("sacct"):
        return {}
    done = subprocess.run(["sacct", "-n", "-X", "-P", "-j", ",".join(job_ids), "-o", "JobID,State"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    states = {}
    if done.returncode == 0:
        for line in done.stdout.splitlines():
            jid, _, state = line.partition("|")
            job, _, task = jid.partition("_")
            if task.isdigit():
                states[(job, int(task))] = state.split()[0] if state else ""
    return states


def point_states(out_dir, grid_ids):
    """Classify every grid point: done / running / pending / failed / not submitted.
    Returns (states {id: state}, info {id: (job, task, log path, detail)}, timings [s])."""
    points_dir = Path(out_dir) / "points"
    subs = load_submissions(out_dir)
    latest, results = {}, {}  # a point's most recent submission, and where it writes its result
    for sub in subs:
        results.update(sub.get("results", {}))
        for task, ids in enumerate(sub["tasks"]):
            for pid in ids:
                latest[pid] = (sub["job_id"], task)
    job_ids = sorted({j for j, _ in latest.values()})
    queue = queue_states(job_ids)
    acct = sacct_states(job_ids) if queue is not None else {}
    logs, timings = {}, []
    states, info = {}, {}
    for pid in grid_ids:
        if cr.is_complete(Path(results.get(pid, points_dir / (pid + ".json")))):
            states[pid] = "done"
        if pid not in latest:
            states.setdefault(pid, "not submitted")
            continue
        job, task = latest[pid]
        lp = log_path(out_dir, job, task)
        if lp not in logs:
            logs[lp] = read_log(lp)
            for rec in logs[lp].values():
                if "start" in rec and "end" in rec:
                    timings.append(rec["end"] - rec["start"])
        rec = logs[lp].get(pid, {})
        info[pid] = (job, task, lp, "")
        if pid in states:
            continue
        if queue is not None and (job, task) in queue:
            q = queue[(job, task)]
            started = "start" in rec
            states[pid] = "running" if q in ("RUNNING", "COMPLETING") and started else (
                "pending" if q == "PENDING" or not started else "running")
            if q in ("RUNNING", "COMPLETING") and "end" in rec:
                states[pid] = "failed"  # its line ended without a complete result
        elif queue is None and "end" not in rec and lp.exists():
            states[pid] = "running" if "start" in rec else "pending"
        elif queue is None and not lp.exists():
            states[pid] = "pending"
        else:
            states[pid] = "failed"
            why = []
            if rec.get("rc") == 0:
                why.append("exit 0 but its result is missing or incomplete")
            elif "rc" in rec:
                why.append("exit %d" % rec["rc"])
            elif "start" in rec:
                why.append("killed while running")
            else:
                why.append("never started")
            if acct.get((job, task)):
                why.append("slurm state %s" % acct[(job, task)])
            info[pid] = (job, task, lp, ", ".join(why))
    return states, info, timings


def load_grid(out_dir):
    try:
        desc = json.loads((Path(out_dir) / "sweep.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return desc


def failed_lines(states, info):
    return ["  failed %s (job %s task %d, %s): log %s" % (pid, info[pid][0], info[pid][1],
                                                        info[pid][3], info[pid][2])
            for pid in sorted(states) if states[pid] == "failed"]


def status(out_dir, fmt_duration):
    """sweep.py --status DIR: counts, ETA, failed tasks with their logs. Exit 0
    when every point is done, 1 otherwise."""
    desc = load_grid(out_dir)
    if desc and desc.get("points"):
        ids = [p["id"] for p in desc["points"]]
    else:  # a job list's submissions: every point they named
        ids = list(dict.fromkeys(i for sub in load_submissions(out_dir) if "results" in sub
                                 for t in sub["tasks"] for i in t))
        if not ids:
            raise SlurmError("%s has no sweep.json with a grid and no job list submitted (is it "
                             "a sweep's --out, or the --out of sweep.py --joblist?)"
                             % (Path(out_dir) / "sweep.json"))
    states, info, timings = point_states(out_dir, ids)
    count = {k: sum(1 for s in states.values() if s == k)
             for k in ("done", "running", "pending", "failed", "not submitted")}
    eta = ""
    left = count["running"] + count["pending"]
    if left and timings:
        per = sum(timings) / len(timings)
        eta = ", ETA ~%s" % fmt_duration(per * left / max(1, count["running"]))
    elif left:
        eta = ", ETA unknown (no point finished yet)"
    print("%s: %d points: %d done, %d running, %d pending, %d failed%s%s" % (
        out_dir, len(ids), count["done"], count["running"], count["pending"], count["failed"],
        ", %d not submitted" % count["not submitted"] if count["not submitted"] else "", eta))
    for line in failed_lines(states, info):
        print(line)
    return 0 if count["done"] == len(ids) else 1


TASK_SCRIPT = """#!/bin/bash
# Written by scripts/sweep.py --backend slurm: task i runs lines i*CHUNK+1 .. (i+1)*CHUNK
# of JOBLIST; exit 1 if any of its points failed.
JOBLIST=%(joblist)s
CHUNK=%(chunk)d
IDS=(%(ids)s)
first=$(( SLURM_ARRAY_TASK_ID * CHUNK ))
status=0
for (( k = first; k < first + CHUNK && k < ${#IDS[@]}; k++ )); do
  id=${IDS[$k]}
  line=$(sed -n "$(( k + 1 ))p" "$JOBLIST")
  echo "cohsim-sweep-start $id $(date +%%s.%%N)"
  bash -c "$line"
  rc=$?
  echo "cohsim-sweep-end $id $rc $(date +%%s.%%N)"
  [ $rc -eq 0 ] || status=1
done
exit $status
"""


def fmt_time(minutes):
    return "%d:%02d:00" % (minutes // 60, minutes % 60)


def _need_sbatch():
    if not shutil.which("sbatch"):
        raise SlurmError("sbatch not found on PATH: install Slurm's client (apt-get install "
                         "slurm-client) or run without --backend slurm")


def submit(args, run_joblist, points, fixed, out_dir):
    """Submit the points sweep.py's joblist would run as one array. `run_joblist(path)`
    is sweep.py's --emit-joblist run writing that path; returns the exit status."""
    _need_sbatch()
    sdir = slurm_dir(out_dir)
    (sdir / "logs").mkdir(parents=True, exist_ok=True)
    joblist = sdir / ("jobs-%d.txt" % (len(load_submissions(out_dir)) + 1))
    rc = run_joblist(str(joblist))
    if rc != 0:
        return rc
    entries = [(pid, result, line) for pid, result, _, line in parse_joblist(joblist)]
    by_id = {p["id"]: p for p in points}
    return _submit(args, out_dir, joblist, entries, len(points),
                   lambda ids: estimate(by_id, ids, fixed))


def submit_joblist(args, joblist, out_dir):
    """sweep.py --joblist FILE --backend slurm: FILE's lines whose result is not complete,
    as one array (a line still queued or running from an earlier array is not resubmitted)."""
    _need_sbatch()
    entries = parse_joblist(joblist)
    if not entries:
        raise SlurmError("the job list %s has no lines" % joblist)
    done = [e for e in entries if cr.is_complete(e[1])]
    todo = [e for e in entries if not cr.is_complete(e[1])]
    if not todo:
        if not args.quiet:
            sys.stderr.write("nothing to submit: every result of %s's %d line(s) is there; collect "
                             "with the cohsim command that wrote it (its --points)\n"
                             % (joblist, len(entries)))
        return 0
    sdir = slurm_dir(out_dir)
    (sdir / "logs").mkdir(parents=True, exist_ok=True)
    copy = sdir / ("jobs-%d.txt" % (len(load_submissions(out_dir)) + 1))
    cr.atomic_write_text(copy, "".join(e[3] + "\n" for e in todo))
    cpus = {e[0]: e[2] for e in entries}
    return _submit(args, out_dir, copy, [(e[0], e[1], e[3]) for e in todo], len(entries),
                   lambda ids: estimate_cpus([cpus[i] for i in ids]), already=len(done))


def _submit(args, out_dir, joblist, entries, total, estimate_of, already=None):
    """Submit `entries` [(id, result path, line)] of `joblist` (a file in DIR/slurm, which the
    task script reads; rewritten here without the lines already queued) as one array of
    --chunk lines per task; `total` points in all, `estimate_of(ids)` a task's (MB, minutes)."""
    sdir = slurm_dir(out_dir)
    subs = load_submissions(out_dir)
    ids = [e[0] for e in entries]
    states, info, _ = point_states(out_dir, ids)
    for line in failed_lines(states, info):
        sys.stderr.write(line.replace("  failed", "resubmitting failed", 1) + "\n")
    busy = {i for i in ids if states.get(i) in ("running", "pending")}
    keep = [e for e in entries if e[0] not in busy]
    if busy:
        sys.stderr.write("%d point(s) still queued or running in an earlier array: not "
                         "resubmitted\n" % len(busy))
    if already is None:
        already = total - len(ids)
    if not keep:
        joblist.unlink()
        if not args.quiet:
            sys.stderr.write("nothing to submit: %d of %d points complete%s; --status %s\n"
                             % (already, total,
                                ", %d in the queue" % len(busy) if busy else "", out_dir))
        return 0
    ids = [e[0] for e in keep]
    cr.atomic_write_text(joblist, "".join(e[2] + "\n" for e in keep))

    chunk = args.chunk
    tasks = [ids[i:i + chunk] for i in range(0, len(ids), chunk)]
    ests = [estimate_of(t) for t in tasks]
    mem = args.mem or "%dM" % max(m for m, _ in ests)
    tlimit = args.time or fmt_time(max(t for _, t in ests))
    script = sdir / ("task-%d.sh" % (len(subs) + 1))
    cr.atomic_write_text(script, TASK_SCRIPT % {
        "joblist": shlex.quote(str(joblist)), "chunk": chunk,
        "ids": " ".join(shlex.quote(i) for i in ids)})
    os.chmod(script, 0o755)
    cmd = ["sbatch", "--parsable", "--array=0-%d" % (len(tasks) - 1),
           "--job-name=cohsim-sweep-%s" % Path(out_dir).name,
           "--output=%s" % (sdir / "logs" / "%A_%a.log"),
           "--chdir=%s" % cr.REPO_ROOT, "--cpus-per-task=1", "--ntasks=1",
           "--mem=%s" % mem, "--time=%s" % tlimit]
    if args.partition:
        cmd.append("--partition=%s" % args.partition)
    cmd.append(str(script))
    done = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    job = done.stdout.strip().split(";")[0]
    if done.returncode != 0 or not job.isdigit():
        msg = " ".join((done.stderr.strip() or done.stdout.strip() or
                        "exit %d" % done.returncode).split())
        raise SlurmError("the cluster refused the job: %s" % msg)
    subs.append({"job_id": job, "submitted": time.time(), "joblist": str(joblist),
                 "chunk": chunk, "mem": mem, "time": tlimit, "tasks": tasks,
                 "results": {e[0]: str(e[1]) for e in keep}, "sbatch": cmd})
    cr.atomic_write_text(sdir / "submissions.json", json.dumps(subs, indent=2) + "\n")
    if not args.quiet:
        sys.stderr.write("submitted job %s: %d point(s) in %d array task(s) (--mem %s --time %s)"
                         "; %d of %d points already complete; follow it with --status %s, "
                         "then collect%s\n" % (job, len(ids), len(tasks), mem, tlimit,
                                                already, total, out_dir,
                                                " with --collect %s" % out_dir if not getattr(args, "joblist", None)
                                                else " with the cohsim command that wrote the job list (its --points)"))
    print(job)
    return 0
