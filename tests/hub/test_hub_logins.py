"""The room's logins against a curious learner: a roster name is claimed only with its one-time code, every
failed login reads and lasts the same, repeated failures are throttled, and a room made before claim codes
keeps its accounts. The authenticator runs in the hub's environment (JupyterHub is not in the main one); the
codes are plain Python and run here. Through the real hub: test_hub_room.py's login test."""

import json
import subprocess

import pytest

from tests.hub.hubserver import require_hub_environment
from trainlab.hub import claims
from trainlab.paths import REPO


@pytest.fixture(scope="module")
def hub_python():
    return require_hub_environment()


def test_claim_codes_are_kept_hashed_work_once_and_forgive_case_and_dashes(tmp_path):
    codes = claims.ClaimCodes(tmp_path)
    issued = codes.issue(["ana", "ben"])
    assert set(issued) == {"ana", "ben"} and issued["ana"] != issued["ben"]
    assert codes.issue(["ana", "ben", "chen"]).keys() == {"chen"}  # a restart makes codes only for the new names
    stored = (tmp_path / claims.CODES).read_text()
    assert issued["ana"] not in stored and (tmp_path / claims.CODES).stat().st_mode & 0o777 == 0o600
    assert codes.check("ana", issued["ana"].lower().replace("-", " "))
    assert not codes.check("ana", issued["ben"]) and not codes.check("ana", "") and not codes.check("zoe", "x")
    again = codes.issue(["ana", "ben"], again={"ana"})  # a lost code: the old one stops working
    assert again.keys() == {"ana"} and not codes.check("ana", issued["ana"]) and codes.check("ana", again["ana"])
    codes.spend("ana")
    assert not codes.check("ana", again["ana"]) and codes.pending() == {"ben", "chen"}


# The authenticator itself, in the hub's Python: (kind, name, password, code, address) attempts in order; prints
# each attempt's (returned name, reply shown, seconds).
PROBE = """
import asyncio, json, sys, time
from types import SimpleNamespace
from trainlab.hub.auth import RoomAuthenticator
from trainlab.hub.claims import ClaimCodes

folder, attempts, options = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
options_together = options.pop("together", 1)
auth = RoomAuthenticator(allowed_users={"ines", "ana", "ben"}, dbm_path=folder + "/passwords.dbm",
                         state_folder=folder, create_users=False, min_password_length=8, **options)
codes = json.loads(open(folder + "/codes.json").read())

async def one(name, password, code, address):
    request = SimpleNamespace(remote_ip="10.9.9.9", headers={"X-Forwarded-For": f"10.9.9.9, {address}"})
    handler = SimpleNamespace(request=request, custom_login_error="")  # the proxy appended the client's address
    start = time.perf_counter()
    who = await auth.authenticate(handler, {"username": name, "password": password, "otp": codes.get(code, code)})
    return [who, handler.custom_login_error, time.perf_counter() - start]

async def main():
    out, together = [], options_together  # attempts sent at once, as several browsers would
    for i in range(0, len(attempts), together):
        out += await asyncio.gather(*(one(*a) for a in attempts[i:i + together]))
    print(json.dumps(out))

asyncio.run(main())
"""


