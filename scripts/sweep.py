#!/usr/bin/python3
"""Run a cohsim scenario over a grid of parameters, variants and seeds.

  scripts/sweep.py configs/scenarios/x.json --param cpus=2,4,8,16,32,64,96 \\
      --variant cmpxchg,fetch-add --seeds 3 [--set k=v ...] [-j N] [--out DIR]

Every point runs `cohsim run SCENARIO [--variant V] --set k=v... --seed S
--json DIR/points/<point-id>.json -q` (from the repo root). Results land in
DIR/results.csv (one row per point and seed; columns scenario, variant, seed,
param.<name>..., metric.<name>..., status) and DIR/sweep.json describes the grid.

Before the first point, `cohsim params` checks every variant and every --set and
--param name (with each swept parameter at its first value), then every point's
values (each distinct variant x swept values once): an unknown variant, an
unknown name (with a did-you-mean), a name a variant sets or a value cohsim
refuses (out of bounds, unreadable, or not going with another, e.g. cpu_a =
cpu_b; the message names the parameter, the value and what it expects) is exit
2, and nothing runs or is written. The default DIR is sweep-out/<scenario stem>
under the current directory.

Re-running the same command resumes: points whose result JSON is complete are
skipped, incomplete or corrupt ones run again, and so do stale ones: a point
whose build_id is not this binary's (`cohsim version --json`; COHSIM_BUILD_ID
overrides it) or one of whose recorded inputs (platform, includes, scenario)
no longer has the sha256 it recorded. One line says how many are recomputed
and why. A failed point keeps its command
line and stderr in DIR/points/<id>.err; the others go on. results.csv is
written (atomically) only when every point holds a result: a sweep that fails
or is interrupted leaves none (an earlier one in DIR is removed when the points
start), never a partial one; its complete points stay in DIR/points for the
re-run, and --collect DIR tabulates them. Exit status: 0 all points ok (and
results.csv written), 1 some point failed, 2 bad arguments, 130 interrupted.

More than one machine (GNU parallel):
  scripts/sweep.py SCENARIO ... --out DIR --emit-joblist jobs.txt
  parallel --sshlogin 8/host1,8/host2 --joblog jobs.log < jobs.txt
  rsync -a host1:REPO/DIR/points/ DIR/points/   # for each host
  scripts/sweep.py --collect DIR
Each job line is `cd REPO && mkdir -p DIR/points && build/release/cohsim run ...`
with paths relative to the repo root, so every host needs the repo (with the
binary built) checked out at the SAME absolute path as here. Points already
complete in DIR/points are left out of the job list.
"""

import argparse
import hashlib
import itertools
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cohsim_results as cr  # noqa: E402
import sweep_slurm  # noqa: E402

STDERR_TAIL_LINES = 15
DETAILED_FAILURES = 3   # full command + stderr tail for the first few failures


class UsageError(Exception):
    pass


# ------------------------------------------------------------ arguments ---

def split_list(text, what):
    """Comma separated list; duplicates and empty items are errors."""
    items = [s.strip() for s in text.split(",")]
    if any(not s for s in items):
        raise UsageError("empty item in %s list %r" % (what, text))
    dup = sorted({s for s in items if items.count(s) > 1})
    if dup:
        raise UsageError("duplicate %s value(s) %s in %r" % (what, ", ".join(dup), text))
    return items


def parse_assignment(spec, what):
    name, sep, value = spec.partition("=")
    name = name.strip()
    if not sep or not name:
        raise UsageError("%s must look like NAME=VALUE, got %r" % (what, spec))
    return name, value.strip()


def parse_params(specs):
    """['cpus=2,4', 'x=a'] -> [('cpus', ['2', '4']), ('x', ['a'])] (command-line order)."""
    out = []
    for spec in specs or []:
        name, values = parse_assignment(spec, "--param")
        if any(n == name for n, _ in out):
            raise UsageError("--param %s given twice" % name)
        if not values:
            raise UsageError("--param %s has no values" % name)
        out.append((name, split_list(values, "--param " + name)))
    return out


def parse_variants(text):
    """None or '' -> [''] (the scenario default), else the listed names."""
    if text is None or text.strip() == "":
        return [""]
    return split_list(text, "--variant")


def parse_seeds(seeds, seed_list):
    if seeds is not None and seed_list is not None:
        raise UsageError("give either --seeds N or --seed-list, not both")
    if seed_list is not None:
        out = []
        for s in split_list(seed_list, "--seed-list"):
            if not (s.isascii() and s.isdigit()) or int(s) >= 2**64:  # as cohsim --seed takes it
                raise UsageError("--seed-list: %r is not an integer in 0..2^64-1" % s)
            out.append(int(s))
        return out
    n = 1 if seeds is None else seeds
    if n < 1:
        raise UsageError("--seeds must be at least 1")
    return list(range(1, n + 1))


