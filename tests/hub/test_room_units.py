"""The room's pieces that need no running hub: roster, address safety, records, the grid, limits."""

import json
import os
import subprocess
import time

import pytest

from trainlab.workbook import progress
from trainlab.paths import REPO
from trainlab.hub import grid, limits, roster, safety, state
from trainlab.hub import records as room_records
from trainlab.hub.records import Intake, Records, Refused, clean

NOW = 1_800_000_000.0


def stamp(seconds_ago):
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(NOW - seconds_ago))


def rec(learner, exercise, verdict, attempt, seconds_ago, **extra):
    return {"learner": learner, "exercise": exercise, "verdict": verdict, "attempt": attempt,
            "time": stamp(seconds_ago), **extra}


def test_no_roster_refuses_and_says_how_to_write_one(tmp_path):
    with pytest.raises(roster.RosterError) as err:
        roster.load(tmp_path / "room.toml")
    assert "instructors = [" in str(err.value) and "ROSTER=" in str(err.value)


@pytest.mark.parametrize("text, words", [
    ('learners = ["ana"]\n', "no instructor"),
    ('instructors = ["ines"]\nlearners = ["Ana B"]\n', "not usable user names"),
    ('instructors = ["ines"]\nlearners = ["ines"]\n', "instructor and learner"),
    ('instructors = ["ines"]\nlearners = ["ana", "ana"]\n', "twice"),
    ('instructors = ["ines"]\nsignup = true\n', "unknown key"),
    ('instructors = "ines"\n', "must be a list"),
])
def test_a_malformed_roster_is_refused_with_its_reason(tmp_path, text, words):
    path = tmp_path / "room.toml"
    path.write_text(text)
    with pytest.raises(roster.RosterError, match=words):
        roster.load(path)


def test_a_roster_names_learners_and_instructors(tmp_path):
    path = tmp_path / "room.toml"
    path.write_text(roster.EXAMPLE)
    people = roster.load(path)
    assert people.instructors == ("ines",) and people.learners == ("ana", "ben")
    assert set(people.everyone) == {"ines", "ana", "ben"}


