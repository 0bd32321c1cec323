"""A determined student against the grader (issue 16), through the real grading path: one class
of t3 (course_lib's own checks) graded sandboxed, as root, with two workers, then fed back and
reported. Honest students are graded in the same run as the attackers and must keep full marks.

The attacks: a display note updated with the hidden tests' source (base64 of zlib) by a
pre_run_cell hook; a json.py handed in beside the notebook; links to /etc/shadow and to the
solution and a FIFO in submitted/; a kernel that holds every thread it may; one that fills its
home and writes into its run directory; 300 outputs of 95,000 characters; a formula as an
answer (CSV injection); two cells with one grade_id; a kernel that replaces the answer recorder
with one recording a unit pint would evaluate forever; HTML and JavaScript in outputs and in a
written answer.
"""
from __future__ import annotations

import base64
import csv
import html
import json
import os
import re
import zlib
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.outputs.feedback import leaked_lines, source_secrets
from autograder.grading.grade import cell_scores
from autograder.outputs.page_safety import WRAPPER_CLASS
from tiny_course import FAST, SANDBOX, WHY_NOT, make_course, run_cli, student_nb, write_class

pytestmark = [pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning"),
              pytest.mark.skipif(not SANDBOX, reason=f"the attacks run sandboxed: no working bubblewrap here: {WHY_NOT}"),
              pytest.mark.skipif(os.geteuid() != 0, reason="the attacks are graded as root (as in CI), as the red team did")]

Q1, Q2, REFLECTION = "t3units_q1_answer", "t3units_q2_answer", "t3units_q2_reflection"
RIGHT = {Q1: "from course_lib import Q_\nq1_time = Q_(7.36, 'ms')\nq1_regime = 'memory-bound'",
         Q2: "q2_bytes = Q_(16, 'GB')", REFLECTION: "Datasheets count bytes in powers of ten."}
CELLS = ("t3units_q1_form", "t3units_q1_correct", "t3units_q2_correct")
FULL = (1, 2, 2)
HIDDEN_MARKERS = ("HIDDEN-Q1-TIME", "HIDDEN-Q1-REGIME", "HIDDEN-Q2-GIB", "check_regime(q1_regime")

# an early note with a display_id, updated before every later cell with everything run so far
DISPLAY = (
    "import base64 as _b, zlib as _z\n"
    "from IPython.display import display as _d, update_display as _u\n"
    "_seen = []\n"
    "_d({'text/plain': 'NOTE-START'}, raw=True, display_id='note')\n"
    "def _leak(info):\n"
    "    _seen.append(info.raw_cell)\n"
    "    _blob = _b.b64encode(_z.compress('\\n'.join(_seen).encode())).decode()\n"
    "    _u({'text/plain': 'NOTE ' + _blob, 'text/html': '<pre>NOTE ' + _blob + '</pre>'}, raw=True,\n"
    "       metadata={'leak': _blob}, display_id='note')\n"
    "get_ipython().events.register('pre_run_cell', _leak)\n"
)
# imported as root by the sandbox's first program before the fix: it refuses to be
JSON_PY = (
    "import os as _os, sys as _sys\n"
    "if _os.getuid() == 0:\n"
    "    raise SystemExit('JSONPY-RAN-AS-ROOT')\n"
    "_here = _os.path.dirname(_os.path.abspath(__file__))\n"
    "_sys.modules.pop('json')\n"
    "_saved = _sys.path[:]\n"
    "_sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or '.') != _here]\n"
    "import json as _real\n"
    "_sys.path[:] = _saved\n"
    "_sys.modules['json'] = _real\n"
)
LINKS = ("import os\nfor _n in ('shadow.txt', 'solution.ipynb', 'pipe'):\n"
         "    print(_n, 'PRESENT' if os.path.lexists(_n) else 'ABSENT')\n"
         "    if os.path.isfile(_n):\n        print(open(_n).read()[:3000])\n")
HOG = ("import threading, time\nthreading.stack_size(64 * 1024)\n_ev = threading.Event()\n_n = 0\ntry:\n"
       "    while _n < 5000:\n        threading.Thread(target=_ev.wait, daemon=True).start()\n        _n += 1\n"
       "except RuntimeError:\n    pass\nprint('HOG-THREADS', _n)\ntime.sleep(6)\n_ev.set()\n")