def expand_grid(params, variants, seeds):
    """Cartesian product variants x params x seeds, as a list of points:
    {"id", "variant", "seed", "params": {name: value}} in a stable order."""
    names = [n for n, _ in params]
    points = []
    for variant in variants:
        for combo in itertools.product(*[vals for _, vals in params]):
            p = dict(zip(names, combo))
            for seed in seeds:
                points.append({"id": cr.point_id(variant, p, seed),
                               "variant": variant, "seed": seed, "params": p})
    return points


def repo_relative(path):
    """Path relative to the repo root if inside it, else absolute (as text)."""
    p = Path(path).resolve()
    try:
        return p.relative_to(cr.REPO_ROOT).as_posix()
    except ValueError:
        return str(p)


def resolve_scenario(scenario):
    """The scenario argument as cohsim should see it from the repo root."""
    if Path(scenario).exists():
        return repo_relative(scenario)
    return scenario  # maybe already repo-relative, or a name cohsim resolves


def resolve_cohsim(arg):
    if arg:
        return str(Path(arg).resolve())
    env = os.environ.get("COHSIM")
    if env:
        return str(Path(env).resolve())
    return str(cr.REPO_ROOT / cr.DEFAULT_COHSIM)


def point_command(cohsim, scenario, point, fixed, json_path, override_variant=False):
    cmd = [cohsim, "run", scenario]
    if point["variant"]:
        cmd += ["--variant", point["variant"]]
    if override_variant:
        cmd.append("--override-variant")
    for k, v in list(fixed) + list(point["params"].items()):
        cmd += ["--set", "%s=%s" % (k, v)]
    cmd += ["--seed", str(point["seed"]), "--json", json_path, "-q"]
    return cmd


def sweep_description(scenario, params, variants, seeds, fixed, points, cohsim):
    return {
        "tool": "scripts/sweep.py",
        "scenario": scenario,
        "params": {n: v for n, v in params},
        "param_order": [n for n, _ in params],
        "variants": variants,
        "seeds": seeds,
        "set": {k: v for k, v in fixed},
        "cohsim": cohsim,
        "points": points,
    }


# ------------------------------------------------------------ progress ---

