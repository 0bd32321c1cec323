"""The hub's prediction ledger without a hub: the service (course_hub.service) behind a
stand-in for the hub's token check, course_lib posting to it, and the grader's comparison
(autograder.integrity.ledger). The kit's hub runs it for real in tests/test_hub.py."""
from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from autograder.integrity import ledger as G
from autograder.integrity.predictions import read_record
from course_hub.service import ledger as S
from course_lib import ledger as L
from course_lib.exercises import predictions as P
from service_thread import free_port as _free_port, running

SERVICE = "prediction-ledger"
ACCESS = [f"access:services!service={SERVICE}"]
TOKENS = {
    "tok-ann": {"kind": "user", "name": "ann", "scopes": ACCESS},
    "tok-bob": {"kind": "user", "name": "bob", "scopes": ["access:services"]},
    "tok-teacher": {"kind": "user", "name": "teacher", "scopes": ACCESS},
    "tok-noaccess": {"kind": "user", "name": "eve", "scopes": ["access:servers!user=eve"]},
    "tok-service": {"kind": "service", "name": "other", "scopes": ACCESS},
}


@pytest.fixture
def service(tmp_path):
    """The course service on 127.0.0.1 in a thread: (its URL, its ledger's folder)."""
    store = tmp_path / "store"
    store.mkdir()
    with running(store, TOKENS, SERVICE, instructors={"teacher"}) as url:
        yield url, store / "ledger"


def event_body(**over) -> dict:
    e = P.make_event([], "hello_q1", "commit", {"q1_x": 2.0}, "because", t="2026-11-26T10:00:00.000Z")
    return {**L.payload(e, Path("01_hello_roofline")), **over}