DISK = ("import os\nfrom ipykernel.connect import get_connection_file\n"
        "_run = os.path.dirname(get_connection_file())\n"
        "try:\n    with open(os.path.join(_run, 'filler'), 'wb') as _f:\n        _f.write(b'x' * 2**20)\n"
        "    print('RUNDIR-WRITABLE')\nexcept OSError:\n    print('RUNDIR-LOCKED')\n"
        "_mb = 0\nfor _i in range(3):\n    try:\n"
        "        with open(os.path.expanduser(f'~/filler{_i}'), 'wb') as _f:\n"
        "            for _ in range(40):\n                _f.write(b'x' * 2**20)\n                _f.flush()\n"
        "                _mb += 1\n    except OSError:\n        break\n"
        "print('HOME-WROTE', _mb)\n"
        "for _i in range(3):\n    try:\n        os.remove(os.path.expanduser(f'~/filler{_i}'))\n"
        "    except OSError:\n        pass\n")
DISK_MB = 64          # --disk for this class: the filler above tries 120 MB
OUTPUTS = ("from IPython.display import display\nfor _i in range(300):\n"
           "    display({'text/plain': 'y' * 95000}, raw=True)\n")
FORMULA = '=HYPERLINK("http://127.0.0.1:9/x","click")'
RECORDER = (   # the module the grader calls
    "import course_lib.exercises.answers as _a, json as _j\n"
    "_a.record = lambda names, ns: _j.dumps({n: {'value': {'type': 'quantity', 'magnitude': {'type': 'int', "
    "'value': 16}, 'units': 'meter ** (9 ** 9 ** 9)'}} for n in names})\n"
)
HTML_OUT = ("from IPython.display import HTML, Javascript, display\n"
            "display(HTML('<b>bold</b><img src=x onerror=\"window.PWNED=1\"><script>window.PWNED=2</script>'))\n"
            "display(Javascript('window.PWNED=3'))\n")
HTML_REFLECTION = "Powers of ten. <img src=x onerror=\"window.PWNED=4\"><script>window.PWNED=5</script>"

EXPECTED = {"right": FULL, "right2": FULL, "display": FULL, "jsonpy": FULL, "links": FULL, "hog": FULL, "disk": FULL,
            "outputs": FULL, "formula": (1, 0, 2), "dupgid": FULL, "recorder": (1, 2, 0), "html": FULL}
HONEST = ("right", "right2")


def _answers(**over):
    return {**RIGHT, **over}


def _duplicate_answer_cell(data: bytes) -> bytes:
    nb = nbformat.reads(data.decode(), as_version=4)
    i = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == Q2)
    nb.cells.insert(i + 1, nbformat.from_dict(json.loads(json.dumps(nb.cells[i]))))   # same grade_id, same id
    return json.dumps(nbformat.from_dict(nb), indent=1).encode()


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    base = tmp_path_factory.mktemp("attacks")
    course = make_course(base / "tiny")
    c = Course(root=base / "course", source=course.source, release=course.release)
    nb = lambda **kw: student_nb(course, "t3", "units", **kw)  # noqa: E731
    collected = {
        "right": nb(answers=RIGHT),
        "right2": nb(answers=RIGHT),
        "display": nb(answers=_answers(**{Q1: DISPLAY + RIGHT[Q1]})),
        "hog": nb(answers=RIGHT, explore=HOG),
        "disk": nb(answers=RIGHT, explore=DISK),
        "outputs": nb(answers=RIGHT, explore=OUTPUTS),
        "formula": nb(answers=_answers(**{Q1: RIGHT[Q1].replace("'memory-bound'", repr(FORMULA))})),
        "recorder": nb(answers=_answers(**{Q2: RIGHT[Q2] + "\n" + RECORDER})),
        "html": nb(answers=_answers(**{REFLECTION: HTML_REFLECTION}), explore=HTML_OUT),
    }
    src = write_class(base / "in", course, "t3", {s: {"units.ipynb": d} for s, d in collected.items()})
    common = ["--root", c.root, "--source", c.source, "--release-dir", c.release]
    run_cli("collect", "t3", src, *common)
    # what reaches submitted/ by other ways (plain nbgrader collect, a hand copy): no collect checked it
    by_hand = c.submitted / "jsonpy" / "t3"
    by_hand.mkdir(parents=True)
    (by_hand / "units.ipynb").write_bytes(nb(answers=RIGHT))
    (by_hand / "json.py").write_text(JSON_PY)
    links = c.submitted / "links" / "t3"
    links.mkdir(parents=True)
    (links / "units.ipynb").write_bytes(nb(answers=RIGHT, explore=LINKS))
    os.symlink("/etc/shadow", links / "shadow.txt")
    os.symlink(course.source / "t3" / "units.ipynb", links / "solution.ipynb")
    os.mkfifo(links / "pipe")
    dup = c.submitted / "dupgid" / "t3"
    dup.mkdir(parents=True)
    (dup / "units.ipynb").write_bytes(_duplicate_answer_cell(nb(answers=RIGHT)))
    g = run_cli("grade", "t3", *common, *FAST, "-j", "2", "--disk", DISK_MB, "--out", base / "grades.csv",
                check=False, timeout=1200)
    fb = run_cli("feedback", "t3", *common, check=False)
    rep = run_cli("report", "t3", *common, check=False)
    return {"base": base, "course": c, "grade": g, "feedback": fb, "report": rep}