def fmt_duration(s):
    s = int(round(s))
    if s >= 3600:
        return "%d:%02d:%02d" % (s // 3600, s % 3600 // 60, s % 60)
    return "%d:%02d" % (s // 60, s % 60)


class Progress:
    """done/failed/total, elapsed, time left; one updating line on a TTY,
    a line per completed point otherwise, nothing when quiet."""

    def __init__(self, total, already_done, quiet, jobs=1, stream=None):
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = self.stream.isatty()
        self.total, self.done, self.failed = total, already_done, 0
        self.to_run = total - already_done
        self.finished, self.busy, self.jobs = 0, 0.0, jobs
        self.start = time.monotonic()
        self.lock = threading.Lock()

    def _status(self):
        elapsed = time.monotonic() - self.start
        left = ""
        if self.finished:  # mean point duration x remaining points / parallelism
            remaining = self.to_run - self.finished
            left = ", ~%s left" % fmt_duration(
                self.busy / self.finished * remaining / max(1, min(self.jobs, remaining)))
        return "[%d done, %d failed / %d] %s elapsed%s" % (
            self.done, self.failed, self.total, fmt_duration(elapsed), left)

    def point_done(self, point_id, ok, seconds):
        with self.lock:
            self.finished += 1
            self.busy += seconds
            if ok:
                self.done += 1
            else:
                self.failed += 1
            if self.quiet:
                return
            if self.tty:
                self.stream.write("\r\x1b[K" + self._status())
            else:
                self.stream.write("%s %s %s (%.1fs)\n" % (
                    self._status(), "ok" if ok else "FAILED", point_id, seconds))
            self.stream.flush()

    def message(self, text):
        """Print a block of text (e.g. a failure) without garbling the TTY line."""
        with self.lock:
            if self.tty and not self.quiet:
                self.stream.write("\r\x1b[K" + text + "\n" + self._status())
            else:
                self.stream.write(text + "\n")
            self.stream.flush()

    def tick(self):
        """On a TTY, refresh the line every second so elapsed time moves."""
        if not self.tty or self.quiet:
            return

        def loop():
            while not self.closed.wait(1.0):
                with self.lock:
                    self.stream.write("\r\x1b[K" + self._status())
                    self.stream.flush()
        self.closed = threading.Event()
        threading.Thread(target=loop, daemon=True).start()

    def close(self):
        if getattr(self, "closed", None):
            self.closed.set()
        if self.tty and not self.quiet:
            self.stream.write("\n")
            self.stream.flush()


# ------------------------------------------------------------ running ---

def signal_group(proc, sig):
    """Sends `sig` to the process group `proc` leads (started with start_new_session)."""
    try:
        os.killpg(proc.pid, sig)
    except (OSError, ProcessLookupError):
        pass


class Runner:
    def __init__(self, timeout):
        self.timeout = timeout
        self.stop = threading.Event()
        self.procs = set()
        self.lock = threading.Lock()

    def run(self, cmd, json_path, err_path):
        """Run one point; returns (ok, seconds, failure text or None)."""
        if self.stop.is_set():
            return None
        start = time.monotonic()
        try:
            # its own process group: a timeout or an interrupt ends the whole point (a job list's
            # `bash -c "cd ... && cohsim ..."` with its cohsim), not only the process started here
            proc = subprocess.Popen(cmd, cwd=str(cr.REPO_ROOT), stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True)
        except OSError as e:
            rc, out, err = "not started", b"", str(e).encode()
        else:
            with self.lock:
                self.procs.add(proc)
            try:
                out, err = proc.communicate(timeout=self.timeout)
                rc = proc.returncode
            except subprocess.TimeoutExpired:
                signal_group(proc, signal.SIGKILL)
                out, err = proc.communicate()
                rc = "timeout after %ss" % self.timeout
            finally:
                with self.lock:
                    self.procs.discard(proc)
        seconds = time.monotonic() - start
        if self.stop.is_set() and rc != 0:
            return None
        if rc == 0 and cr.is_complete(json_path):
            try:
                os.unlink(err_path)
            except OSError:
                pass
            return True, seconds, None
        why = "exit %s" % rc
        if rc == 0:
            why = "exit 0 but %s is missing or incomplete" % json_path
        stderr = err.decode("utf-8", "replace")
        report = "# command: %s\n# status: %s\n# seconds: %.2f\n%s" % (
            shlex.join(cmd), why, seconds, stderr)
        stdout = out.decode("utf-8", "replace")
        if stdout.strip():
            report += "\n# stdout:\n" + stdout
        cr.atomic_write_text(err_path, report)
        tail = stderr.rstrip("\n").splitlines()[-STDERR_TAIL_LINES:]
        text = "FAILED %s (%s)\n  command: %s\n  stderr tail (full in %s):\n%s" % (
            Path(json_path).stem, why, shlex.join(cmd), err_path,
            "\n".join("    " + line for line in tail) if tail else "    (empty)")
        return False, seconds, text

    def kill_all(self):
        self.stop.set()
        with self.lock:
            for p in list(self.procs):
                signal_group(p, signal.SIGTERM)


def result_rows(points, scenario, points_dir, failed_ids):
    rows = []
    for p in points:
        doc = cr.load_result(points_dir / (p["id"] + ".json"))
        row = {"scenario": scenario, "variant": p["variant"], "seed": p["seed"],
               "params": p["params"], "metrics": {}, "status": "ok"}
        if doc is not None:
            row["variant"] = doc.get("variant") or p["variant"]
            row["metrics"] = cr.numeric_metrics(doc)
        else:
            row["status"] = "failed" if p["id"] in failed_ids else "missing"
        rows.append(row)
    return rows


def check_existing_sweep(out_dir, desc):
    old_path = out_dir / "sweep.json"
    if not old_path.exists():
        return
    try:
        old = json.loads(old_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    for key in ("scenario", "set"):
        if old.get(key) != desc[key]:
            raise UsageError(
                "%s holds a sweep with a different %s (%r, now %r); resuming would mix "
                "results: use another --out or remove that directory"
                % (out_dir, "scenario" if key == "scenario" else "--set", old.get(key), desc[key]))


def current_build_id(cohsim):
    """This binary's build id (`cohsim version --json`), or None when it tells none."""
    try:
        done = subprocess.run([cohsim, "version", "--json"], cwd=str(cr.REPO_ROOT),
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        return json.loads(done.stdout).get("build_id") if done.returncode == 0 else None
    except (OSError, ValueError, AttributeError, subprocess.TimeoutExpired):
        return None


def staleness(doc, build_id):
    """Why the complete result `doc` cannot be reused with the binary of
    `build_id`: "build" (made by another build, or one that recorded none),
    "inputs" (an input file's sha256 is not the one recorded), or None."""
    if build_id is None or doc.get("build_id") != build_id or not isinstance(doc.get("inputs"), dict):
        return "build"
    for path, digest in doc["inputs"].items():
        p = Path(path) if os.path.isabs(path) else cr.REPO_ROOT / path  # points run from the repo root
        try:
            if hashlib.sha256(p.read_bytes()).hexdigest() != digest:
                return "inputs"
        except OSError:
            return "inputs"
    return None


def stale_points(cohsim, points, points_dir):
    """The complete points that must run again, and one line saying why (None when none)."""
    build_id = current_build_id(cohsim)
    stale, why = [], {}
    for p in points:
        doc = cr.load_result(points_dir / (p["id"] + ".json"))
        reason = staleness(doc, build_id) if doc is not None else None
        if reason:
            stale.append(p)
            why.setdefault(reason, []).append(doc.get("build_id"))
    if not stale:
        return [], None
    parts = []
    if "build" in why:
        made = sorted({str(b) for b in why["build"]})
        parts.append("%d made by another build (%s; this binary is %s)"
                     % (len(why["build"]), ", ".join(made), build_id or "of unknown build"))
    if "inputs" in why:
        parts.append("%d whose input files changed since" % len(why["inputs"]))
    return stale, "recomputing %d of %d points: %s\n" % (len(stale), len(points), ", ".join(parts))


def params_command(cohsim, scenario, variant, sets, json_path, override_variant=False):
    cmd = [cohsim, "params", scenario, "--json", json_path]
    if variant:
        cmd += ["--variant", variant]
    if override_variant:
        cmd.append("--override-variant")
    for k, v in sets:
        cmd += ["--set", "%s=%s" % (k, v)]
    return cmd


def params_refusal(cmd):
    """cohsim's message when `cohsim params` refuses `cmd`'s settings, else None."""
    done = subprocess.run(cmd, cwd=str(cr.REPO_ROOT), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True)
    if done.returncode == 0:
        return None
    return ((done.stderr.strip() or done.stdout.strip() or "exit %d" % done.returncode)
            .replace("cohsim: error: ", ""))


MAX_BAD_VALUES_SHOWN = 10


def check_points(cohsim, scenario, params, variants, fixed, todo, override_variant=False, jobs=1):
    """Before the first point, as `cohsim params` judges them (the checks `cohsim run` makes
    before simulating): every variant exists and every --set/--param name is one the scenario
    reads (and no variant run sets it), with each swept parameter at its first value; then
    every value of every point of `todo` (each distinct variant x swept values once, so a
    value out of bounds or two values that do not go together, e.g. cpu_a = cpu_b).
    Raises UsageError with cohsim's own message (the parameter, the value, what it expects;
    did-you-mean, valid keys) so that nothing runs and nothing is written."""
    with tempfile.TemporaryDirectory(prefix="cohsim-sweep-check-") as tmp:
        first = {n: vals[0] for n, vals in params}
        for variant in variants:  # names: one message, not one per point
            message = params_refusal(params_command(
                cohsim, scenario, variant, list(fixed) + list(first.items()),
                os.path.join(tmp, "params.json"), override_variant))
            if message:
                raise UsageError("%s%s (no point ran)" % (
                    "variant %s: " % variant if variant else "", message))
        combos, seen = [], {(v, tuple(first.items())) for v in variants}
        for p in todo:
            key = (p["variant"], tuple(p["params"].items()))
            if key not in seen:
                seen.add(key)
                combos.append(key)

        def check(i, combo):
            variant, values = combo
            return params_refusal(params_command(
                cohsim, scenario, variant, list(fixed) + list(values),
                os.path.join(tmp, "params-%d.json" % i), override_variant))
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            refusals = list(pool.map(check, range(len(combos)), combos))
    bad = {}  # cohsim's message -> the points it refuses (a bad value refuses every variant)
    for (variant, values), message in zip(combos, refusals):
        if message:
            bad.setdefault(message, []).append(", ".join(
                (["variant %s" % variant] if variant else []) + ["%s=%s" % kv for kv in values]))
    if bad:
        lines = ["%s (%s%s)" % (m, where[0], ", and %d more" % (len(where) - 1)
                                if len(where) > 1 else "")
                 for m, where in list(bad.items())[:MAX_BAD_VALUES_SHOWN]]
        if len(bad) > MAX_BAD_VALUES_SHOWN:
            lines.append("... and %d more" % (len(bad) - MAX_BAD_VALUES_SHOWN))
        raise UsageError("cohsim refuses %d of the sweep's %d settings (variant x swept values; "
                         "no point ran):\n  %s" % (sum(len(w) for w in bad.values()),
                                                   len(seen), "\n  ".join(lines)))


def run_jobs(args, jobs, progress):
    """Runs `jobs` [(id, argv, result JSON path, stderr file)] -j at a time, each failure shown (the
    first DETAILED_FAILURES in full); returns ({id: failure text}, interrupted)."""
    runner = Runner(args.timeout)
    failures = {}
    interrupted = False
    pool = ThreadPoolExecutor(max_workers=args.jobs)
    try:
        futs = {pool.submit(runner.run, cmd, jp, err): pid for pid, cmd, jp, err in jobs}
        for fut in as_completed(futs):
            res = fut.result()
            if res is None:
                continue
            ok, seconds, text = res
            if not ok:
                failures[futs[fut]] = text
                if not args.quiet:
                    progress.message(text if len(failures) <= DETAILED_FAILURES
                                     else text.split("\n")[0] + " (see its .err file)")
            progress.point_done(futs[fut], ok, seconds)
    except KeyboardInterrupt:
        interrupted = True
        runner.kill_all()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        progress.close()
    return failures, interrupted


def run_sweep(args, scenario, params, variants, seeds, fixed, out_dir):
    cohsim = resolve_cohsim(args.cohsim)
    points = expand_grid(params, variants, seeds)
    desc = sweep_description(scenario, params, variants, seeds, fixed, points, cohsim)
    check_existing_sweep(out_dir, desc)
    points_dir = out_dir / "points"

    todo = [p for p in points if not cr.is_complete(points_dir / (p["id"] + ".json"))]
    stale, stale_line = [], None
    runnable = os.path.isfile(cohsim) and os.access(cohsim, os.X_OK)
    if len(todo) < len(points) and runnable:
        ran = {p["id"] for p in todo}
        stale, stale_line = stale_points(cohsim, [p for p in points if p["id"] not in ran], points_dir)
        ran |= {p["id"] for p in stale}
        todo = [p for p in points if p["id"] in ran]
    if stale_line and not args.quiet:
        sys.stderr.write(stale_line)

    if args.emit_joblist:
        if todo and runnable:
            check_points(cohsim, scenario, params, variants, fixed, todo, args.override_variant,
                         args.jobs)
        desc["cohsim"] = repo_relative(cohsim)
        cr.atomic_write_text(out_dir / "sweep.json", json.dumps(desc, indent=2) + "\n")
        rel_points = repo_relative(points_dir)
        lines = []
        for p in todo:
            cmd = point_command(repo_relative(cohsim), scenario, p, fixed,
                                "%s/%s.json" % (rel_points, p["id"]), args.override_variant)
            lines.append("cd %s && mkdir -p %s && %s" % (
                shlex.quote(str(cr.REPO_ROOT)), shlex.quote(rel_points), shlex.join(cmd)))
        cr.atomic_write_text(args.emit_joblist, "".join(l + "\n" for l in lines))
        if not args.quiet:
            sys.stderr.write("wrote %d job(s) to %s (%d of %d points already complete); run "
                             "them with GNU parallel, gather the points, then --collect %s\n"
                             % (len(lines), args.emit_joblist, len(points) - len(todo),
                                len(points), out_dir))
        return 0

    if not runnable:
        raise UsageError("cohsim binary not found or not executable: %s (build it with "
                         "`cmake --preset release && cmake --build --preset release`, or pass "
                         "--cohsim PATH / set COHSIM)" % cohsim)
    if todo:
        check_points(cohsim, scenario, params, variants, fixed, todo, args.override_variant,
                     args.jobs)
    points_dir.mkdir(parents=True, exist_ok=True)
    cr.atomic_write_text(out_dir / "sweep.json", json.dumps(desc, indent=2) + "\n")
    # results.csv exists only when every point of the last sweep here holds a result: one
    # from an earlier sweep (maybe of another grid) goes now, a new one is written at the end
    results_csv = out_dir / "results.csv"
    try:
        os.unlink(results_csv)
    except FileNotFoundError:
        pass
    for p in todo:  # stale partial output must not be mistaken for a result
        try:
            os.unlink(points_dir / (p["id"] + ".json"))
        except OSError:
            pass

    progress = Progress(len(points), len(points) - len(todo), args.quiet, args.jobs)
    if not args.quiet and len(todo) < len(points):
        sys.stderr.write("resuming: %d of %d points already complete\n"
                         % (len(points) - len(todo), len(points)))
    progress.tick()
    jobs = []
    for p in todo:
        jp = str(points_dir / (p["id"] + ".json"))
        jobs.append((p["id"], point_command(cohsim, scenario, p, fixed, jp, args.override_variant), jp,
                     str(points_dir / (p["id"] + ".err"))))
    failures, interrupted = run_jobs(args, jobs, progress)

    if interrupted:
        sys.stderr.write("interrupted; no results.csv written (the complete points are kept in "
                         "%s); run the same command again to resume\n" % points_dir)
        return 130
    if failures:
        if args.quiet:
            for text in list(failures.values())[:DETAILED_FAILURES]:
                sys.stderr.write(text + "\n")
        ids = sorted(failures)
        more = len(ids) - 10
        sys.stderr.write("%d of %d point(s) failed: %s%s; stderr of each in %s/<id>.err\n" % (
            len(failures), len(points), ", ".join(ids[:10]),
            " and %d more" % more if more > 0 else "", points_dir))
        sys.stderr.write("no results.csv written (only a sweep whose every point ran writes one): "
                         "run the same command again to run the failed points only, or "
                         "`scripts/sweep.py --collect %s` for a table of the complete points, "
                         "the others marked missing\n" % out_dir)
        return 1
    rows = result_rows(points, scenario, points_dir, failures)
    cr.write_results_csv(results_csv, rows, [n for n, _ in params])
    if not args.quiet:
        sys.stderr.write("wrote %s\n" % results_csv)
    return 0


def run_joblist(args, joblist, out_dir):
    """--joblist FILE, here: its lines whose result is not complete, -j at a time; a failed
    line's stderr in DIR/<id>.err. Exit 1 if any failed."""
    entries = sweep_slurm.parse_joblist(joblist)
    todo = [e for e in entries if not cr.is_complete(e[1])]
    progress = Progress(len(entries), len(entries) - len(todo), args.quiet, args.jobs)
    progress.tick()
    if todo:
        out_dir.mkdir(parents=True, exist_ok=True)
    failures, interrupted = run_jobs(args, [(pid, ["bash", "-c", line], str(result), str(out_dir / (pid + ".err")))
                                            for pid, result, _, line in todo], progress)
    if interrupted:
        sys.stderr.write("interrupted; run the same command again to run the rest\n")
        return 130
    if not args.quiet:
        sys.stderr.write("%d of %d line(s) of %s ran here, %d were complete%s; collect with the "
                         "cohsim command that wrote it (its --points)\n"
                         % (len(todo) - len(failures), len(entries), joblist,
                            len(entries) - len(todo),
                            ", %d failed (stderr in %s/<id>.err)" % (len(failures), out_dir)
                            if failures else ""))
    return 1 if failures else 0


# ------------------------------------------------------------ collect ---

def _sort_key(v):
    n = cr.parse_number(v)
    return (0, n, "") if n is not None else (1, 0.0, str(v))


def collect(out_dir, quiet):
    """Build DIR/results.csv from DIR/points/**/*.json without running anything."""
    points_dir = out_dir / "points"
    if not points_dir.is_dir():
        raise UsageError("%s does not exist: gather the result JSON files there first" % points_dir)
    desc = None
    if (out_dir / "sweep.json").exists():
        try:
            desc = json.loads((out_dir / "sweep.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            desc = None
    docs, bad = {}, []
    for f in sorted(points_dir.rglob("*.json")):
        doc = cr.load_result(f)
        if doc is None:
            bad.append(f)
        elif f.stem in docs:
            sys.stderr.write("warning: duplicate result %s ignored\n" % f)
        else:
            docs[f.stem] = doc
    for f in bad:
        sys.stderr.write("warning: %s is incomplete or not JSON; ignored\n" % f)

    if desc and desc.get("points"):
        names = list(desc.get("param_order") or desc.get("params") or [])
        grid = desc["points"]
    else:  # no grid known: the swept params are those that vary across results
        varying = {}
        for d in docs.values():
            for k, v in (d.get("params") or {}).items():
                varying.setdefault(k, set()).add(json.dumps(v, sort_keys=True))
        names = sorted(k for k, s in varying.items() if len(s) > 1 and k != "seed")
        grid = []

    def doc_params(d):
        dp = d.get("params") or {}
        return {n: cr.value_str(dp[n]) for n in names if n in dp}

    rows, used, missing = [], set(), []
    for p in grid:
        d = docs.get(p["id"])
        if d is None:  # not under its id: match by content
            for stem, cand in docs.items():
                if stem in used:
                    continue
                if (str(cand.get("seed")) == str(p["seed"])
                        and (not p["variant"] or cand.get("variant") == p["variant"])
                        and doc_params(cand) == {k: cr.value_str(v) for k, v in p["params"].items()}):
                    d = cand
                    used.add(stem)
                    break
        else:
            used.add(p["id"])
        row = {"scenario": desc.get("scenario", ""), "variant": p["variant"],
               "seed": p["seed"], "params": p["params"], "metrics": {}, "status": "missing"}
        if d is not None:
            row.update(variant=d.get("variant") or p["variant"], status="ok",
                       metrics=cr.numeric_metrics(d))
        else:
            missing.append(p["id"])
        rows.append(row)
    extra = []
    for stem, d in docs.items():
        if stem in used:
            continue
        extra.append({"scenario": d.get("scenario", ""), "variant": d.get("variant", ""),
                      "seed": d.get("seed", ""), "params": doc_params(d),
                      "metrics": cr.numeric_metrics(d), "status": "ok"})
    extra.sort(key=lambda r: (r["scenario"], r["variant"],
                              [_sort_key(r["params"].get(n, "")) for n in names],
                              _sort_key(r["seed"])))
    if grid and extra:
        sys.stderr.write("note: %d result(s) outside the grid of sweep.json included\n" % len(extra))
    rows += extra
    cr.write_results_csv(out_dir / "results.csv", rows, names)
    if not desc:
        scen = sorted({r["scenario"] for r in rows})
        cr.atomic_write_text(out_dir / "sweep.json", json.dumps({
            "tool": "scripts/sweep.py --collect", "inferred": True,
            "scenario": scen[0] if len(scen) == 1 else scen,
            "params": {n: sorted({r["params"].get(n, "") for r in rows}, key=_sort_key)
                       for n in names},
            "variants": sorted({r["variant"] for r in rows}),
            "seeds": sorted({r["seed"] for r in rows}, key=_sort_key),
            "set": {}}, indent=2) + "\n")
    if missing:
        sys.stderr.write("%d of %d grid point(s) have no complete result: %s\n"
                         % (len(missing), len(grid), ", ".join(missing)))
    if not quiet:
        sys.stderr.write("collected %d result(s) into %s\n"
                         % (sum(r["status"] == "ok" for r in rows), out_dir / "results.csv"))
    return 1 if (missing or bad) else 0


# ------------------------------------------------------------ slurm ---

def submit_slurm(args, scenario, params, variants, seeds, fixed, out_dir):
    """--backend slurm: the job lines of --emit-joblist, as one Slurm job array."""
    if args.emit_joblist:
        raise UsageError("--emit-joblist and --backend slurm are two ways to run a sweep elsewhere: give one")
    if args.chunk < 1:
        raise UsageError("--chunk must be at least 1")

    def run_joblist(path):
        quiet, args.emit_joblist, args.quiet = args.quiet, path, True
        try:
            return run_sweep(args, scenario, params, variants, seeds, fixed, out_dir)
        finally:
            args.emit_joblist, args.quiet = None, quiet
    return sweep_slurm.submit(args, run_joblist, expand_grid(params, variants, seeds), fixed, out_dir)


# ------------------------------------------------------------ main ---

def build_parser():
    ap = argparse.ArgumentParser(
        description="Run a cohsim scenario over a grid of params x variants x seeds.",
        epilog="Multi-machine: --emit-joblist FILE, run it with GNU parallel "
               "(repo at the same path on every host), gather DIR/points, then --collect DIR.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", nargs="?", help="scenario file, e.g. configs/scenarios/x.json")
    ap.add_argument("--param", action="append", metavar="NAME=V1,V2,...",
                    help="swept parameter (repeatable); passed as --set NAME=V")
    ap.add_argument("--variant", metavar="A,B,...",
                    help="variants to run (default: the scenario's default)")
    ap.add_argument("--seeds", type=int, metavar="N", help="seeds 1..N (default 1)")
    ap.add_argument("--seed-list", metavar="S1,S2,...", help="explicit seeds")
    ap.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                    help="fixed setting for every point (repeatable)")
    ap.add_argument("--override-variant", action="store_true",
                    help="allow a --set/--param of a key a --variant sets (passed to cohsim)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                    help="parallel points (default: %(default)s)")
    ap.add_argument("--out", metavar="DIR",
                    help="output directory (default: sweep-out/<scenario stem> under the current directory)")
    ap.add_argument("--cohsim", metavar="PATH",
                    help="simulator binary (default: $COHSIM or build/release/cohsim)")
    ap.add_argument("--timeout", type=float, metavar="SECONDS", help="per-point time limit")
    ap.add_argument("--emit-joblist", metavar="FILE",
                    help="write a GNU parallel job list instead of running")
    ap.add_argument("--joblist", metavar="FILE",
                    help="run a job list cohsim wrote (sensitivity|validate --points P --emit-joblist "
                         "FILE): its lines whose --json result is not complete, here (-j) or with "
                         "--backend slurm; then the cohsim command with --points P collects")
    ap.add_argument("--collect", metavar="DIR",
                    help="build DIR/results.csv from DIR/points/**/*.json; runs nothing")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    slurm = ap.add_argument_group("Slurm (scripts/sweep_slurm.py; repo and --out on a shared filesystem)")
    slurm.add_argument("--backend", choices=("local", "slurm"), default="local",
                       help="local: run here (default); slurm: submit the points that are "
                            "not complete as one sbatch job array and return")
    slurm.add_argument("--chunk", type=int, default=1, metavar="N",
                       help="points per array task (default 1)")
    slurm.add_argument("--partition", metavar="P", help="sbatch --partition")
    slurm.add_argument("--time", metavar="T", help="sbatch --time per task; " + sweep_slurm.ESTIMATE_HELP)
    slurm.add_argument("--mem", metavar="M", help="sbatch --mem per task (see --time)")
    slurm.add_argument("--status", metavar="DIR",
                       help="done, running, pending and failed points of DIR's Slurm arrays, "
                            "with an ETA and each failed task's log; exit 0 when all are done")
    return ap


def main(argv=None):
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        if args.status:
            if args.scenario or args.collect:
                raise UsageError("--status DIR takes no scenario or --collect")
            return sweep_slurm.status(Path(args.status).resolve(), fmt_duration)
        if args.joblist:
            if args.scenario or args.param or args.emit_joblist or args.collect:
                raise UsageError("--joblist FILE takes no scenario, --param, --emit-joblist or "
                                 "--collect (the cohsim command that wrote it collects)")
            if args.jobs < 1:
                raise UsageError("-j must be at least 1")
            joblist = Path(args.joblist).resolve()
            out_dir = Path(args.out).resolve() if args.out else joblist.with_suffix(".sweep")
            if args.backend == "slurm":
                if args.chunk < 1:
                    raise UsageError("--chunk must be at least 1")
                return sweep_slurm.submit_joblist(args, joblist, out_dir)
            if args.chunk != 1 or args.partition or args.time or args.mem:
                raise UsageError("--chunk, --partition, --time and --mem need --backend slurm")
            return run_joblist(args, joblist, out_dir)
        if args.collect:
            if args.scenario or args.param or args.emit_joblist:
                raise UsageError("--collect DIR takes no scenario, --param or --emit-joblist")
            return collect(Path(args.collect).resolve(), args.quiet)
        if not args.scenario:
            raise UsageError("a SCENARIO is required (or --collect DIR)")
        if args.jobs < 1:
            raise UsageError("-j must be at least 1")
        if args.timeout is not None and args.timeout <= 0:
            raise UsageError("--timeout must be positive")
        params = parse_params(args.param)
        variants = parse_variants(args.variant)
        seeds = parse_seeds(args.seeds, args.seed_list)
        fixed = [parse_assignment(s, "--set") for s in args.set]
        fixed_names = [k for k, _ in fixed]
        if len(set(fixed_names)) != len(fixed_names):
            raise UsageError("the same --set key given twice")
        both = set(fixed_names) & {n for n, _ in params}
        if both:
            raise UsageError("%s is both swept (--param) and fixed (--set)" % ", ".join(sorted(both)))
        out_dir = Path(args.out).resolve() if args.out else (
            Path.cwd() / "sweep-out" / Path(args.scenario).stem)
        if args.backend == "slurm":
            return submit_slurm(args, resolve_scenario(args.scenario), params, variants, seeds,
                                fixed, out_dir)
        if args.chunk != 1 or args.partition or args.time or args.mem:
            raise UsageError("--chunk, --partition, --time and --mem need --backend slurm")
        return run_sweep(args, resolve_scenario(args.scenario), params, variants, seeds,
                         fixed, out_dir)
    except (UsageError, sweep_slurm.SlurmError) as e:
        sys.stderr.write("%s: error: %s\n" % (ap.prog, e))
        return 2


if __name__ == "__main__":
    sys.exit(main())