def attempt(python, folder, attempts, **options):
    done = subprocess.run([python, "-c", PROBE, str(folder), json.dumps(attempts), json.dumps(options)], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture
def room(tmp_path):
    """A state folder with codes for ana, ben and ines; the codes by name in codes.json (the test's own copy)."""
    (tmp_path / "codes.json").write_text(json.dumps(claims.ClaimCodes(tmp_path).issue(["ines", "ana", "ben"])))
    return tmp_path


def test_a_name_is_claimed_only_with_its_own_code_and_the_password_set_then_is_the_names(hub_python, room):
    said = attempt(hub_python, room, [
        ["ana", "mallory-password", "ben", "10.0.0.9"],  # ben's code does not claim ana
        ["ana", "mallory-password", "", "10.0.0.9"],  # nor does no code: the first-use authenticator's hole
        ["ana", "short", "ana", "10.0.0.1"],  # her code, a password too short: only she learns that
        ["ana", "anas-password", "ana", "10.0.0.1"],  # claimed
        ["ana", "anas-password", "", "10.0.0.1"],  # from then on her password alone
        ["ana", "another-password", "ana", "10.0.0.9"],  # the spent code claims nothing again
    ], fail_s=0.0)
    assert [who for who, _, _ in said] == [None, None, None, "ana", "ana", None]
    assert said[0][1] == said[1][1] == said[5][1] == "Invalid name, password or claim code."
    assert "at least 8 characters" in said[2][1]
    assert claims.ClaimCodes(room).pending() == {"ines", "ben"}


def test_failed_logins_read_and_last_the_same_whoever_the_name_and_the_nth_is_throttled(hub_python, room):
    """30 failures each for an unknown name, an unclaimed one and a claimed one, interleaved, each kind from its own
    address: the same reply at every step, medians within 50 ms; after 5 failures a name is throttled."""
    attempt(hub_python, room, [["ana", "anas-password", "ana", "10.0.0.1"]], fail_s=0.0)  # ana claims her name
    rounds = [[name, "wrong-password", "", f"10.0.1.{i}"] for _ in range(30)
              for i, name in enumerate(["zed", "ben", "ana"])]
    said = attempt(hub_python, room, rounds, fail_s=0.4, together=3)
    kinds = {name: [s for s, r in zip(said, rounds) if r[0] == name] for name in ("zed", "ben", "ana")}
    replies = {name: [reply for _, reply, _ in rows] for name, rows in kinds.items()}
    assert replies["zed"] == replies["ben"] == replies["ana"]
    assert all(who is None for who, _, _ in said)
    assert replies["ana"][:5] == ["Invalid name, password or claim code."] * 5
    assert all(reply.startswith("Too many failed logins") for reply in replies["ana"][5:])
    medians = {name: sorted(s for _, _, s in rows)[15] for name, rows in kinds.items()}
    assert max(medians.values()) - min(medians.values()) < 0.05, medians


def test_a_guessed_name_is_refused_from_the_guessers_address_and_an_address_guessing_names_is_stopped(
        hub_python, room):
    """Five wrong passwords for ana from one address: that address gets no sixth try, not even the right
    password; ana from her own address still logs in. A name guessed from many addresses is refused everywhere
    past max_name_total; an address guessing many names past max_address_failures."""
    attempt(hub_python, room, [["ana", "anas-password", "ana", "10.0.0.1"]], fail_s=0.0)
    said = attempt(hub_python, room, [*[["ana", f"guess-{i}", "", "10.0.2.1"] for i in range(5)],
                                      ["ana", "anas-password", "", "10.0.2.1"],
                                      ["ana", "anas-password", "", "10.0.0.1"]], fail_s=0.0)
    assert said[5][0] is None and said[5][1].startswith("Too many failed logins")
    assert said[6][0] == "ana"
    spread = [["ana", f"guess-{i}", "", f"10.0.4.{i}"] for i in range(4)] + [["ana", "anas-password", "", "10.0.0.1"]]
    said = attempt(hub_python, room, spread, fail_s=0.0, max_name_total=4)
    assert said[-1][0] is None and said[-1][1].startswith("Too many failed logins")
    guesses = [[f"name{i}", "x" * 8, "", "10.0.3.3"] for i in range(3)] + [["ben", "bens-password", "ben", "10.0.3.3"]]
    said = attempt(hub_python, room, guesses, fail_s=0.0, max_address_failures=3)
    assert said[-1][0] is None and said[-1][1].startswith("Too many failed logins")  # the address, not the name


def test_a_burst_of_guesses_sent_at_once_is_throttled_as_if_sent_one_by_one(hub_python, room):
    """Twenty logins for one name from one address in flight together: five are tried, fifteen refused unread."""
    said = attempt(hub_python, room, [["ben", f"guess-{i}", "", "10.0.5.5"] for i in range(20)], fail_s=0.0,
                   together=20)
    replies = [reply for _, reply, _ in said]
    assert replies.count("Invalid name, password or claim code.") == 5
    assert sum(reply.startswith("Too many failed logins") for reply in replies) == 15


def test_a_passphrase_longer_than_bcrypts_72_bytes_claims_and_logs_in(hub_python, room):
    """bcrypt 5 raises on more than 72 bytes (4.x cut them): a long passphrase must not be a server error."""
    phrase = "correct horse battery staple " * 4
    said = attempt(hub_python, room, [["ana", phrase, "ana", "10.0.0.1"], ["ana", phrase, "", "10.0.0.1"]],
                   fail_s=0.0)
    assert [who for who, _, _ in said] == ["ana", "ana"]


def test_a_room_made_before_claim_codes_keeps_its_accounts_and_records(hub_python, tmp_path):
    """A state folder as the first-use authenticator left it: claimed passwords in passwords.dbm, no codes, stored
    records. The claimed log in as before; make hub issues codes only for the unclaimed; records still count."""
    made = subprocess.run([hub_python, "-c", (
        "import dbm, bcrypt, sys\n"
        "with dbm.open(sys.argv[1] + '/passwords.dbm', 'c', 0o600) as db:\n"
        "    db['ana'] = bcrypt.hashpw(b'anas-old-password', bcrypt.gensalt())\n"), str(tmp_path)],
        capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    done = subprocess.run([hub_python, "-c", "import sys, json; from trainlab.hub import launch, roster; "
                           "print(json.dumps(launch.issue_claim_codes(sys.argv[1], roster.Roster(('ines',), "
                           "('ana', 'ben')))))", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    fresh = json.loads(done.stdout.splitlines()[-1])
    assert set(fresh) == {"ines", "ben"}, done.stdout  # ana has claimed her name: no code for her
    (tmp_path / "codes.json").write_text(json.dumps(fresh))
    said = attempt(hub_python, tmp_path, [["ana", "anas-old-password", "", "10.0.0.1"],
                                          ["ben", "bens-password", "ben", "10.0.0.2"]], fail_s=0.0)
    assert [who for who, _, _ in said] == ["ana", "ben"]
