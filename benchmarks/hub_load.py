"""Load on a room's hub: N simulated learners on loopback, each logging in and running one checked exercise.

    make hub-setup && python -m benchmarks.hub_load                 # N = 8, 16, 24; ~15 min on 2 cores
    python -m benchmarks.hub_load --sizes 8 --stagger 2

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
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import table, write_result
from tests.hub.hubserver import RoomHub, hub_environment_missing, server_environment, wait_for_server
from trainlab import checks, runner
from trainlab.paths import REPO

FIX = "step, then clear the gradients"  # start/warmup's correct alternative: a real check run, never cached
CHECK = """
import json, resource, sys, time
from trainlab import checks
start = time.perf_counter()
verdict = checks.get("start/warmup").check(sys.stdin.read())
own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print("RESULT", json.dumps({"verdict": verdict.kind, "wall_s": time.perf_counter() - start,
      "cpu_s": own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime,
      "peak_mb": (own.ru_maxrss + children.ru_maxrss) / 1024}))
"""


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
        self.hub_ms, self.result, self.error, self.server_mb = [], None, None, None

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
            check = subprocess.Popen([sys.executable, "-c", CHECK], env=env, cwd=REPO, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.server_mb = max(rss_mb(pid) for pid in self.server_pids())
            out, err = check.communicate(self.source, timeout=1800)
            line = next((x for x in out.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                raise RuntimeError(f"{self.name}'s check printed no result:\n{err[-1500:]}")
            self.result = json.loads(line[len("RESULT "):])
        except Exception as exc:  # reported, not raised: one learner's failure is part of the measurement
            self.error = f"{type(exc).__name__}: {exc}"

    def sample(self, session):
        while self.result is None and self.error is None and not self.stop.is_set():
            self.timed(session, "/hub/home")
            time.sleep(3)

    def server_pids(self):
        pids = [pid for pid in runner.descendants(self.hub.proc.pid)
                if f"JUPYTERHUB_USER={self.name}\0".encode() in _environ(pid)]
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
        start = time.perf_counter()
        for learner in learners:
            learner.start()
        for learner in learners:
            learner.join(timeout=3600)
        room_s = time.perf_counter() - start
        time.sleep(6)  # one more refresh of the view after the last record
        stop.set()
        watcher.join(timeout=60)
    done = [x.result for x in learners if x.result]
    hub_ms = [ms for x in learners for ms in x.hub_ms]
    cpu = [r["cpu_s"] for r in done]
    cores = os.cpu_count()
    return {
        "learners": n, "stagger_s": stagger, "checks_done": len(done),
        "verdicts": {v: sum(r["verdict"] == v for r in done) for v in {r["verdict"] for r in done}},
        "errors": [f"{x.name}: {x.error}" for x in learners if x.error],
        "room_wall_s": room_s,
        "hub_ms": {"p50": percentile(hub_ms, 50), "p95": percentile(hub_ms, 95), "samples": len(hub_ms)},
        "view_refresh_ms": {"p50": percentile([v["ms"] for v in view], 50),
                            "p95": percentile([v["ms"] for v in view], 95), "samples": len(view),
                            "records_seen_last": view[-1]["records"] if view else 0},
        "server_mb_median": statistics.median([x.server_mb for x in learners if x.server_mb]) if done else None,
        "check_peak_mb_median": statistics.median([r["peak_mb"] for r in done]) if done else None,
        "check_cpu_s_median": statistics.median(cpu) if cpu else None,
        "check_wall_s_median": statistics.median([r["wall_s"] for r in done]) if done else None,
        "check_wall_s_max": max((r["wall_s"] for r in done), default=None),
        "queue_factor": (statistics.median([r["wall_s"] for r in done]) / statistics.median(cpu)) if cpu else None,
        "checks_per_core_minute": (60 / statistics.median(cpu)) if cpu else None,
        "cores": cores,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 16, 24])
    parser.add_argument("--stagger", type=float, default=2.0, help="seconds between two learners' logins")
    args = parser.parse_args(argv)
    missing = hub_environment_missing()
    if missing:
        sys.exit(f"hub_load: {missing}")
    source = next(e for e in checks.get("start/warmup").corpus if e.name == FIX).edit.apply("start/warmup")
    rooms = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix=f"hub-load-{n}-") as folder:
            rooms.append(run_room(n, args.stagger, source, Path(folder)))
        r = rooms[-1]
        print(f"N={n}: {r['checks_done']}/{n} checks, hub p50 {r['hub_ms']['p50']:.0f} ms p95 {r['hub_ms']['p95']:.0f} ms, "
              f"view {r['view_refresh_ms']['p50']:.0f} ms, check {r['check_cpu_s_median']:.1f} CPU s "
              f"in {r['check_wall_s_median']:.0f} s wall", flush=True)
    rows = [{"learners": r["learners"], "checks": f"{r['checks_done']}/{r['learners']}",
             "hub ms p50/p95": f"{r['hub_ms']['p50']:.0f} / {r['hub_ms']['p95']:.0f}",
             "view ms p50/p95": f"{r['view_refresh_ms']['p50']:.0f} / {r['view_refresh_ms']['p95']:.0f}",
             "MB server + check": f"{r['server_mb_median']:.0f} + {r['check_peak_mb_median']:.0f}",
             "check CPU s": f"{r['check_cpu_s_median']:.1f}",
             "check wall s": f"{r['check_wall_s_median']:.0f} (max {r['check_wall_s_max']:.0f})",
             "queue": f"{r['queue_factor']:.1f}x"} for r in rooms if r["checks_done"]]
    print(table(rows))
    cores = os.cpu_count()
    note = (f"{cores} cores: the checks queue - a check needs its CPU seconds, and with more checks running than "
            f"cores each one's wall time stretches by about the number running per core (the queue column). "
            f"A room sized for checks without queueing needs about one core per learner checking at the same moment.")
    print(note)
    write_result("hub_load", {"date": time.strftime("%Y-%m-%d"), "machine": {
        "cpu": platform.processor() or platform.machine(), "cores": cores, "python": platform.python_version(),
        "spawner": "test (no isolation, one Unix user)", "check": f"start/warmup, correct alternative {FIX!r}"},
        "note": note, "rooms": rooms})


if __name__ == "__main__":
    main()