@pytest.mark.parametrize("ip", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_needs_no_certificate(ip):
    assert safety.check_address(ip, "", "", insecure=False) is None


@pytest.mark.parametrize("ip", ["0.0.0.0", "10.0.0.5", "", "hub.example.org"])
def test_any_other_address_needs_a_certificate_or_insecure(ip):
    problem = safety.check_address(ip, "", "", insecure=False)
    assert problem and "clear text" in problem and "SSL_CERT" in problem and "--insecure" in problem
    assert "both" in safety.check_address(ip, "cert.pem", "", insecure=False)
    assert safety.check_address(ip, "cert.pem", "key.pem", insecure=False) is None
    assert safety.check_address(ip, "", "", insecure=True) is None


def test_without_node_the_proxy_check_says_to_install_it(monkeypatch):
    monkeypatch.setattr(safety.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match="node is not installed"):
        safety.find_proxy()


def test_the_state_folder_is_private_and_its_secrets_are_kept(tmp_path):
    folder = state.prepare(tmp_path / "state")
    assert folder.stat().st_mode & 0o777 == 0o700 and (folder / state.RECORDS).is_dir()
    first = state.secret(folder, "proxy_auth_token")
    assert state.secret(folder, "proxy_auth_token") == first and len(first) == 64  # a restart reads the same one
    assert (folder / "proxy_auth_token").stat().st_mode & 0o777 == 0o600


def test_a_record_is_kept_in_the_token_owners_name_and_checked():
    body = json.dumps(rec("ben", "start/warmup", "incorrect", 1, 0, extra="dropped"))
    kept = clean(body, "ana", now=NOW)
    assert kept["learner"] == "ana" and "extra" not in kept
    with pytest.raises(ValueError, match="verdict"):
        clean(json.dumps({**json.loads(body), "verdict": "passed!"}), "ana")
    with pytest.raises(ValueError, match="missing"):
        clean(json.dumps({"exercise": "start/warmup"}), "ana")
    with pytest.raises(ValueError, match="not JSON"):
        clean(b"{", "ana")


def test_records_survive_on_disk_and_are_reread_when_a_file_changes(tmp_path):
    records = Records(tmp_path)
    records.add("ana", rec("ana", "start/warmup", "incorrect", 1, 60))
    assert len(records.all()) == 1
    records.add("ana", rec("ana", "start/warmup", "pass", 2, 0))
    assert [r["verdict"] for r in Records(tmp_path).all()] == ["incorrect", "pass"]  # a new process reads them
    assert len(records.all()) == 2
    assert (tmp_path / "ana.jsonl").stat().st_mode & 0o777 == 0o600


def test_the_grid_shows_each_learners_state_and_puts_stuck_exercises_first():
    exercises = ["start/warmup", "debugging/nc_2", "debugging/nan_2"]
    records = [
        rec("ana", "start/warmup", "incorrect", 1, 900), rec("ana", "start/warmup", "pass", 2, 60),
        rec("ben", "start/warmup", "not attempted", 1, 1300),  # running the cell unchanged is no attempt
        rec("ben", "start/warmup", "incorrect", 2, 1200),
        rec("ana", "debugging/nan_2", "incorrect", 1, 700, diagnosis="wrong"),
        rec("ben", "debugging/nan_2", "error", 1, 650), rec("ben", "debugging/nan_2", "incorrect", 2, 30),
        rec("chen", "debugging/nc_2", "incorrect", 1, 120),  # working, but not for 10 minutes yet
    ]
    g = grid.build(records, ["ana", "ben", "chen"], exercises, now=NOW)
    assert [(r.exercise, r.stuck) for r in g.rows] == [("debugging/nan_2", 2), ("start/warmup", 1), ("debugging/nc_2", 0)]
    warmup = g.rows[1].cells
    assert warmup["ana"].text == "passed at attempt 2"
    assert warmup["ben"].status == "attempted" and warmup["ben"].attempts == 1 and warmup["ben"].stuck()
    assert warmup["ben"].text == "1 attempt, 20 min since the first"
    assert warmup["chen"].text == "not attempted"
    assert g.rows[0].cells["ana"].text == "1 attempt, 11 min since the first; diagnosis wrong"
    assert g.rows[0].cells["ben"].text.startswith("2 attempts, 10 min")
    assert not g.rows[2].cells["chen"].stuck() and g.rows[2].working == 1


def test_the_grid_shows_the_rosters_learners_and_the_workbooks_exercises_whatever_is_stored():
    """Records a room kept before it checked them (a name off the roster, an exercise no notebook has) show
    nowhere; every drill a learner generates lands in one row."""
    stored = [rec("zoe", "start/warmup", "pass", 1, 5), rec("ana", "<img src=x onerror=alert(1)>", "incorrect", 1, 9),
              rec("ana", "drill/7", "incorrect", 1, 30), rec("ana", "drill/7", "pass", 2, 20),
              rec("ana", "drill/8-2", "incorrect", 1, 10), rec("ana", "start/warmup", "pass", 1, 5)]
    g = grid.build(stored, ["ana"], ["start/warmup"], now=NOW)
    assert g.learners == ["ana"] and [r.exercise for r in g.rows] == ["start/warmup", grid.DRILLS]
    assert g.rows[1].cells["ana"].text == "1 of 2 drills passed" and not g.rows[1].cells["ana"].stuck()
    assert g.records == 4


def test_the_grid_reads_records_as_progress_writes_them(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINLAB_PROGRESS_DIR", str(tmp_path))
    monkeypatch.setenv("JUPYTERHUB_USER", "ana")
    monkeypatch.delenv("TRAINLAB_LEARNER", raising=False)
    monkeypatch.delenv("TRAINLAB_ROOM_URL", raising=False)

    class Verdict:
        exercise, kind, diagnosis = "debugging/nan_2", "incorrect", None

    entry = progress.record(Verdict())
    assert entry["learner"] == "ana"  # on a hub, the learner is the hub's user
    g = grid.build(progress.load(), ["ana"], ["debugging/nan_2"])
    assert g.rows[0].cells["ana"].text.startswith("1 attempt, under a minute")


def test_limits_leave_room_for_the_kernel_and_notebook_02s_four_ranks():
    per = limits.per_learner()
    assert per.memory_limit_mb >= limits.SERVER_MB + limits.TORCH_PROCESS_MB * (1 + limits.MAX_RANKS)
    assert per.memory_guarantee_mb < per.memory_limit_mb and per.memory_limit_mb % 256 == 0
    measured = json.loads((REPO / "benchmarks" / "results" / "hub_load.json").read_text())["rooms"]
    assert per.memory_guarantee_mb >= max(r["server_mb_median"] + r["check_peak_mb_median"] for r in measured)
    assert per.tasks_max >= limits.THREADS_PER_PROCESS * (1 + limits.MAX_RANKS)
    assert per.as_systemd()["MemoryMax"] == f"{per.memory_limit_mb}M"


def test_the_instructor_guide_sizes_a_room_from_the_recorded_load_figures():
    """The guide's sizing section is exactly what the benchmark renders from its saved record - no figure typed by hand."""
    from benchmarks.tools import hub_load

    result = json.loads((REPO / "benchmarks" / "results" / "hub_load.json").read_text())
    doc = (REPO / "docs" / "instructor.md").read_text()
    assert result["rooms"] and all(r["checks_done"] for r in result["rooms"])
    assert f"{hub_load.BEGIN}\n\n{hub_load.sizing_section(result)}\n\n{hub_load.END}" in doc, \
        "docs/instructor.md's sizing section is stale: run python -m benchmarks.tools.hub_load --render-doc"


def test_a_graded_diagnosis_is_recorded_for_the_room(tmp_path, monkeypatch):
    from trainlab.checks.core import NOT_STATED, Verdict
    from trainlab.debugging.diagnosis import Grade

    monkeypatch.setenv("TRAINLAB_PROGRESS_DIR", str(tmp_path))
    monkeypatch.delenv("TRAINLAB_ROOM_URL", raising=False)
    graded = [Verdict("debugging/nan_2", "incorrect", "m", diagnosis=Grade(True, "ok", (), 0)),
              Verdict("debugging/nan_2", "pass", "m", diagnosis=Grade(False, "no", ("hint 1",), 0)),
              Verdict("debugging/nan_2", "incorrect", "m", diagnosis=NOT_STATED),
              Verdict("start/warmup", "pass", "m")]
    assert [progress.record(v).get("diagnosis") for v in graded] == ["right", "wrong", "not stated", None]


def test_the_rooms_records_merge_as_exported_records_do(tmp_path):
    """`python -m trainlab.progress --merge STATE/records/*.jsonl` reads what the room view kept."""
    records = Records(tmp_path)
    records.add("ana", clean(json.dumps(rec("x", "start/warmup", "pass", 1, 0)), "ana", now=NOW))
    records.add("ben", clean(json.dumps(rec("x", "start/warmup", "incorrect", 1, 0)), "ben", now=NOW))
    rows = progress.merge(sorted(tmp_path.glob("*.jsonl")), exercises=["start/warmup"])
    assert [(r["learner"], r["status"]) for r in rows] == [("ana", "passed"), ("ben", "attempted")]


def test_records_the_room_missed_go_with_the_next_check_and_are_stored_once(tmp_path, monkeypatch):
    """A check made while the hub restarts cannot reach the room view: it is kept, sent with the next check,
    and the view stores a record sent twice (its first answer lost) once."""
    import http.server
    import threading

    from trainlab.hub.records import clean

    stored, state = Records(tmp_path / "room"), {"up": False}
    (tmp_path / "room").mkdir()

    class View(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if not state["up"]:  # the hub restarting: the proxy finds no room service
                self.send_response(503)
            else:
                stored.add("ana", clean(body, "ana"))
                self.send_response(201)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), View)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("TRAINLAB_PROGRESS_DIR", str(tmp_path / "ana"))
    monkeypatch.setenv("TRAINLAB_LEARNER", "ana")
    monkeypatch.setenv("TRAINLAB_ROOM_URL", f"http://127.0.0.1:{server.server_port}/services/room")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "anas-token")

    class Verdict:
        exercise, diagnosis = "start/warmup", None

        def __init__(self, kind):
            self.kind = kind

    try:
        with pytest.warns(UserWarning, match="did not receive 1 record.*sent with your next check"):
            progress.record(Verdict("incorrect"))
        assert stored.all() == []
        state["up"] = True
        progress.record(Verdict("pass"))  # the next check: both go, in order
        assert [(r["verdict"], r["attempt"]) for r in stored.all()] == [("incorrect", 1), ("pass", 2)]
        (tmp_path / "ana" / progress.SENT).write_text("1")  # the pass's 201 was lost: it is sent again
        assert progress.send_to_room() and len(stored.all()) == 2
    finally:
        server.shutdown()