def _page(run, student) -> str:
    return (run["course"].feedback / student / "t3" / "units.html").read_text()


def _autograded(run, student):
    return nbformat.read(str(run["course"].autograded / student / "t3" / "units.ipynb"), as_version=4)


def test_every_submission_is_graded_and_the_honest_keep_full_marks(attacked):
    g = attacked["grade"]
    assert f"graded {len(EXPECTED)}, up to date 0, failed 0" in g.stdout, g.stdout + g.stderr[-3000:]
    scores = cell_scores(attacked["course"].db_url, "t3")
    got = {s: tuple(scores[s][f"units/{c}"] for c in CELLS) for s in EXPECTED}
    assert got == EXPECTED
    assert all(got[s] == FULL for s in HONEST)


def _decoded_notes(text: str) -> str:
    out = []
    for blob in re.findall(r"NOTE ([A-Za-z0-9+/=]{8,})", text):
        out.append(zlib.decompress(base64.b64decode(blob)).decode())
    return "\n".join(out)


def test_a_display_updated_by_a_hook_during_the_hidden_tests_leaks_nothing(attacked):
    """The note shows what the hook saw before the first hidden test, and nothing after."""
    page = _page(attacked, "display")
    decoded = _decoded_notes(page)
    assert "check_form_number" in decoded, "the hook's note never showed a visible cell: the test proves nothing"
    for marker in HIDDEN_MARKERS:
        assert marker not in decoded and marker not in page
    assert not leaked_lines(page, source_secrets(attacked["course"], "t3", "display"))
    assert "WITHHELD" not in attacked["feedback"].stdout and attacked["feedback"].returncode == 0
    # the stored notebook's note too (metadata included): fixed when the first hidden test started
    book = _autograded(attacked, "display")
    note_cell = next(c for c in book.cells if "display_id='note'" in c.source)
    stored = json.dumps(note_cell.outputs)
    assert "NOTE" in stored
    assert not any(m in _decoded_notes(stored.replace("\\n", "\n")) for m in HIDDEN_MARKERS)
    for out in note_cell.outputs:
        blob = (out.get("metadata") or {}).get("leak")
        if blob:
            assert not any(m in zlib.decompress(base64.b64decode(blob)).decode() for m in HIDDEN_MARKERS)


def test_the_leak_check_decodes_base64_zlib_and_hex(attacked):
    secrets = source_secrets(attacked["course"], "t3")
    line = next(s for s in secrets if "HIDDEN-Q1-TIME" in s)
    packed = base64.b64encode(zlib.compress(f"x\n{line}\ny".encode())).decode()
    assert leaked_lines(f"<pre>NOTE {packed}</pre>", secrets) == [line]
    assert leaked_lines(f"<p>{line.encode().hex()}</p>", secrets) == [line]
    assert leaked_lines("<p>" + "\n".join(packed[i:i + 40] for i in range(0, len(packed), 40)) + "</p>", secrets) == [line]


def test_a_json_py_beside_the_notebook_never_runs_as_root(attacked):
    assert EXPECTED["jsonpy"] == FULL
    log = (attacked["course"].state / "t3" / "logs" / "jsonpy.log").read_text()
    assert "JSONPY-RAN-AS-ROOT" not in log + attacked["grade"].stdout + attacked["grade"].stderr