def post(url, body, token="tok-ann", raw=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"token {token}"
    return requests.post(f"{url}/events", data=raw if raw is not None else json.dumps(body), headers=headers,
                         timeout=10)


# ---- the service ------------------------------------------------------------------------------------
def test_every_request_needs_a_token_the_hub_knows_with_access_to_the_service(service):
    url, store = service
    assert post(url, event_body(), token=None).status_code == 401
    assert "Authorization: token" in post(url, event_body(), token=None).json()["error"]
    assert post(url, event_body(), token="tok-unknown").status_code == 403
    r = post(url, event_body(), token="tok-noaccess")
    assert r.status_code == 403 and SERVICE in r.json()["error"], r.text
    assert post(url, event_body(), token="tok-service").status_code == 403      # a service is nobody's student
    assert requests.get(f"{url}/events", timeout=10).status_code == 401
    assert list(store.iterdir()) == []


def test_an_event_is_appended_for_the_token_s_user_with_the_service_s_time(service):
    url, store = service
    body = event_body()
    r = post(url, body)
    assert r.status_code == 201, r.text
    r2 = post(url, event_body(kind="reveal", values=None, seq=1, n=1), token="tok-ann")
    assert r2.status_code == 201, r2.text
    lines = (store / "ann.jsonl").read_text().splitlines()
    first, second = (json.loads(x) for x in lines)
    assert first["user"] == "ann" and first["digest"] == body["digest"] and first["values"] == {"q1_x": 2.0}
    assert first["received"] <= second["received"] and second["kind"] == "reveal"
    assert stat.S_IMODE((store / "ann.jsonl").stat().st_mode) == 0o640
    # a user field in the body cannot post as someone else
    assert post(url, {**body, "user": "bob"}).status_code == 400
    assert not (store / "bob.jsonl").exists()


def test_nothing_updates_or_removes_an_entry(service):
    url, store = service
    assert post(url, event_body()).status_code == 201
    before = (store / "ann.jsonl").read_bytes()
    auth = {"Authorization": "token tok-ann"}
    for method in ("PUT", "DELETE", "PATCH"):
        r = requests.request(method, f"{url}/events", headers=auth, data="{}", timeout=10)
        assert r.status_code == 405, (method, r.status_code)
    assert post(url, event_body(kind="revise", values={"q1_x": 3.0}, seq=1, n=1)).status_code == 201
    after = (store / "ann.jsonl").read_bytes()
    assert after.startswith(before) and after.count(b"\n") == 2


@pytest.mark.parametrize("change, expected", [
    ({"kind": "delete"}, "kind: expected one of commit, revise, reveal"),
    ({"question": "../../etc/passwd"}, "question: expected a question id"),
    ({"digest": "not-a-hash"}, "digest: expected the event's sha256"),
    ({"seq": -1}, "seq: expected a whole number"),
    ({"t": "yesterday"}, "t: expected the event's UTC time"),
    ({"assignment": "a/b"}, "assignment: expected a folder name"),
    ({"values": {"x": "y" * (S.MAX_VALUES_BYTES + 1)}}, f"values: expected a JSON object of at most {S.MAX_VALUES_BYTES}"),
    ({"extra": 1}, "unknown field(s) ['extra']"),
])
def test_bad_input_gets_a_400_saying_what_was_expected(service, change, expected):
    url, store = service
    r = post(url, event_body(**change))
    assert r.status_code == 400 and expected in r.json()["error"], r.text
    assert not (store / "ann.jsonl").exists()


def test_malformed_and_oversized_bodies_are_refused(service):
    url, store = service
    assert post(url, None, raw="{not json").status_code == 400
    assert post(url, None, raw="[1, 2]").json()["error"] == "expected a JSON object"
    big = json.dumps({**event_body(), "notebook": "n"}) + " " * S.MAX_BODY
    r = post(url, None, raw=big)
    assert r.status_code == 413 and str(S.MAX_BODY) in r.json()["error"], r.text
    assert not (store / "ann.jsonl").exists()


def test_each_user_s_ledger_is_bounded(service, monkeypatch):
    url, store = service
    monkeypatch.setattr(S, "MAX_EVENTS_PER_USER", 2)
    assert [post(url, event_body(seq=i)).status_code for i in range(3)] == [201, 201, 429]
    assert "limit" in post(url, event_body(seq=3)).json()["error"]
    assert len((store / "ann.jsonl").read_text().splitlines()) == 2
    assert post(url, event_body(), token="tok-bob").status_code == 201         # another user is not affected


def test_a_student_reads_only_their_own_ledger_an_instructor_everyone_s(service):
    url, _ = service
    assert post(url, event_body(), token="tok-ann").status_code == 201
    assert post(url, event_body(question="hello_q2"), token="tok-bob").status_code == 201

    def get(token, **params):
        return requests.get(f"{url}/events", params=params, headers={"Authorization": f"token {token}"}, timeout=10)

    assert list(get("tok-ann").json()["events"]) == ["ann"]
    assert get("tok-ann", user="bob").status_code == 403
    everyone = get("tok-teacher").json()["events"]
    assert sorted(everyone) == ["ann", "bob"] and everyone["bob"][0]["question"] == "hello_q2"
    # the grader reads it the same way, with the instructor's token
    os.environ[L.TOKEN_ENV] = "tok-teacher"
    try:
        assert sorted(G.load(url)) == ["ann", "bob"]
    finally:
        del os.environ[L.TOKEN_ENV]



@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_the_service_stops_at_once_on_the_hub_s_signals_even_with_sigint_ignored(tmp_path, sig):
    """JupyterHub stops a managed service with SIGINT and sends SIGTERM only 30 s later; a hub
    started as a shell's background job passes SIGINT ignored to the services it starts."""
    store = tmp_path / "store"
    store.mkdir()
    port = _free_port()
    env = {**os.environ, "JUPYTERHUB_SERVICE_URL": f"http://127.0.0.1:{port}", "JUPYTERHUB_API_TOKEN": "unused",
           "JUPYTERHUB_API_URL": "http://127.0.0.1:9/hub/api"}
    proc = subprocess.Popen([sys.executable, "-m", "course_hub.service", "--store", str(store)], env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:         # listening
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate(timeout=10)[0]
            time.sleep(0.1)
        proc.send_signal(sig)
        out = proc.communicate(timeout=10)[0]
        assert proc.returncode == 0, out
    finally:
        proc.kill()
        proc.wait()

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_that_comes_as_the_service_starts_listening_stops_it_cleanly(tmp_path, sig):
    """The handlers are in place before the port opens: a stop sent the moment it listens (here
    from inside listen(), so no timing decides it) exits 0, never dies of the signal (-15)."""
    store = tmp_path / "store"
    store.mkdir()
    port = _free_port()
    env = {**os.environ, "JUPYTERHUB_SERVICE_URL": f"http://127.0.0.1:{port}", "JUPYTERHUB_API_TOKEN": "unused",
           "JUPYTERHUB_API_URL": "http://127.0.0.1:9/hub/api"}
    program = (
        "import os, signal, sys\n"
        "from course_hub.service import app, limits\n"
        "listen = limits.LimitedServer.listen\n"
        "def signalled_listen(self, *a, **k):\n"
        f"    os.kill(os.getpid(), {int(sig)})\n"
        "    return listen(self, *a, **k)\n"
        "limits.LimitedServer.listen = signalled_listen\n"
        "app.main(sys.argv[1:])\n")
    proc = subprocess.run([sys.executable, "-c", program, "--store", str(store)], env=env,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, (proc.returncode, proc.stdout + proc.stderr)


# ---- course_lib posting, and the grader's comparison -------------------------------------------------
@pytest.fixture
def notebook_folder(tmp_path, monkeypatch):
    """A student's assignment folder, where course_lib keeps the record."""
    folder = tmp_path / "ann" / "01_hello_roofline"
    folder.mkdir(parents=True)
    monkeypatch.setattr(P, "_HERE", folder)
    return folder


QUESTIONS = {"hello_q1", "hello_q2"}


def work(folder: Path, first: float) -> None:
    """What a student's notebook does: commit hello_q1 (and q2), reveal both."""
    P.commit("hello_q1", {"q1_x": first}, "a reason")
    P.commit("hello_q2", {"q2_y": "memory"}, "another")
    P.reveal("hello_q1", "hello_q2")


def rewrite(path: Path, question: str, values: dict) -> None:
    """The student's script: every commit of `question` says `values`, the chains recomputed,
    times kept (nothing but course_lib, which the notebook imports)."""
    from course_lib.exercises.answers import encode

    values = {k: encode(v) for k, v in values.items()}
    new = []
    for e in P.load_record(path):
        vals = values if e["q"] == question and e["kind"] in ("commit", "revise") else e["values"]
        new.append(P.make_event(new, e["q"], e["kind"], vals, e["reason"], t=e["t"], count=e.get("count"),
                                variant=e.get("variant")))
    path.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in new))


def on_hub(monkeypatch, url: str, token: str = "tok-ann") -> None:
    monkeypatch.setenv(L.URL_ENV, url)
    monkeypatch.setenv(L.TOKEN_ENV, token)


def test_an_honest_record_is_vouched_and_a_rewritten_one_differs(service, notebook_folder, monkeypatch):
    url, store = service
    on_hub(monkeypatch, url)
    work(notebook_folder, first=1.0)
    entries = G.load(str(store))["ann"]
    assert [(e["question"], e["kind"]) for e in entries] == [("hello_q1", "commit"), ("hello_q2", "commit"),
                                                             ("hello_q1", "reveal"), ("hello_q2", "reveal")]
    assert all(e["assignment"] == "01_hello_roofline" for e in entries)
    record = read_record(notebook_folder, "lesson", QUESTIONS)
    assert record.problems == [] and record.present
    honest = G.check({"lesson": record}, {"lesson": QUESTIONS}, entries)
    assert honest == {"status": G.Vouch.VOUCHED, "problems": {}}

    # the student's script rewrites the commit to the truth: the chain checks still pass...
    rewrite(notebook_folder / P.RECORD_FILE, "hello_q1", {"q1_x": 4.0})
    forged = read_record(notebook_folder, "lesson", QUESTIONS)
    assert forged.problems == [] and P.history(forged.events, "hello_q1")["committed"]["q1_x"]["value"] == 4.0
    # ...the ledger does not
    got = G.check({"lesson": forged}, {"lesson": QUESTIONS}, entries)
    assert got["status"] is G.Vouch.DIFFERS, got
    lines = got["problems"]["lesson"]
    assert any("commits and reveals are not in the ledger (the first: Q1 commit at" in x and x.endswith("q1_x = 4)")
               for x in lines), lines
    assert any("the ledger has q1_x = 1 committed for Q1 before its first reveal" in x and
               x.endswith("the record grades q1_x = 4") for x in lines), lines
    assert all(x.startswith(G.DIFFERS + ": ") for x in lines), lines
    # Q2's answer is the one the ledger holds (its events moved in the rewritten chain, nothing more)
    assert not any("the ledger has" in x and "Q2" in x for x in lines), lines


def test_a_fresh_copy_answered_after_the_truth_was_seen_differs(service, notebook_folder, monkeypatch):
    url, store = service
    on_hub(monkeypatch, url)
    work(notebook_folder, first=1.0)                       # wrong, then the truth shown
    (notebook_folder / P.RECORD_FILE).unlink()             # a fresh copy of the lesson...
    work(notebook_folder, first=4.0)                       # ...answered right, consistently recorded
    record = read_record(notebook_folder, "lesson", QUESTIONS)
    assert record.problems == []
    got = G.check({"lesson": record}, {"lesson": QUESTIONS}, G.load(str(store))["ann"])
    assert got["status"] is G.Vouch.DIFFERS
    assert got["problems"]["lesson"] == [f"{G.DIFFERS}: the ledger has q1_x = 1 committed for Q1 before its first "
                                         f"reveal (at {P.clock(G._ledger_history(G.load(str(store))['ann'], 'hello_q1')['revealed']['received'])}); "
                                         "the record grades q1_x = 4"]


def test_without_a_ledger_a_record_is_not_vouched(notebook_folder, monkeypatch):
    monkeypatch.delenv(L.URL_ENV, raising=False)
    work(notebook_folder, first=1.0)
    events = P.load_record(notebook_folder / P.RECORD_FILE)
    assert events and not any("ledger" in e for e in events)            # off the hub: today's record
    record = read_record(notebook_folder, "lesson", QUESTIONS)
    assert G.check({"lesson": record}, {"lesson": QUESTIONS}, None) == {"status": G.Vouch.NOT_VOUCHED, "problems": {}}
    # graded with a ledger that never heard of this student: every event is missing from it
    got = G.check({"lesson": record}, {"lesson": QUESTIONS}, [])
    assert got["problems"]["lesson"] == [f"{G.DIFFERS}: {len(events)} of the record's {len(events)} commits and "
                                         f"reveals are not in the ledger (the first: Q1 commit at "
                                         f"{P.clock(events[0]['t'])}, q1_x = 1)"]


def test_an_unreachable_ledger_never_breaks_the_notebook_and_is_noted(notebook_folder, monkeypatch):
    on_hub(monkeypatch, f"http://127.0.0.1:{_free_port()}")          # nothing listens there
    work(notebook_folder, first=1.0)
    events = P.load_record(notebook_folder / P.RECORD_FILE)
    assert len(events) == 4 and all(e.get("ledger") == L.UNREACHABLE for e in events)
    assert P.check_events(events) == []
    record = read_record(notebook_folder, "lesson", QUESTIONS)
    got = G.check({"lesson": record}, {"lesson": QUESTIONS}, [])
    assert got["problems"]["lesson"][0].endswith("; the notebook noted the ledger unreachable for 4 of them")


def test_the_ledger_is_read_from_its_folder_or_says_why_not(tmp_path):
    with pytest.raises(G.LedgerUnavailable, match="expected the ledger's folder"):
        G.load(str(tmp_path / "nowhere"))
    with pytest.raises(G.LedgerUnavailable, match="needs your hub token"):
        os.environ.pop(L.TOKEN_ENV, None)
        G.load("http://127.0.0.1:9/")
    (tmp_path / "ann.jsonl").write_text('{"user": "ann", "question": "hello_q1"}\nnot json\n')
    assert G.load(str(tmp_path)) == {"ann": [{"user": "ann", "question": "hello_q1"}]}


def _graded(record, entries, final: float):
    """The decision for hello_q1 given the notebook's final answer `final`."""
    from autograder.integrity.predictions import decide
    from course_lib.exercises.answers import encode

    return decide(record, "hello_q1", ["q1_x"], {"q1_x": {"value": encode(final)}})


def test_with_a_ledger_the_ledger_is_graded_not_the_record(service, notebook_folder, monkeypatch):
    """A rewritten record, a fresh copy answered after the truth was seen, a replayed friend's
    record: each graded on what the service received before its first reveal."""
    from autograder.integrity.predictions import Rule

    url, store = service
    on_hub(monkeypatch, url)
    work(notebook_folder, first=1.0)                 # wrong, then the truth shown
    rewrite(notebook_folder / P.RECORD_FILE, "hello_q1", {"q1_x": 4.0})
    forged = read_record(notebook_folder, "lesson", QUESTIONS)
    assert _graded(forged, None, 4.0).rule is Rule.COMMITTED          # the record alone would pay for it
    entries = G.load(str(store))["ann"]
    graded = G.graded_record(entries, QUESTIONS, forged)
    assert graded.source == "hub ledger" and graded.shown == forged.shown
    d = _graded(graded, entries, 4.0)
    assert d.rule is Rule.CHANGED and d.withheld and d.committed["q1_x"]["value"] == 1.0, d
    # the honest answer, unchanged after the reveal, is graded as committed
    assert _graded(graded, entries, 1.0).rule is Rule.COMMITTED
    # a ledger that holds nothing of this student: no record, whatever the notebook carries
    assert G.graded_record([], QUESTIONS, forged).present is False


def test_a_replayed_record_earns_nothing_where_the_service_is_the_answer_key(service, notebook_folder, monkeypatch):
    """bob hands in ann's notebook and posts her record's events with his own token: his ledger
    then holds her commits and her kernel's reveals, but the service never showed bob a truth.
    Where the service is the answer key only its own reveals count, and the truths bob's
    notebook shows earn no correctness points."""
    from autograder.integrity.predictions import Rule

    url, store = service
    work(notebook_folder, first=4.0)                 # ann's work, off the hub
    record = read_record(notebook_folder, "lesson", QUESTIONS)
    on_hub(monkeypatch, url, token="tok-bob")
    for e in P.load_record(notebook_folder / P.RECORD_FILE):      # replayed, event by event, as bob
        assert L.post(e, notebook_folder)
    entries = G.load(str(store))["bob"]
    assert {e["kind"] for e in entries} == {"commit", "reveal"} and not any(e.get("by") for e in entries)
    record.shown = ["hello_q1"]                      # her verify cell's output, handed in with it
    as_before = G.graded_record(entries, QUESTIONS, record)
    assert _graded(as_before, entries, 4.0).rule is Rule.COMMITTED          # kernels' reveals counted: paid
    graded = G.graded_record(entries, QUESTIONS, record, answers_from_the_service=True)
    assert graded.foreign == ["hello_q1"]
    d = _graded(graded, entries, 4.0)
    assert d.withheld and d.rule is Rule.SHOWN and "never showed it" in d.reason.message, d
    # and the grader learns that the service is the answer key from the ledger's folder
    assert G.answers_from_service(str(store.parent)) is False
    (store / G.ANSWER_KEY_MARKER).write_text("")
    assert G.answers_from_service(str(store.parent)) is True