EXERCISES = progress.all_exercises()
SENT = [rec("ana", "start/warmup", "incorrect", 1, 120), rec("ana", "debugging/nc_2", "pass", 1, 60)]


def bad_posts():
    """What a curious learner posted with her own token, each with the status and words it must be refused with."""
    good = rec("x", "start/warmup", "incorrect", 3, 0)
    return {
        "a script in the exercise": (dict(good, exercise="<img src=x onerror=alert(1)>"), 400, "not one of"),
        "an exercise no notebook has": (dict(good, exercise="debugging/nc_99"), 400, "not one of"),
        "2 MB of exercise name": (dict(good, exercise="x" * 2_000_000), 413, "at most 4096 bytes"),
        "dated 2020": (dict(good, time="2020-01-01T10:00:00+0000"), 400, "before the room started"),
        "dated next week": (dict(good, time=stamp(-7 * 86400)), 400, "in the future"),
        "a made-up verdict": (dict(good, verdict="passed!"), 400, "verdict"),
        "a long diagnosis": (dict(good, diagnosis="y" * 3000), 400, "diagnosis"),
        "an attempt that is text": (dict(good, attempt="1; DROP"), 400, "attempt"),
        "not an object": ([good], 400, "JSON object"),
    }


@pytest.mark.parametrize("what", list(bad_posts()))
def test_each_post_a_curious_learner_tried_is_refused_with_why_and_the_view_is_unchanged(tmp_path, what):
    record, status, words = bad_posts()[what]
    intake = Intake(Records(tmp_path), EXERCISES, since=NOW - 3600)
    for r in SENT:
        intake.take("ana", json.dumps(r).encode(), ["ana", "ben"], now=NOW)
    before = json.dumps(grid.as_json(grid.build(intake.records.all(), ["ana", "ben"], EXERCISES, now=NOW)))
    with pytest.raises(Refused) as refused:
        intake.take("ana", json.dumps(record).encode(), ["ana", "ben"], now=NOW)
    assert refused.value.status == status and words in str(refused.value)
    after = json.dumps(grid.as_json(grid.build(intake.records.all(), ["ana", "ben"], EXERCISES, now=NOW)))
    assert after == before