def test_links_and_special_files_in_submitted_are_refused_and_reported(attacked):
    out = attacked["grade"].stdout
    for name, kind in (("shadow.txt", "a symbolic link"), ("solution.ipynb", "a symbolic link"), ("pipe", "a FIFO")):
        assert re.search(rf"WARNING: links {name}: {kind}: refused", out), out
    page = _page(attacked, "links")
    text = re.sub(r"<[^>]+>", "", page)
    for name in ("shadow.txt", "solution.ipynb", "pipe"):
        assert f"{name} ABSENT" in text, text[-3000:]
    shadow = Path("/etc/shadow").read_text()
    assert shadow.split(":")[0] + ":" in shadow            # root:... -- something to look for
    for first in [l for l in shadow.splitlines() if len(l) > 20][:3]:
        assert first not in page
    for marker in HIDDEN_MARKERS:
        assert marker not in page
    kept = {p.name for p in (attacked["course"].autograded / "links" / "t3").iterdir()}
    assert not kept & {"shadow.txt", "solution.ipynb", "pipe"}, kept


def _printed(run, student, prefix) -> str:
    page = re.sub(r"<[^>]+>", "", _page(run, student))
    found = re.findall(rf"{prefix} ?(\S*)", page)
    assert found, f"{prefix} not on {student}'s page"
    return found[-1]          # what the cell printed, after its source


def test_a_kernel_holding_every_thread_it_may_does_not_fail_another(attacked):
    assert int(_printed(attacked, "hog", "HOG-THREADS")) > 200      # it did hold (nearly) all it may
    assert "FAILED" not in attacked["grade"].stdout


def test_a_kernel_cannot_fill_the_disk(attacked):
    assert _printed(attacked, "disk", "RUNDIR-") == "LOCKED"
    wrote = int(_printed(attacked, "disk", "HOME-WROTE"))
    assert 0 < wrote <= DISK_MB, wrote


def test_outputs_are_capped_per_notebook_in_the_stored_notebook_and_the_page(attacked):
    stored = attacked["course"].autograded / "outputs" / "t3" / "units.ipynb"
    page = attacked["course"].feedback / "outputs" / "t3" / "units.html"
    assert stored.stat().st_size < 4 * 2**20 and page.stat().st_size < 4 * 2**20
    assert "outputs dropped by the grader" in page.read_text()


def test_no_csv_cell_starts_a_formula(attacked):
    reports = attacked["course"].root / "reports" / "t3"
    files = [attacked["base"] / "grades.csv"] + sorted(reports.glob("*.csv"))
    seen = ""
    for f in files:
        text = f.read_text()
        seen += text
        for row in csv.reader(text.splitlines()):
            for value in row:
                assert not value.startswith(("=", "+", "@")) and not re.match(r"-[^0-9.]", value), (f, value)
    assert "HYPERLINK" in seen, "the formula answer reached no CSV: the test proves nothing"


def test_two_cells_with_one_grade_id_are_repaired_with_a_note(attacked):
    assert re.search(r"repaired: dupgid units: cell \d+ repeats grade_id 't3units_q2_answer'", attacked["grade"].stdout)


def test_a_replaced_recorder_is_flagged_and_its_unit_never_parsed(attacked):
    out = attacked["grade"].stdout
    assert re.search(r"WARNING: recorder units: the kernel replaced the answer recorder", out), out
    status = json.loads((attacked["course"].state / "t3" / "recorder.json").read_text())
    assert status["status"] == "graded"


def test_student_html_and_javascript_cannot_run_in_the_pages(attacked):
    page = _page(attacked, "html")
    assert "Content-Security-Policy" in page and "script-src 'none'" in page and "<script" not in page.lower()
    assert not re.search(r"<script[^>]*>[^<]*PWNED", page)
    assert not re.search(r"<[a-z][^>]*\son[a-z]+\s*=", page, re.IGNORECASE), \
        re.findall(r"<[a-z][^>]*\son[a-z]+\s*=[^>]*>", page, re.IGNORECASE)[:3]
    assert "Powers of ten." in page          # the written answer is there, without its handler and script
    # the autograded notebook the formgrader shows the instructor: no script output, the answer
    # rebuilt from the allow-list (autograder.outputs.page_safety)
    book = _autograded(attacked, "html")
    stored = json.dumps([c.get("outputs", []) for c in book.cells if c.cell_type == "code"])
    assert "application/javascript" not in stored and "onerror" not in stored and "<b>bold</b>" in stored
    answer = next(c for c in book.cells if c.metadata.get("nbgrader", {}).get("grade_id") == REFLECTION)
    assert answer.source.startswith(f'<div class="{WRAPPER_CLASS}">') and "Powers of ten." in answer.source
    assert "onerror" not in answer.source and "PWNED" not in html.unescape(answer.source)
