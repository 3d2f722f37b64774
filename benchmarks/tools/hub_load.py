"""Load on a room's hub: N simulated learners on loopback, each logging in and running one checked exercise.

    make hub-setup && python -m benchmarks.tools.hub_load                 # N = 8, 16, 24; ~15 min on 2 cores
    python -m benchmarks.tools.hub_load --sizes 8 --stagger 2

For each N, a fresh `make hub` (test-only spawner: one machine, no isolation) with N learners and an instructor.
Learner i logs in i*stagger seconds after the first (first use: sets a password), waits for their server,
then runs one check - start/warmup with a correct alternative fix, a real training run, not a cached one -
in the environment their server gives its kernels, so its record reaches the room view with their own token;
then stops. Meanwhile each learner samples the hub's response time every few seconds and the instructor
refreshes the room view every 5 s. Reported per N: the hub's p50/p95 response time, the view's refresh time,
memory per learner (their Jupyter server plus the check's process tree, peak resident) and check time per
core. The checks compete for the cores: on 2 cores a check's wall time is its CPU time times the queue,
and the report says so. Results: benchmarks/results/hub_load.json (docs/instructor.md sizes a room from it).
"""

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import RESULTS, table, write_result
from tests.hub.hubserver import RoomHub, hub_environment_missing, server_environment, wait_for_server
from trainlab import checks
from trainlab.processes import oom, runner, tree
from trainlab.checks import measure
from trainlab.checks.__main__ import warm
from trainlab.hub import limits
from trainlab.paths import REPO

FIX = "step, then clear the gradients"  # start/warmup's correct alternative: a real check run, never cached
CHECK = """
import json, sys, time
from trainlab import checks
start = time.perf_counter()
verdict = checks.get("start/warmup").check(sys.stdin.read())
print("RESULT", json.dumps({"verdict": verdict.kind, "wall_s": time.perf_counter() - start}))
"""
TICK = os.sysconf("SC_CLK_TCK")


class TreeUsage:
    """CPU seconds and peak resident memory of a process tree, sampled from /proc while it runs: the check's
    training runs in children forked from a warm-start server, which getrusage of the check does not see."""

    def __init__(self, pid):
        self.pid, self.cpu_ticks, self.peak_mb = pid, {}, 0.0

    def sample(self):
        total_mb = 0.0
        for pid in [self.pid, *tree.descendants(self.pid)]:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            self.cpu_ticks[pid] = max(self.cpu_ticks.get(pid, 0), int(fields[11]) + int(fields[12]))  # utime + stime
            total_mb += rss_mb(pid)
        self.peak_mb = max(self.peak_mb, total_mb)

    @property
    def cpu_s(self):
        return sum(self.cpu_ticks.values()) / TICK


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))] if values else None


