"""Benchmark: what the course service costs a student, per commit and per reveal.

    .venv/bin/python benchmarks/service_bench.py [--repeats 30]

The service (course_hub.service, ledger and answer key) runs on 127.0.0.1 in this process's
thread behind a stand-in for the hub's token check (tests/service_thread.py), as the tests run it;
the hub's own token check (one cached request to the hub per minute per token) is not included.

* commit: course_lib's commit of one answer (the record file, the receipt) with the post to the
  ledger, against the same commit with no service advertised;
* reveal: the truth of one question as a student's kernel gets it from the service (HTTP, the
  service's ledger check, the reveal recorded with fsync, solving, the arithmetic as text),
  against solving it in the kernel as the instructor's copy does.

Medians over the repeats, per question; compare within one run (the machine may be shared).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))     # the service in a thread is a test helper (tests/service_thread.py)
from service_thread import running  # noqa: E402

QUESTIONS = ("hello_q2", "wall_q1", "phases_q3", "quant_q5")


def median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=30)
    args = p.parse_args(argv)

    from course_lib import ledger as L
    from course_lib.exercises import predictions as P
    from course_lib.questions import get
    from course_lib.questions.key import from_service, solution_data

    tokens = {"tok": {"kind": "user", "name": "ann", "scopes": ["access:services!service=course"]}}
    with tempfile.TemporaryDirectory() as tmp:
        store, work = Path(tmp) / "store", Path(tmp) / "ann" / "lesson"
        store.mkdir()
        work.mkdir(parents=True)
        P._HERE = work
        for q in QUESTIONS:             # warm: imports, the lesson modules, the first solve
            get(q).solution()
        with running(store, tokens, "course", answer_key=True) as url:
            values = iter(range(10**6))

            def commit():
                P.commit("hello_q1", {"q1_x": float(next(values))}, "a reason")

            os.environ.pop(L.URL_ENV, None)
            alone = median_ms(commit, args.repeats)
            os.environ[L.URL_ENV], os.environ[L.TOKEN_ENV] = url, "tok"
            posted = median_ms(commit, args.repeats)
            print(f"commit, no service:      {alone:7.2f} ms")
            print(f"commit, posted to it:    {posted:7.2f} ms  (+{posted - alone:.2f} ms, {posted / alone:.1f}x)")
            for q in QUESTIONS:
                P.commit(q, {"x": 1.0}, "a reason")             # the service answers committed questions only
                local = median_ms(lambda: solution_data(get(q).solution()), args.repeats)
                served = median_ms(lambda: from_service(q, work), args.repeats)
                print(f"reveal {q:10s} in the kernel {local:7.2f} ms, from the service {served:7.2f} ms "
                      f"(+{served - local:.2f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