def test_a_record_queued_while_the_hub_was_down_still_passes_and_drills_are_kept(tmp_path):
    intake = Intake(Records(tmp_path), EXERCISES, since=NOW - 3600)
    queued = rec("ana", "start/warmup", "incorrect", 1, 1800)  # made half an hour ago, sent now
    assert intake.take("ana", json.dumps(queued).encode(), ["ana"], now=NOW)[1]
    assert intake.take("ana", json.dumps(rec("ana", "drill/42-2", "pass", 1, 5)).encode(), ["ana"], now=NOW)[1]
    assert not intake.take("ana", json.dumps(queued).encode(), ["ana"], now=NOW)[1]  # sent twice, kept once


def test_an_instructor_or_a_stranger_is_refused_and_the_record_file_name_is_never_theirs(tmp_path):
    intake = Intake(Records(tmp_path), EXERCISES, since=NOW - 3600)
    for who in ("ines", "../../etc/passwd"):
        with pytest.raises(Refused) as refused:
            intake.take(who, json.dumps(SENT[0]).encode(), ["ana"], now=NOW)
        assert refused.value.status == 403 and "roster" in str(refused.value)
    assert list(tmp_path.iterdir()) == []


def test_records_per_minute_and_in_all_are_capped(tmp_path, monkeypatch):
    intake = Intake(Records(tmp_path), EXERCISES, since=NOW - 86400)
    for i in range(room_records.PER_MINUTE):
        intake.take("ana", json.dumps(rec("ana", "start/warmup", "incorrect", i + 1, 60)).encode(), ["ana"], now=NOW)
    with pytest.raises(Refused) as refused:
        intake.take("ana", json.dumps(rec("ana", "start/warmup", "pass", 99, 0)).encode(), ["ana"], now=NOW + 1)
    assert refused.value.status == 429 and "a minute" in str(refused.value)
    assert intake.take("ana", json.dumps(rec("ana", "start/warmup", "pass", 99, 0)).encode(), ["ana"], now=NOW + 61)
    monkeypatch.setattr(room_records, "MOST", intake.records.count("ana"))
    with pytest.raises(Refused) as refused:
        intake.take("ana", json.dumps(rec("ana", "start/warmup", "pass", 100, 0)).encode(), ["ana"], now=NOW + 200)
    assert refused.value.status == 403 and "the most the room keeps" in str(refused.value)