def rss_mb(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Learner(threading.Thread):
    def __init__(self, hub, name, delay, source, stop):
        super().__init__(daemon=True)
        self.hub, self.name, self.delay, self.source, self.stop = hub, name, delay, source, stop
        self.hub_ms, self.result, self.error, self.server_mb, self.check = [], None, None, None, None

    def timed(self, session, path):
        start = time.perf_counter()
        session.get(f"{self.hub.url}{path}", timeout=60)
        self.hub_ms.append(1000 * (time.perf_counter() - start))

    def run(self):
        try:
            time.sleep(self.delay)
            start = time.perf_counter()
            session, _ = self.hub.login(self.name, f"{self.name}-password")
            self.hub_ms.append(1000 * (time.perf_counter() - start))  # the login POST and its redirects
            wait_for_server(session, self.hub, self.name, timeout=300)
            env = server_environment(self.hub, self.name)
            env["TRAINLAB_PROGRESS_DIR"] = str(self.hub.folder / f"{self.name}-progress")
            sampler = threading.Thread(target=self.sample, args=(session,), daemon=True)
            sampler.start()
            if self.stop.is_set():  # the room was stopped while this learner logged in: start nothing
                return
            self.check = check = subprocess.Popen(
                [sys.executable, "-c", CHECK],
                env=env,
                cwd=REPO,
                text=True,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            self.server_mb = max(rss_mb(pid) for pid in self.server_pids())
            usage, pipes = TreeUsage(check.pid), threading.Thread(target=self.talk, args=(check,), daemon=True)
            pipes.start()
            while pipes.is_alive():
                usage.sample()
                pipes.join(2)  # sampled every 2 s: a child that ends in between loses at most that much
            line = next((x for x in self.out.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                raise RuntimeError(f"{self.name}'s check printed no result:\n{self.err[-1500:]}")
            self.result = {**json.loads(line[len("RESULT ") :]), "cpu_s": usage.cpu_s, "peak_mb": usage.peak_mb}
        except Exception as exc:  # reported, not raised: one learner's failure is part of the measurement
            self.error = f"{type(exc).__name__}: {exc}"

    def talk(self, check):
        self.out, self.err = check.communicate(self.source, timeout=1800)

    def sample(self, session):
        while self.result is None and self.error is None and not self.stop.is_set():
            self.timed(session, "/hub/home")
            time.sleep(3)

    def server_pids(self):
        pids = [
            pid
            for pid in tree.descendants(self.hub.proc.pid)
            if f"JUPYTERHUB_USER={self.name}\0".encode() in _environ(pid)
        ]
        return [pid for pid in pids if b"jupyterhub.singleuser" in _cmdline(pid)] or [0]


def _environ(pid):
    try:
        return Path(f"/proc/{pid}/environ").read_bytes() + b"\0"
    except OSError:
        return b""


def _cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def instructor_view(hub, stop, samples):
    session, _ = hub.login("ines", "ines-password")
    session.get(f"{hub.url}/services/room/", timeout=60)  # the view's OAuth login
    while not stop.is_set():
        start = time.perf_counter()
        response = session.get(f"{hub.url}/services/room/grid.json", timeout=60)
        if response.status_code == 200:
            samples.append({"ms": 1000 * (time.perf_counter() - start), "records": response.json()["records"]})
        stop.wait(5)


def run_room(n, stagger, source, folder):
    names = [f"learner{i:02d}" for i in range(n)]
    stop, view = threading.Event(), []
    with RoomHub(folder, learners=names, start_timeout=120) as hub:
        watcher = threading.Thread(target=instructor_view, args=(hub, stop, view), daemon=True)
        watcher.start()
        learners = [Learner(hub, name, i * stagger, source, stop) for i, name in enumerate(names)]
        start, stopped = time.perf_counter(), None
        try:
            for learner in learners:
                learner.start()
            for learner in learners:
                learner.join(timeout=3600)
            time.sleep(6)  # one more refresh of the view after the last record
        except (KeyboardInterrupt, SystemExit) as exc:  # the room so far is reported, marked as stopped
            stopped = str(exc) or type(exc).__name__
        finally:  # interrupted (Ctrl+C, SIGTERM) or not: no check left running; RoomHub stops the hub's processes
            room_s = time.perf_counter() - start
            stop.set()
            for learner in learners:
                if learner.check is not None:
                    runner.kill_tree(learner.check, grace=2)
        watcher.join(timeout=60)
    done = [x.result for x in learners if x.result]
    hub_ms = [ms for x in learners for ms in x.hub_ms]
    cpu = [r["cpu_s"] for r in done]
    cores = os.cpu_count()
    return {
        "learners": n,
        "stagger_s": stagger,
        "checks_done": len(done),
        "verdicts": {v: sum(r["verdict"] == v for r in done) for v in {r["verdict"] for r in done}},
        "errors": [f"{x.name}: {x.error}" for x in learners if x.error],
        "room_wall_s": room_s,
        "stopped": stopped
        and f"stopped after {room_s / 60:.0f} min with {len(learners) - len(done)} checks unfinished ({stopped})",
        "hub_ms": {"p50": percentile(hub_ms, 50), "p95": percentile(hub_ms, 95), "samples": len(hub_ms)},
        "view_refresh_ms": {
            "p50": percentile([v["ms"] for v in view], 50),
            "p95": percentile([v["ms"] for v in view], 95),
            "samples": len(view),
            "records_seen_last": view[-1]["records"] if view else 0,
        },
        "server_mb_median": statistics.median([x.server_mb for x in learners if x.server_mb]) if done else None,
        "check_peak_mb_median": statistics.median([r["peak_mb"] for r in done]) if done else None,
        "check_cpu_s_median": statistics.median(cpu) if cpu else None,
        "check_wall_s_median": statistics.median([r["wall_s"] for r in done]) if done else None,
        "check_wall_s_max": max((r["wall_s"] for r in done), default=None),
        "queue_factor": (statistics.median([r["wall_s"] for r in done]) / statistics.median(cpu)) if cpu else None,
        "checks_per_core_minute": (60 / statistics.median(cpu)) if cpu else None,
        "cores": cores,
    }


def reference_cached():
    """Whether start/warmup's reference run (its solution's) is in build/measure-cache: then each check runs
    the learner's fix alone; else the first checks compute the reference as well."""
    exercise = checks.get("start/warmup")
    return measure._cached(exercise.reference_variant(), exercise.device, exercise.max_train) is not None


DOC = REPO / "docs" / "instructor.md"
BEGIN, END = (
    "<!-- hub-load:begin (generated by `python -m benchmarks.tools.hub_load --render-doc` from "
    "benchmarks/results/hub_load.json; do not edit) -->",
    "<!-- hub-load:end -->",
)


def sizing_section(result):
    """docs/instructor.md's sizing table and rules, from a hub_load.json."""
    m = result["machine"]
    lines = [
        "| learners | checks done (verdicts) | hub response ms p50 / p95 | room view refresh ms p50 / p95 "
        "| MB per learner (server + check) | check CPU s | check wall s median (max) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rooms"]:
        verdicts = ", ".join(f"{n} {v}" for v, n in sorted(r["verdicts"].items()))
        lines.append(
            f"| {r['learners']} | {r['checks_done']}/{r['learners']} ({verdicts or 'none'}) | "
            f"{_f(r['hub_ms']['p50'])} / {_f(r['hub_ms']['p95'])} | {_f(r['view_refresh_ms']['p50'])} / "
            f"{_f(r['view_refresh_ms']['p95'])} | "
            f"{_f(r['server_mb_median'])} + {_f(r['check_peak_mb_median'])} | "
            f"{_f(r['check_cpu_s_median'])} | {_f(r['check_wall_s_median'])} ({_f(r['check_wall_s_max'])}) |"
        )
    failed = [
        f"at N = {r['learners']}, {len(r['errors'])} learner(s) got no verdict (first: "
        f"{r['errors'][0].strip().splitlines()[-1]})"
        for r in result["rooms"]
        if r["errors"]
    ]
    failed += [
        f"at N = {r['learners']}, the out-of-memory killer stopped {r['oom_kills']} of the room's processes "
        "(its memory cgroup's count): its checks died as errors"
        for r in result["rooms"]
        if r.get("oom_kills")
    ]
    failed += [f"N = {r['learners']} was {r['stopped']}" for r in result["rooms"] if r.get("stopped")]
    lines += ["", "What went wrong: " + "; ".join(failed) + "."] if failed else []
    # the rules come from the largest room whose checks all came back (none lost to errors or the OOM killer)
    clean = [r for r in result["rooms"] if r["checks_done"] and not r["errors"] and not r.get("oom_kills")]
    last = (clean or [r for r in result["rooms"] if r["checks_done"]] or result["rooms"])[-1]
    dates = sorted({r.get("date", result["date"]) for r in result["rooms"]})
    per_learner = (last["server_mb_median"] + last["check_peak_mb_median"]) / 1024
    return "\n".join(
        [
            f"Measured by `python -m benchmarks.tools.hub_load` on {' and '.join(dates)}: {m['cores']} cores "
            f"({m['cpu']}), the "
            f"test-only spawner, learners logging in {last['stagger_s']:.0f} s apart, each running one check "
            f"({m['check']}) and stopping{said_cache(result['rooms'])}. {said_conditions(result['rooms'])}".rstrip(),
            "",
            *lines,
            "",
            hub_line(result["rooms"]),
            f"- **The checks queue**: each needs about {last['check_cpu_s_median']:.0f} CPU seconds; "
            f"on {m['cores']} cores, "
            f"with N learners checking at the same moment, a check takes about N x "
            f"{last['check_cpu_s_median']:.0f} / {m['cores']} seconds (measured above: "
            f"{last['check_wall_s_median']:.0f} s median at N = {last['learners']}). "
            f"To keep a check near its own {last['check_cpu_s_median']:.0f} s, give the room about one core per "
            "learner "
            "checking at the same moment - in a room working through the same exercise, a third to a half of it. "
            "A check whose run outgrows its time budget is reported *timed out* (see the verdicts above): on an "
            "overloaded machine learners see that instead of their verdict.",
            f"- **Memory**: {per_learner:.1f} GB per learner working through 00-01 (their Jupyter server and a check's "
            f"process tree, measured above; the kernel is of the same size as the check's parent), up to "
            f"{limits.per_learner().memory_limit_mb / 1024:.1f} GB for one running notebook 02's four ranks (the "
            f"per-learner limit, `trainlab/hub/limits.py`). A room of 30: about {30 * per_learner:.0f} GB, "
            f"{30 * limits.per_learner().memory_limit_mb / 1024:.0f} GB if all of it runs 02 at once, and 10-15 cores.",
        ]
    )


def _f(value):
    return "-" if value is None else f"{value:.0f}"


def said_cache(rooms):
    cached = {r.get("reference_cached") for r in rooms}
    if cached == {True}:
        return (
            ", the solution's reference run cached beforehand as `python -m trainlab.checks --warm` leaves it "
            "(each check ran the learner's fix alone)"
        )
    if cached == {False}:
        return ", the solution's reference run not cached (the first checks computed it too)"
    return ""  # older records did not say


def said_conditions(rooms):
    """What else ran while each room was measured: once if the same for all, else per room."""
    said = {r.get("conditions", "") for r in rooms}
    if len(said) == 1:
        return said.pop()
    return " ".join(f"N = {r['learners']} ({r['date']}): {r['conditions']}" for r in rooms if r.get("conditions"))


def hub_line(rooms):
    rooms = [r for r in rooms if r["hub_ms"]["p95"] is not None and r["view_refresh_ms"]["p95"] is not None]
    if not rooms:
        return "- The hub's response time was not measured: no room ran long enough to sample it."
    worst = max(rooms, key=lambda r: r["hub_ms"]["p95"])
    verdict = "The hub is not the limit" if worst["hub_ms"]["p95"] < 1000 else "The hub slows down"
    return (
        f"- **{verdict}**: its p95 response time was at most {worst['hub_ms']['p95']:.0f} ms (at N = "
        f"{worst['learners']}), the room view's refresh at most "
        f"{max(r['view_refresh_ms']['p95'] for r in rooms):.0f} ms, with the checks running."
    )


def render_doc(result=None):
    result = result or json.loads((RESULTS / "hub_load.json").read_text())
    text = DOC.read_text()
    head, rest = text.split("<!-- hub-load:begin", 1)
    tail = rest.split(END, 1)[1]
    DOC.write_text(f"{head}{BEGIN}\n\n{sizing_section(result)}\n\n{END}{tail}")


NOTE = (
    "{cores} cores: the checks queue - a check needs its CPU seconds, and with more checks running than cores "
    "each one's wall time stretches by about the number running per core (the queue column). A room sized for "
    "checks without queueing needs about one core per learner checking at the same moment."
)


def save(rooms, conditions=""):
    """Write the record: this run's rooms, and the sizes an earlier run measured that this one did not
    (`--sizes 24` after 8 and 16 adds a row; each room keeps the date it was measured)."""
    cores, today = os.cpu_count(), time.strftime("%Y-%m-%d")
    rooms = [{**r, "date": r.get("date", today), "conditions": r.get("conditions", conditions)} for r in rooms]
    try:
        earlier = json.loads((RESULTS / "hub_load.json").read_text())
        if earlier["machine"]["cores"] == cores:  # figures from another machine are not kept beside these
            rooms += [
                {
                    **r,
                    "date": r.get("date", earlier["date"]),
                    "conditions": r.get("conditions", earlier["machine"].get("conditions", "")),
                }
                for r in earlier["rooms"]
                if r["learners"] not in {x["learners"] for x in rooms}
            ]
    except (FileNotFoundError, KeyError, json.JSONDecodeError):
        pass
    rooms.sort(key=lambda r: r["learners"])
    write_result(
        "hub_load",
        {
            "date": today,
            "machine": {
                "cpu": platform.processor() or platform.machine(),
                "cores": cores,
                "python": platform.python_version(),
                "spawner": "test (no isolation, one Unix user)",
                "check": f"start/warmup, correct alternative {FIX!r}",
            },
            "note": NOTE.format(cores=cores),
            "rooms": rooms,
        },
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 16, 24])
    parser.add_argument("--stagger", type=float, default=2.0, help="seconds between two learners' logins")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="leave the solution's reference run uncached: the first checks compute it (a room without --warm)",
    )
    parser.add_argument("--render-doc", action="store_true", help="only rewrite docs/instructor.md's sizing section")
    parser.add_argument("--conditions", default="", help="what else ran on the machine, said beside the figures")
    args = parser.parse_args(argv)
    if args.render_doc:
        return render_doc()
    missing = hub_environment_missing()
    if missing:
        sys.exit(f"hub_load: {missing}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("hub_load: stopped (SIGTERM); what was measured is saved"))
    source = next(e for e in checks.get("start/warmup").corpus if e.name == FIX).edit.apply("start/warmup")
    if not args.cold:  # as an instructor's `python -m trainlab.checks --warm` leaves it before the room
        warm(["start/warmup"])
    rooms = []
    for n in args.sizes:
        cached, killed = reference_cached(), oom.kills()  # this cgroup's count, else the machine's
        with tempfile.TemporaryDirectory(prefix=f"hub-load-{n}-") as folder:
            rooms.append({**run_room(n, args.stagger, source, Path(folder)), "reference_cached": cached})
        after = oom.kills()
        rooms[-1]["oom_kills"] = None if None in (killed, after) else after - killed
        r = rooms[-1]
        print(
            f"N={n}: {r['checks_done']}/{n} checks, "
            f"hub p50 {_f(r['hub_ms']['p50'])} ms p95 {_f(r['hub_ms']['p95'])} ms, "
            f"view {_f(r['view_refresh_ms']['p50'])} ms, check {_f(r['check_cpu_s_median'])} CPU s "
            f"in {_f(r['check_wall_s_median'])} s wall",
            flush=True,
        )
        save(rooms, args.conditions)  # after each size: an interrupted run keeps what it measured
        if r["stopped"]:
            sys.exit(f"hub_load: N={n} {r['stopped']}; saved")
    print(
        table(
            [
                {
                    "learners": r["learners"],
                    "checks": f"{r['checks_done']}/{r['learners']}",
                    "hub ms p50/p95": f"{r['hub_ms']['p50']:.0f} / {r['hub_ms']['p95']:.0f}",
                    "view ms p50/p95": f"{r['view_refresh_ms']['p50']:.0f} / {r['view_refresh_ms']['p95']:.0f}",
                    "MB server + check": f"{r['server_mb_median']:.0f} + {r['check_peak_mb_median']:.0f}",
                    "check CPU s": f"{r['check_cpu_s_median']:.1f}",
                    "check wall s": f"{r['check_wall_s_median']:.0f} (max {r['check_wall_s_max']:.0f})",
                    "queue": f"{r['queue_factor']:.1f}x",
                }
                for r in rooms
                if r["checks_done"]
            ]
        )
    )
    print(NOTE.format(cores=os.cpu_count()))
    render_doc()


if __name__ == "__main__":
    main()