def test_the_grid_json_of_30_learners_through_the_whole_workbook_stays_under_256_kb():
    learners = [f"learner{i:02d}" for i in range(30)]
    exercises = [*EXERCISES, *(f"memory/future_{i}" for i in range(40 - len(EXERCISES)))]  # a workbook of 40
    long = [rec(n, e, v, a, 700 - a, diagnosis="wrong", failure="out of memory", help=["hint 1", "solution"])
            for n in learners for e in exercises for a, v in enumerate(["incorrect", "error", "timed out"], 1)]
    drills = [rec(n, f"drill/{seed}", "incorrect", 1, 30) for n in learners for seed in range(200)]
    g = grid.build(long + drills, learners, exercises, now=NOW)
    size = len(json.dumps(grid.as_json(g)))
    assert len(g.rows) == 41 and size < 256 * 1024, f"grid.json {size} bytes"
    assert all(len(c.text) <= grid.MAX_CELL_CHARS for r in g.rows for c in r.cells.values())


def test_a_room_refused_record_is_said_and_does_not_hold_back_the_next(tmp_path, monkeypatch):
    """The learner's kernel shows the room's reason for a refusal and sends the records after it; a 429 waits."""
    import http.server
    import threading

    answers, got = [], []

    class View(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            status, body = answers.pop(0)
            self.send_response(status)
            self.end_headers()
            self.wfile.write(json.dumps(body).encode())

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), View)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("TRAINLAB_PROGRESS_DIR", str(tmp_path))
    monkeypatch.setenv("TRAINLAB_ROOM_URL", f"http://127.0.0.1:{server.server_port}/services/room")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "anas-token")
    (tmp_path / progress.RECORDS).write_text("".join(json.dumps(r) + "\n" for r in SENT))
    try:
        answers[:] = [(400, {"refused": "record refused: time is before the room started"}), (201, {})]
        with pytest.warns(UserWarning, match="refused your record of start/warmup.*before the room started"):
            assert progress.send_to_room()
        assert [r["exercise"] for r in got] == ["start/warmup", "debugging/nc_2"]
        (tmp_path / progress.SENT).write_text("1")
        answers[:] = [(429, {"refused": "more than 60 records in a minute"})]
        with pytest.warns(UserWarning, match="did not receive 1 record.*sent with your next check"):
            assert not progress.send_to_room()
        assert (tmp_path / progress.SENT).read_text() == "1"
    finally:
        server.shutdown()


def test_a_check_that_raises_runs_out_of_memory_or_times_out_reaches_the_room_as_what_it_was(tmp_path, monkeypatch):
    """Every way a check can end is a verdict the learner sees and a record the room shows, with the help read
    before it: the grid says 'last out of memory', not a traceback in one notebook and nothing in the room."""
    from trainlab.checks import help_record
    from trainlab.checks.core import Exercise, LearnerError, TimedOut

    monkeypatch.setenv("TRAINLAB_PROGRESS_DIR", str(tmp_path))
    monkeypatch.delenv("TRAINLAB_ROOM_URL", raising=False)
    monkeypatch.setattr(help_record, "HELP", {})
    oom = "your code crashed: stopped by the out-of-memory killer (1 process(es) killed while it ran): ..."
    endings = {"oom": LearnerError(oom), "hung": TimedOut("your code did not finish: timed out after 160 s"),
               "raised": LearnerError("ZeroDivisionError: division by zero"), "broken": RuntimeError("a bug of ours")}

    class Ending(Exercise):
        def judge(self, source):
            if source in endings:
                raise endings[source]
            return "fixed"

    exercise = Ending("start/warmup", hints=("look at the loss",))
    exercise.hint()
    verdicts = {source: exercise.check(source) for source in [*endings, "fixed"]}
    assert {s: v.failure for s, v in verdicts.items()} == {
        "oom": "out of memory", "hung": "timed out", "raised": "raised", "broken": "check failed", "fixed": ""}
    assert str(verdicts["oom"]).startswith("[start/warmup] Out of memory:")
    assert str(verdicts["broken"]).startswith("[start/warmup] The check itself failed: RuntimeError: a bug of ours")
    stored = progress.load()
    assert [r.get("failure") for r in stored] == ["out of memory", "timed out", "raised", "check failed", None]
    assert all(r["help"] == ["hint 1"] for r in stored)
    for r in stored:
        clean(json.dumps(r), "ana")  # the room takes each
    cells = grid.build(stored[:4], [stored[0]["learner"]], ["start/warmup"]).rows[0].cells
    assert "; last check failed; after hint 1" in cells[stored[0]["learner"]].text
    passed = grid.build(stored, [stored[0]["learner"]], ["start/warmup"]).rows[0].cells[stored[0]["learner"]]
    assert passed.text == "passed at attempt 5; after hint 1"


def test_the_grid_says_where_each_learner_last_checked_and_how_long_ago():
    records = [rec("ana", "start/warmup", "pass", 1, 900), rec("ana", "debugging/nc_2", "incorrect", 1, 200),
               rec("ben", "drill/3", "incorrect", 1, 30)]
    g = grid.build(records, ["ana", "ben", "chen"], ["start/warmup", "debugging/nc_2"], now=NOW)
    assert g.activity["ana"] == {"notebook": "01 debugging", "exercise": "debugging/nc_2", "last_s": 200}
    assert g.activity["ben"]["notebook"].startswith("01 debugging") and "chen" not in g.activity


def test_an_environment_whose_python_links_into_a_private_folder_is_unreadable_by_learners():
    """A venv made from pyenv's Python under /root: bin/python is a link, and the folder it links into is 0700."""
    import shutil
    import tempfile
    from pathlib import Path

    base = Path(tempfile.mkdtemp(prefix="trainlab-readable-"))  # under /tmp, opened to all below
    try:
        base.chmod(0o755)
        private = base / "root" / ".pyenv" / "bin"
        private.mkdir(parents=True)
        (private / "python3.11").write_text("#!/bin/sh\n")
        (private / "python3.11").chmod(0o755)
        (base / "root").chmod(0o700)
        venv = base / "opt" / "venv" / "bin"
        venv.mkdir(parents=True)
        (venv / "python").symlink_to(private / "python3.11")
        assert safety.unreadable_by_others([venv / "python"]) == [str(base / "root")]
        assert safety.unreadable_by_others([venv]) == []  # the venv's own folders are open
    finally:
        shutil.rmtree(base)


def test_make_hub_says_when_the_room_is_cold_and_hub_warm_leaves_a_stamp_it_reads(tmp_path, monkeypatch, capsys):
    from trainlab import paths
    from trainlab.checks import __main__ as checks_cli
    monkeypatch.setattr(paths, "WARM_STAMP", tmp_path / "hub-warm.json")
    assert "`make hub-warm` has not run" in safety.coldness()
    assert checks_cli.warm([], stamp=True) == 0  # no exercise: the data set alone
    assert "data: " in capsys.readouterr().out and safety.coldness() is None
    stamp = json.loads(paths.WARM_STAMP.read_text())
    paths.WARM_STAMP.write_text(json.dumps({**stamp, "package": "an older workbook"}))
    assert "changed since `make hub-warm`" in safety.coldness()


def test_a_room_made_before_the_records_were_checked_keeps_its_records_and_takes_those_queued_since(tmp_path):
    """A state folder as yesterday's hub left it: no room_started, records stored, a learner's queue of records
    made while the hub was down. The room dates itself from its first start (its oldest secret)."""
    import os

    now = time.time()

    def made(seconds_ago, verdict, attempt):
        at = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(now - seconds_ago))
        return {"learner": "ana", "exercise": "start/warmup", "verdict": verdict, "attempt": attempt, "time": at}

    folder = state.prepare(tmp_path / "state")
    secret = folder / "jupyterhub_cookie_secret"
    secret.write_text("x" * 64)
    os.utime(secret, (now - 3 * 86400, now - 3 * 86400))  # the room first started three days ago
    (folder / state.RECORDS / "ana.jsonl").write_text(json.dumps(made(2 * 86400, "incorrect", 1)) + "\n")
    since = state.started(folder)
    assert since == int(now - 3 * 86400) and state.started(folder) == since  # written once
    intake = Intake(Records(folder / state.RECORDS), EXERCISES, since=since)
    queued = made(86400, "pass", 2)  # made yesterday while the hub was down, sent now
    assert intake.take("ana", json.dumps(queued).encode(), ["ana"], now=now)[1]
    with pytest.raises(Refused, match="before the room started"):
        intake.take("ana", json.dumps(made(4 * 86400, "pass", 3)).encode(), ["ana"], now=now)
    g = grid.build(intake.records.all(), ["ana"], EXERCISES, now=now)
    assert next(r for r in g.rows if r.exercise == "start/warmup").cells["ana"].text == "passed at attempt 2"


def test_a_damaged_line_in_a_learners_records_is_skipped_not_the_room(tmp_path):
    records = Records(tmp_path)
    records.add("ana", rec("ana", "start/warmup", "incorrect", 1, 60))
    with (tmp_path / "ana.jsonl").open("a") as f:
        f.write('{"exercise": "start/warmup", "verd')  # the disk filled mid-write
    records.add("ana", rec("ana", "start/warmup", "pass", 2, 0))
    assert [r["verdict"] for r in records.all()] == ["incorrect", "pass"] and records.count("ana") == 2


def test_a_stopping_hub_says_what_stays_and_what_it_still_waits_for(tmp_path):
    from trainlab.hub import stopping

    said = stopping.stopping_line(["ben", "ana"])
    assert "2 running server(s) (ana, ben), their kernels and the proxy keep running" in said and "/hub/admin" in said
    assert "server(s)" not in stopping.stopping_line([]) and "the proxy keeps running" in stopping.stopping_line([])
    sleeper = subprocess.Popen(["sleep", "30"])
    try:  # a service still running is named with its pid; one that exited (or never ran) is not
        waiting = stopping.waiting_for({"room": sleeper.pid, "idle-culler": 0}, ["ThreadPoolExecutor-0_0"])
        assert waiting.startswith(f"the service room (pid {sleeper.pid}) to exit") and "idle-culler" not in waiting
    finally:
        sleeper.kill()
    os.waitid(os.P_PID, sleeper.pid, os.WEXITED | os.WNOWAIT)
    assert not stopping.alive(sleeper.pid)  # exited, not reaped yet: a zombie counts as exited
    sleeper.wait()
    assert stopping.waiting_for({"room": sleeper.pid}, ["ThreadPoolExecutor-0_0"]) == \
        "threads to finish: ThreadPoolExecutor-0_0"
    assert stopping.waiting_for({"room": sleeper.pid}, []) == "its pending requests, cancelled, to finish"
