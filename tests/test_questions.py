"""Predict before you see: the graded questions declared in course_lib.questions.

* every listed mistake fails its question's tolerance, with margin (a tolerance that accepts
  the mistake it names could never catch it);
* a lesson whose questions are declared uses them in one line each (form check, hidden test,
  verify), so no verify cell's source states an answer, a regime or a method before it runs;
* nothing a student sees above an answer cell -- markdown, the outputs of every cell above,
  earlier questions' verify output included -- shows that question's numeric answer, or says a
  post-reveal explanation of it: with the lesson's own numbers, and with a student's own variant
  where the lesson's questions have a parameter space;
* reading ahead shows nothing either (issue 31): each lesson's release notebook run blank in a
  kernel, every cell, errors allowed (Run All past the stops), with the lesson's own numbers and
  with a student's variant: no markdown cell and no output (text, HTML tables, figures' alt text
  and data tables, widgets' state) states a numeric answer (in any unit of its dimension, to 3
  significant digits or the answer's tolerance) or a regime or choice answer on a line that names
  its question's setting; and answering in order (the solution run, with both numbers), none
  shows above a question's verify cell (slow tier; the prose alone is checked in the fast tier);
* nor does the kernel (issue 45): after that blank Run All, and after each question answered in
  order and the cells below it run, no variable of the namespace (numbers, Quantities, arrays,
  lists, dicts, dataclasses, strings and reprs) holds an answer not yet revealed, with the
  lesson's own numbers and a student's variant: a cell computes what answers a question only
  once its truth is shown (slow tier);
* the README's lesson table says what each lesson teaches to predict, not the answers; a verify
  cell of another lesson's question refuses, and a gate on one reads that lesson's record;
* skipping every question as the header says (from the cell after its verify cell, Run Selected
  Cell and All Below) runs the rest of each lesson without an error (slow tier).
"""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from course_lib.exercises.answer_forms import Choice, Number, Ratio, Reason, Regime
from course_lib.questions import all_questions, lesson_questions
from course_lib.questions.registry import lessons
from course_lib.exercises.question_ids import metadata as meta, question_of
from lesson_questions import SOLUTIONS, strip_delimiters
from autograder.authoring.cells import read_source

QUESTIONS = all_questions()
DECLARED_PREFIXES = {qid.split("_", 1)[0] for qid in QUESTIONS}
#: a listed mistake must sit at least this many tolerances away from the truth
MARGIN = 1.5


def _values(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


@pytest.mark.parametrize("qid", sorted(QUESTIONS))
def test_no_tolerance_accepts_a_listed_mistake(qid):
    q = QUESTIONS[qid]
    sol = q.solution()
    for name in q.answer_names:
        spec, t = q.specs[name], sol.truths[name]
        truth = spec.read_truth(t.value)
        catches = False
        for label, values in t.mistakes.items():
            for v in _values(values):
                if v is None:
                    continue
                wrong = spec.read_truth(v)
                if isinstance(spec, Number):
                    off = abs(wrong / truth - 1) if truth else abs(wrong)
                    assert off >= MARGIN * spec.rel_tol, (
                        f"{qid} {name}: the mistake {label!r} gives {wrong:.4g} against the truth {truth:.4g} "
                        f"({off:.1%} off), inside {MARGIN} x its tolerance {spec.rel_tol:.0%}: re-ask the question")
                    catches = True
                else:
                    catches |= wrong != truth
        if isinstance(spec, (Regime, Choice)) and t.mistakes:
            others = [n for n in q.answer_names if n != name]
            assert catches or others, f"{qid} {name}: no listed mistake differs from the truth"


@pytest.mark.parametrize("qid", sorted(QUESTIONS))
def test_a_question_declares_what_its_cells_need(qid):
    q = QUESTIONS[qid]
    sol = q.solution()
    assert sol.hint, f"{qid}: a wrong answer that matches no mistake gets the hint; it has none"
    assert sol.work is not None, f"{qid}: its verify cell should show the arithmetic (work)"
    for name in q.answer_names:
        assert sol.truths[name].explanation, f"{qid} {name}: no explanation for after the reveal"
    assert any(isinstance(s, Reason) for s in q.specs.values()) or q.rule == "by-hand", \
        f"{qid}: a prediction asks for its reasoning (a Reason() spec)"


# ---- the notebooks --------------------------------------------------------------------------------
CONVERTED = [p for p in SOLUTIONS if p.stem and any(
    meta(c).get("grade_id", "").split("_", 1)[0] in DECLARED_PREFIXES
    for c in read_source(p).cells)]
ONE_LINER = {
    "form": 'from course_lib.questions import check_form\ncheck_form("{qid}")',
    "correct": 'from course_lib.questions import grade\ngrade("{qid}")',
    "verify": 'from course_lib.questions import show\nshow("{qid}")',
}
ROLE = re.compile(r"^([a-z]+_q\d+[a-z]?)_(form|correct|verify)$")


def _code(source: str) -> str:
    lines = [l for l in strip_delimiters(source).splitlines() if l.strip() and not l.lstrip().startswith("#")]
    return "\n".join(lines)


@pytest.mark.parametrize("path", CONVERTED, ids=lambda p: p.parent.name)
def test_declared_questions_use_one_line_cells(path):
    import nbformat

    nb = read_source(path)
    seen = {}
    for cell in nb.cells:
        hit = ROLE.match(meta(cell).get("grade_id", ""))
        if not hit or hit.group(1) not in QUESTIONS:
            continue
        qid, role = hit.groups()
        seen.setdefault(qid, set()).add(role)
        assert _code(cell.source) == ONE_LINER[role].format(qid=qid), \
            f"{meta(cell)['grade_id']}: a declared question's {role} cell is the one-line call, got:\n{cell.source}"
    prefix = path.parent.name
    for qid in (q for q in QUESTIONS if any(q.startswith(p + "_") for p in {k.split('_')[0] for k in seen})):
        assert seen.get(qid) == {"form", "correct", "verify"}, f"{prefix}: {qid} lacks cells: {seen.get(qid)}"


NUMBER = re.compile(r"(?<![\w.])([-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?)"
                    r"\s?(x\b|×|[A-Za-z/%]+(?:/[A-Za-z]+)?)?")
ALIASES = {"byte": {"B", "bytes", "byte"}, "FLOP/byte": {"FLOP/byte", "FLOP/B"}}


def _numbers(text: str):
    """(printed text, value, unit or None, whether it stands as a result: after '=' or '->')."""
    for m in NUMBER.finditer(text):
        s, unit = m.group(1), m.group(2)
        before = text[max(0, m.start() - 3):m.start()]
        yield s, float(s.replace(",", "")), unit, ("=" in before or "->" in before)


def _gives_away(spec, value: float, unit, result: bool, truth: float) -> bool:
    if not truth or abs(value / truth - 1) > max(spec.rel_tol, 0.005):
        return False
    if isinstance(spec, Ratio):
        return unit in ("x", "×") or (result and unit is None)
    if spec.units:
        return unit in ALIASES.get(spec.units, {spec.units}) or (result and unit is None)
    return result


def _run_lesson(path, printed=None):
    """Execute a solution notebook in this process as a student who answers with the solution
    would see it, cell by cell; yields (cell, visible text before this cell). What each code
    cell prints is also appended to `printed`, where given."""
    import matplotlib
    import nbformat

    matplotlib.use("Agg")
    nb = read_source(path)
    ns: dict = {"__name__": "__lesson__"}
    shown: list[str] = []
    for cell in nb.cells:
        m = meta(cell)
        yield cell, "\n".join(shown)
        if cell.cell_type == "markdown":
            if not m.get("solution"):           # a student's own written answer is theirs
                shown.append(cell.source)
            continue
        gid = m.get("grade_id", "")
        if gid.endswith("_correct"):            # hidden tests are not in the student's notebook
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(strip_delimiters(cell.source), f"<{path.stem}:{gid or 'cell'}>", "exec"), ns)
        shown.append(out.getvalue())
        if printed is not None:
            printed.append(out.getvalue())


def leaks(path, solution=None) -> list[str]:
    """What a student running the lesson sees of an answer before its answer cell, the truths
    being `solution(question)`'s, by default those of whoever runs it
    (course_lib.questions.variants: the lesson's own without an id)."""
    from course_lib.questions import variant

    solution = solution or (lambda q: q.solution(**variant(q.id)))
    problems = []
    for cell, before in _run_lesson(path):
        hit = re.match(r"^([a-z]+_q\d+[a-z]?)_(prediction|answer)$", meta(cell).get("grade_id", ""))
        if not hit or hit.group(1) not in QUESTIONS:
            continue
        q = QUESTIONS[hit.group(1)]
        sol = solution(q)
        for name in q.answer_names:
            spec, t = q.specs[name], sol.truths[name]
            for sentence in re.split(r"(?<=[.:;])\s+", t.explanation):
                if len(sentence) > 30 and sentence in before:
                    problems.append(f"{q.id} {name}: its explanation is on screen before the commit: {sentence!r}")
            if not isinstance(spec, Number):
                continue
            truth = spec.read_truth(t.value)
            for text, value, unit, result in _numbers(before):
                if _gives_away(spec, value, unit, result, truth):
                    problems.append(f"{q.id} {name}: {text!r} {unit or ''} is on screen before the answer cell "
                                    f"(the answer is {truth:.4g} {spec.units or ''}, tolerance {spec.rel_tol:.0%})")
    return problems


@pytest.mark.parametrize("path", CONVERTED, ids=lambda p: p.parent.name)
def test_nothing_above_an_answer_cell_gives_its_answer_away(path, monkeypatch):
    from course_lib.questions import variants as V

    monkeypatch.delenv(V.KEY_ENV, raising=False)         # the lesson's own numbers
    problems = leaks(path)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", CONVERTED, ids=lambda p: p.parent.name)
def test_printed_numbers_read_as_words_not_python(path):
    """What the cells print says "never" or names a chip where Python would print inf, nan or
    None (lesson 1's Q7 verify printed "crossover batch inf"; a measured machine's ridge label
    read "None ridge 10.1")."""
    printed: list[str] = []
    for _ in _run_lesson(path, printed):
        pass
    artefacts = re.findall(r"[^\n]*(?<![\w.'\"])(?:inf|nan|None)(?![\w'\"(])[^\n]*", "\n".join(printed))
    assert not artefacts, "\n".join(artefacts)


def _spaced(path) -> list[str]:
    import nbformat

    ids = {meta(c).get("grade_id", "").rsplit("_", 1)[0] for c in read_source(path).cells}
    return sorted(q for q in ids & set(QUESTIONS) if QUESTIONS[q].space)


@pytest.mark.parametrize("path", [p for p in CONVERTED if _spaced(p)], ids=lambda p: p.parent.name)
def test_nor_in_a_students_own_variant(path, monkeypatch):
    """The same, run as a student whose every question with a space has other numbers than the
    lesson's own: the given cells and the verify cells above an answer cell show that student's
    numbers, and none of them gives that student's answer away."""
    from course_lib.questions import student_key
    from course_lib.questions import variants as V

    spaced = _spaced(path)
    keys = (student_key(b"the leak test's course secret", f"s{i}") for i in range(2000))
    key = next(k for k in keys if all(V.draw(k, q) != QUESTIONS[q].givens for q in spaced))
    monkeypatch.setenv(V.KEY_ENV, key)
    monkeypatch.setenv(V.STUDENT_ENV, "leak-check")
    assert all(V.current(q) != QUESTIONS[q].givens for q in spaced)
    problems = leaks(path)
    assert not problems, "\n".join(problems)


# ---- read ahead: the whole lesson, run blank -------------------------------------------------------
# A student who scrolls down, or runs every cell below a question before answering it ("Run All"
# past the stops), sees the markdown and every cell's output with nothing committed and nothing
# revealed. None of it may state a question's answer: a numeric answer (as `_gives_away` reads
# one, in any unit of its dimension), nor a regime or choice stated with its question's setting.
RELEASED = {p.parent.name: p for p in sorted((SOLUTIONS[0].parent.parent.parent / "notebooks").glob("*/*.ipynb"))}
TAG = re.compile(r"<[^>]+>")


def _setting_words(qid: str, name: str, g: dict) -> list[str]:
    """What a line must also say to state the regime or choice answer `name` of `qid` as its
    answer: regular expressions, all on the line with the answer, from the question's givens
    `g` (and "truth", the answer)."""
    chip = lambda: rf"\b{re.escape(str(g['chip']))}\b"                                   # noqa: E731
    num = lambda v: rf"(?<![\d.,]){v:,}(?![\d.,])|(?<![\d.,]){v}(?![\d.,])"            # noqa: E731
    batch = lambda v: rf"\b(?:batch|b)\s*(?:=\s*|size\s*)?{v}(?![\d.])"                  # noqa: E731
    words = {
        "hello_q3": lambda: [rf"\bM\s*=\s*{g['truth']}\b", r"bound"],
        "hello_q4": lambda: [chip(), batch(g["batch"])],
        "hello_q7": lambda: [chip(), batch(g["batch"])],
        "hello_q8": lambda: [r"bound|intensity|FLOP/B"],
        "mach_q3": lambda: [r"\bdot\b" if name == "q3_dot_regime" else r"matmul|matrix"],
        "mach_q4": lambda: [rf"\d\s*{'KiB' if name == 'q4_small_level' else '(?:MiB|GiB)'}\s+in\s+{g['truth']}\b"],
        "mach_q6": lambda: [r"ridge"],
        "phases_q1": lambda: [r"prefill|decode", num(g["prompt"])],
        "phases_q7": lambda: [{"q7_chatbot": "chatbot", "q7_summarizer": "summari", "q7_classifier": "classif"}[name]],
        "phases_q8": lambda: [batch(g["batch"])],
        "quant_q1": lambda: [r"decode|generat", num(g["prompt"])],
        "quant_q5": lambda: [batch(g["batch"])],
        "scale_q3": lambda: [r"decode|generat|one token" if name == "q3_decode" else r"prefill|prompt"],
        "wall_q4": lambda: [r"ridge"],
        "wall_q5": lambda: [r"ridge", rf"\b{g['new']}\b"],
        "wall_q7": lambda: [r"chatbot" if name == "q7_chatbot" else r"offline"],
    }
    # a regime or choice question of a new lesson: its answer alone on a line is a leak until it
    # gets words of its own here
    return words[qid]() if qid in words else []


#: a table's columns that say where a row stands, not what it finds (no result stands in them)
SETTING_COLUMNS = {"layer", "batch", "batch size", "workload", "chip", "model", "name", "context", "prompt", "m", "n", "size"}
#: questions whose answer is a given in other units (the question asks to convert it): their
#: answer counts as stated only in the answer's own unit
CONVERTS_A_GIVEN = {"phases_q5": "nvidia-smi's memory is given in MiB, the answer asked in GB"}


def _unit_of(header: str) -> str | None:
    """The unit a table column's header names: 'attainable (TFLOP/s)' -> 'TFLOP/s', 'MB' -> 'MB'."""
    hit = re.search(r"\(([^()]+)\)\s*$", header)
    unit = hit.group(1) if hit else header
    return unit if re.fullmatch(r"[A-Za-z]+(?:/[A-Za-z]+)?", unit) and unit.lower() not in {
        "layer", "bound", "regime", "batch", "workload", "time", "chip", "model", "name"} else None


def _table_rows(html: str) -> list[str]:
    """Each row of each <table> in `html` as "caption: header = value; header = value; ..." (a
    value under its column's header stands as a result, as after '=')."""
    import html as H

    text = lambda s: re.sub(r"\s+", " ", H.unescape(TAG.sub(" ", s))).strip()     # noqa: E731
    rows = []
    for table in re.findall(r"(?is)<table.*?</table>", html):
        caption = text(" ".join(re.findall(r"(?is)<caption>(.*?)</caption>", table)))
        header = [text(h) for h in re.findall(r"(?is)<th[^>]*>(.*?)</th>", table)]
        for row in re.findall(r"(?is)<tr[^>]*>(.*?)</tr>", table):
            cells = [text(c) for c in re.findall(r"(?is)<td[^>]*>(.*?)</td>", row)]
            if cells:
                heads = header[-len(cells):] if header else [""] * len(cells)
                pairs = [f"{h} {c}" if h.lower().split(" (")[0] in SETTING_COLUMNS else
                         f"{h} = {c}" + (f" {_unit_of(h)}" if _unit_of(h) and not re.search(r"[A-Za-z%]", c) else "")
                         for h, c in zip(heads, cells)]
                rows.append(f"{caption}: " + "; ".join(pairs))
    return rows


def _chunks(text: str, html: bool = False) -> list[str]:
    """A text cut where a statement ends: table rows (a plain-text table's row led by its first
    column's name), lines, sentences; an image's alt text on its own."""
    import html as H

    out = []
    if html:
        out += _table_rows(text)
        text = re.sub(r"(?is)<table.*?</table>", "\n", text)
        text = re.sub(r'alt="([^"]*)"', lambda m: "\n" + m.group(1) + "\n", text)
        text = re.sub(r"(?i)<br\s*/?>|</p>|</li>|</div>|</caption>|</h\d>|</summary>", "\n", text)
        text = H.unescape(TAG.sub(" ", text))
    column = None
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2 and not re.search(r"\d", line):
            column = words[0]                     # a plain-text table's header
        elif column and words and re.fullmatch(r"[\d.,]+", words[0]):
            line = f"{column} {line}"
        elif not words:
            column = None
        out.extend(s for s in re.split(r"(?<=[.;!?])\s+(?=[A-Z])", line) if s.strip())
    return out


def _widget_texts(nb) -> dict[str, tuple]:
    """Each widget model's text (value, description, alt text) and children, by model id."""
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    texts = {}
    for mid, model in state.items():
        s = model.get("state", {})
        value = s.get("value")
        value = value if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
        setting = f"{s['description']} {value}" if s.get("description") and value is not None else None
        parts = [str(v) for v in (value, s.get("alt")) if v is not None and setting is None]
        kids = [c[len("IPY_MODEL_"):] for c in s.get("children", []) if isinstance(c, str)]
        texts[mid] = (setting, parts, kids)
    return texts


def _visible(nb):
    """(cell index, where, chunk) for everything a student sees of the run notebook: every markdown cell but
    their own written answers, every output (text, HTML with its alt text and tables, widgets:
    what they show, led by the setting their controls are on)."""
    widgets = _widget_texts(nb)

    def tree(mid, seen):
        if mid in seen or mid not in widgets:
            return
        seen.add(mid)
        yield widgets[mid]
        for k in widgets[mid][2]:
            yield from tree(k, seen)

    for i, cell in enumerate(nb.cells):
        where = f"cell {i} ({meta(cell).get('grade_id') or cell.get('id', '')})"
        if cell.cell_type == "markdown":
            if not meta(cell).get("solution"):
                for c in _chunks(cell.source):
                    yield i, where, c
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                for c in _chunks(out.get("text", "")):
                    yield i, where, c
            elif out.get("output_type") in ("display_data", "execute_result"):
                data = out.get("data", {})
                if "application/vnd.jupyter.widget-view+json" in data:
                    models = list(tree(data["application/vnd.jupyter.widget-view+json"].get("model_id"), set()))
                    setting = "; ".join(s for s, _, _ in models if s)
                    for _, parts, _ in models:
                        for text in parts:
                            for c in _chunks(text, html="<" in text):
                                yield i, f"{where}, the widget at {setting}", f"[{setting}] {c}"
                if "text/html" in data:
                    for c in _chunks(data["text/html"], html=True):
                        yield i, where, c
                elif "text/markdown" in data:
                    for c in _chunks(data["text/markdown"]):
                        yield i, where, c
                elif "text/plain" in data:
                    for c in _chunks(data["text/plain"]):
                        yield i, where, c


def _in_units(spec, truth: float, unit: str | None):
    """The truth in the printed `unit` where it is another unit of the answer's dimension (52.9 us
    printed as 0.0529 ms), else None."""
    if not unit or not spec.units or unit in ALIASES.get(spec.units, {spec.units}):
        return None
    from course_lib import Q_

    try:
        return Q_(truth, spec.units).to(unit).magnitude
    except Exception:
        return None


def read_ahead_leaks(nb, solution, in_order: bool = False) -> list[str]:
    """What the run notebook `nb` shows of any answer before its truth is shown, the truths being
    `solution(question)`'s (None: that question is left out). A blank run (nothing committed)
    reveals nothing; `in_order`: the questions were answered in order, so each one's truth is
    shown from its verify cell on (and its own answer is on screen in its own cells)."""
    prefix = {meta(c).get("grade_id", "").split("_", 1)[0] for c in nb.cells} & DECLARED_PREFIXES
    questions = [q for qid, q in QUESTIONS.items() if qid.split("_", 1)[0] in prefix]
    # the namespace search's answers, without their SI form (a page shows numbers in their units)
    answers = [(q, name, spec, truth, words) for q, name, spec, truth, _, words in _answers(questions, solution)]
    problems = []
    verify_at = {question_of(meta(c).get("grade_id", "")): i for i, c in enumerate(nb.cells)
                 if meta(c).get("grade_id", "").endswith("_verify")}
    for i, where, chunk in _visible(nb):
        for q, name, spec, truth, words in answers:
            if in_order and (verify_at.get(q.id, len(nb.cells)) <= i
                             or question_of(meta(nb.cells[i]).get("grade_id", "")) == q.id):
                continue
            if words is not None:
                options = spec.options if isinstance(spec, Choice) else ("memory-bound", "compute-bound")
                listed = sum(
                    bool(re.search(rf"(?<![\w.-]){re.escape(str(o))}(?![\w-]|\.\d)", chunk)) for o in options) > 1
                if not listed and all(re.search(w, chunk, re.I) for w in words):
                    problems.append(f"{q.id} {name} ({truth!r} with its setting): {where}: {chunk.strip()[:200]!r}")
                continue
            for text, value, unit, result in _numbers(chunk):
                scaled = None if q.id in CONVERTS_A_GIVEN else _in_units(spec, truth, unit)
                hit = (_gives_away(spec, value, None, True, scaled) if scaled is not None else
                       _gives_away(spec, value, unit, result, truth) and not (truth == 1 and unit is None))
                if hit:
                    problems.append(f"{q.id} {name} ({truth:.4g} {spec.units or ''}): {where}: "
                                    f"{text!r} {unit or ''} in {chunk.strip()[:200]!r}")
    return problems


def run_blank(path, folder, nb=None, dump=None):
    """The release notebook `path` run top to bottom in a kernel with nothing answered, errors
    allowed (as Run All past the stops shows it), in a copy of its folder; the notebook run.
    `nb`: run that notebook instead (such as the solution, every question answered). `dump`: a
    file to which the kernel's namespace is written at the end (tests/namespace_dump.py)."""
    import shutil

    import nbformat
    from nbclient import NotebookClient

    work = folder / path.parent.name
    shutil.copytree(path.parent, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints", ".predictions.jsonl"))
    nb = nb if nb is not None else nbformat.read(work / path.name, as_version=4)
    if dump is not None:
        nb.cells.append(_dump_cell(dump))
    NotebookClient(nb, timeout=240, kernel_name="python3", allow_errors=True, store_widget_state=True,
                   resources={"metadata": {"path": str(work)}}).execute()
    if dump is not None:
        nb.cells.pop()
    return nb


# ---- the kernel's namespace (issue 45): what a scratch cell could print ------------------------------
NAMESPACE_DUMP = Path(__file__).with_name("namespace_dump.py")
#: how close a number in the kernel's namespace must be to an answer to count as holding it: an
#: answer computed the lesson's way equals the truth to rounding; anything looser matches by chance
#: the lesson's many unrelated numbers (batches, sizes) and, in lesson 5, the measurement's random
#: figures (a timing of 0.1249 s beside a 0.125 FLOP/byte answer)
NAMESPACE_REL = 1e-6


def _dump_cell(out):
    import nbformat

    return nbformat.v4.new_code_cell(f"exec(open({str(NAMESPACE_DUMP)!r}).read())\n_ns_dump({str(out)!r})")


def _answers(questions, solution):
    """(question, answer name, spec, the truth in the spec's unit, in SI base units or None, words or None)."""
    from course_lib import Q_
    from course_lib.questions import variants as V

    answers = []
    for q in questions:
        sol = solution(q)
        if sol is None:
            continue
        g = {**q.givens, **V.current(q.id)}
        for name in q.answer_names:
            spec, value = q.specs[name], sol.truths[name].value
            if isinstance(spec, Number):
                truth = spec.read_truth(value)
                si = None                # the truth as the library's *_si fields hold it (bytes, not pint's bits)
                for target in ("s", "byte", "byte/s", "FLOP", "FLOP/s", "FLOP/byte") if spec.units else ():
                    try:
                        si = Q_(truth, spec.units).to(target).magnitude
                        break
                    except Exception:
                        continue
                answers.append((q, name, spec, truth, si, None))
            else:
                words = [rf"(?<![\w.-]){re.escape(str(value))}(?![\w-]|\.\d)"]
                answers.append((q, name, spec, value, None, words + _setting_words(q.id, name, {**g, "truth": value})))
    return answers


def _prefix(nb) -> str:
    return next(iter({meta(c).get("grade_id", "").split("_", 1)[0] for c in nb.cells} & DECLARED_PREFIXES))


def _close(x: float, truth) -> bool:
    return bool(truth) and abs(x / truth - 1) <= NAMESPACE_REL


def namespace_leaks(dump_path, questions, solution, where: str) -> list[str]:
    """The answers of `questions` (truths `solution(q)`'s) that a variable of the kernel's namespace
    (as tests/namespace_dump.py wrote it) holds: a number equal to a numeric answer in its unit,
    another unit of its dimension or SI base units (to NAMESPACE_REL; a number of two significant
    digits or fewer is left out, as every lesson holds such knobs and givens), or a string or repr that
    states a regime or choice answer with its question's setting, as read_ahead_leaks reads a line."""
    import json

    from course_lib import Q_

    entries = json.loads(Path(dump_path).read_text())
    problems = []
    for q, name, spec, truth, si, words in _answers(questions, solution):
        if words is not None:
            options = spec.options if isinstance(spec, Choice) else ("memory-bound", "compute-bound")
            for var, value, kind in entries:
                if kind != "str" or len(value) < 30:   # a bare option ("memory-bound") says nothing of which setting
                    continue
                listed = sum(bool(re.search(rf"(?<![\w.-]){re.escape(str(o))}(?![\w-]|\.\d)", value))
                             for o in options) > 1
                if not listed and all(re.search(w, value, re.I) for w in words):
                    problems.append(f"{where}: {q.id} {name} ({truth!r} with its setting) in {var} = {value[:160]!r}")
            continue
        if not truth:
            continue
        for var, value, unit in entries:
            if unit == "str" or float(f"{value:.2g}") == value:   # a round number (0.5, 16, 300) is a knob or
                continue                                        # a given, which the lessons hold by the dozen
            if q.id in CONVERTS_A_GIVEN:      # the given itself, in another unit, is not the answer
                hit = unit in (None, *ALIASES.get(spec.units, {spec.units})) and _close(value, truth)
            elif unit is None:
                hit = _close(value, truth) or (si is not None and _close(value, si))
            else:
                try:
                    hit = _close(Q_(value, unit).to(spec.units or "").magnitude, truth)
                except Exception:
                    hit = False
            if hit:
                problems.append(f"{where}: {q.id} {name} ({truth:.4g} {spec.units or ''}) in the kernel: "
                                f"{var} = {value:.6g} {unit or ''}")
                break
    return problems


def _answer_cells(nb) -> dict[str, list[int]]:
    """The code answer cells' indices of `nb`, by question, in the notebook's order."""
    cells: dict[str, list[int]] = {}
    for i, c in enumerate(nb.cells):
        hit = re.match(r"^([a-z]+_q\d+[a-z]?)_(prediction|answer)$", meta(c).get("grade_id", ""))
        if hit and c.cell_type == "code" and hit.group(1) in QUESTIONS:
            cells.setdefault(hit.group(1), []).append(i)
    return cells


def prefix_namespace_leaks(path, source, folder, solution) -> list[str]:
    """The release notebook `path` as a student works it in one kernel: Run All with nothing
    answered (errors allowed), then each question in order answered with the solution's answer
    (`source`) and run from its answer cell to the end (Run Selected Cell and All Below); after
    each pass, the namespace searched for every answer not yet revealed (namespace_leaks)."""
    import shutil

    import nbformat
    from nbclient import NotebookClient

    work = folder / path.parent.name
    shutil.copytree(path.parent, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints", ".predictions.jsonl"))
    nb = nbformat.read(work / path.name, as_version=4)
    solved = {meta(c).get("grade_id"): c.source for c in read_source(source).cells}
    order = list(_answer_cells(nb).items())
    prefix = {meta(c).get("grade_id", "").split("_", 1)[0] for c in nb.cells} & DECLARED_PREFIXES
    lesson_qs = [q for qid, q in QUESTIONS.items() if qid.split("_", 1)[0] in prefix]
    client = NotebookClient(nb, timeout=240, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(work)}})
    problems = []
    with client.setup_kernel():
        start = 0
        for k in range(len(order) + 1):
            if k:
                qid, idxs = order[k - 1]
                for i in idxs:
                    nb.cells[i].source = solved[meta(nb.cells[i]).get("grade_id")]
                start = idxs[0]
            for i in range(start, len(nb.cells)):
                if nb.cells[i].cell_type == "code":
                    client.execute_cell(nb.cells[i], i)
            dump = work / f".namespace{k}.json"
            nb.cells.append(_dump_cell(dump))          # nbclient writes a cell's outputs into the notebook
            client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
            nb.cells.pop()
            done = {q for q, _ in order[:k]}
            where = "Run All, nothing answered" if not k else f"answered through {order[k - 1][0]}, then run below"
            problems += namespace_leaks(dump, [q for q in lesson_qs if q.id not in done], solution, where)
    return problems


@pytest.fixture(scope="module")
def _kernel_env():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.font_manager  # noqa: F401  (the font cache built here, not in a kernel)


def _a_variant_key(spaced) -> str:
    from course_lib.questions import student_key
    from course_lib.questions import variants as V

    keys = (student_key(b"the leak test's course secret", f"s{i}") for i in range(2000))
    return next(k for k in keys if all(V.draw(k, q) != QUESTIONS[q].givens for q in spaced))


@pytest.mark.parametrize("variant", ["the lesson's own numbers", "a student's variant", "answers in order",
                                     "a student's variant, answers in order"])
@pytest.mark.parametrize("lesson", sorted(RELEASED))
def test_reading_ahead_shows_no_answer(lesson, variant, tmp_path, monkeypatch, _kernel_env):
    """The release notebook run blank, every cell, errors allowed (Run All past the stops, or
    running the cells below a question before answering it): no markdown cell and no output
    states any question's answer, with the lesson's own numbers and with a student's own
    variant (where the lesson has variants: its figures, tables and explorers show that
    student's numbers, and none of their answers early). And the solution run, every question
    answered in order: nothing shows a question's answer above its verify cell (what a cell
    unlocks for one question does not give a later one away). The kernel too (issue 45): after
    the blank run, and, in the cases that answer in order, after each prefix of answered questions
    with the cells below it run in one kernel, no variable holds an answer not yet revealed
    (namespace_leaks). Lesson 5 measures quickly ($COURSE_LIB_MEASURE=quick)."""
    from course_lib.questions import variants as V

    path = RELEASED[lesson]
    monkeypatch.setenv("COURSE_LIB_MEASURE", "quick")
    source = SOLUTIONS[[p.parent.name for p in SOLUTIONS].index(lesson)]
    if variant.startswith("a student's variant"):
        spaced = _spaced(source)
        if not spaced:
            pytest.skip(f"{lesson} asks everyone the same numbers")
        monkeypatch.setenv(V.KEY_ENV, _a_variant_key(spaced))
        monkeypatch.setenv(V.STUDENT_ENV, "read-ahead-check")
    else:
        monkeypatch.delenv(V.KEY_ENV, raising=False)
    if variant.endswith("answers in order"):
        # the solution's answers (a variant student's are wrong, and their hidden tests fail: errors
        # are allowed); each form check commits, each verify cell reveals that student's truth
        nb = run_blank(source, tmp_path, nb=read_source(source))
        problems = read_ahead_leaks(nb, lambda q: q.solution(**V.current(q.id)), in_order=True)
        assert not problems, (f"{lesson}, {variant}: {len(problems)} answers on screen above their "
                              "verify cell:\n" + "\n".join(problems))
        problems = prefix_namespace_leaks(path, source, tmp_path / "prefixes", lambda q: q.solution(**V.current(q.id)))
        assert not problems, (f"{lesson}, {variant}: {len(problems)} answers in the kernel before their truth "
                              "is shown:\n" + "\n".join(problems))
        return
    dump = tmp_path / "namespace.json"
    nb = run_blank(path, tmp_path, dump=dump)             # the kernel inherits the environment set here
    problems = read_ahead_leaks(nb, lambda q: q.solution(**V.current(q.id)))
    problems += namespace_leaks(dump, [q for qid, q in QUESTIONS.items() if qid.split("_", 1)[0] == _prefix(nb)],
                                lambda q: q.solution(**V.current(q.id)), "Run All, nothing answered")
    assert not problems, (f"{lesson}, run blank with {variant}: {len(problems)} answers on screen before "
                          "their truth is shown:\n" + "\n".join(problems))


def _unmeasured_solution(q):
    """`q`'s truth where it needs no measurement of this machine (None where it does)."""
    try:
        return q.solution()
    except KeyError:              # course_lib.measure.result.example() has no such kernel
        return None


@pytest.mark.parametrize("lesson", sorted(RELEASED))
def test_no_markdown_cell_states_an_answer(lesson, monkeypatch):
    """The fast part of the read-ahead test: the release's prose alone (no kernel), with the
    lesson's own numbers."""
    import nbformat

    from course_lib.questions import variants as V

    from course_lib import measure
    from course_lib.measure.result import example

    monkeypatch.delenv(V.KEY_ENV, raising=False)
    monkeypatch.setattr(measure, "this_machine", lambda *a, **k: example())     # no measuring here
    nb = nbformat.read(RELEASED[lesson], as_version=4)
    problems = read_ahead_leaks(nb, _unmeasured_solution)
    assert not problems, f"{lesson}: the prose states answers:\n" + "\n".join(problems)


# ---- skipping a question: the header's documented way ------------------------------------------------
def _skipped(nb):
    """`nb` as a student runs it who skips every question as solutions/running_this_notebook.md
    says (select the first cell after the question's verify cell, Run Selected Cell and All
    Below): without the cells from each answer cell through its verify cell."""
    import nbformat

    out, skipping = [], None
    for cell in nb.cells:
        gid = meta(cell).get("grade_id", "")
        hit = re.match(r"^([a-z]+_q\d+[a-z]?)_(prediction|answer)$", gid)
        if hit and cell.cell_type == "code":
            skipping = hit.group(1)
        if skipping is None:
            out.append(cell)
        elif gid == f"{skipping}_verify":
            skipping = None
    return nbformat.v4.new_notebook(cells=out, metadata=nb.metadata)


@pytest.mark.parametrize("lesson", sorted(RELEASED))
def test_skipping_every_question_runs_the_rest_of_the_lesson(lesson, tmp_path, monkeypatch, _kernel_env):
    """Every question skipped the documented way, the rest of the lesson runs without an error:
    no cell after a question needs its answer, and what gives an answer away says it waits."""
    import shutil

    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    from course_lib.questions import variants as V

    monkeypatch.setenv("COURSE_LIB_MEASURE", "quick")
    monkeypatch.delenv(V.KEY_ENV, raising=False)
    path = RELEASED[lesson]
    work = tmp_path / path.parent.name
    shutil.copytree(path.parent, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints", ".predictions.jsonl"))
    nb = _skipped(nbformat.read(work / path.name, as_version=4))
    try:
        NotebookClient(nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(work)}}).execute()
    except CellExecutionError as e:
        pytest.fail(f"{lesson}, every question skipped: a cell after a skipped question fails:\n{str(e)[-1500:]}")
    assert any("shown here once" in o.get("text", "") for c in nb.cells for o in c.get("outputs", [])), \
        f"{lesson}: nothing said what waits for a question's truth"


# ---- a reveal belongs to its lesson (issue 45) -------------------------------------------------------
def test_a_verify_cell_of_another_lessons_question_refuses(tmp_path, monkeypatch):
    """In lesson 6's folder, show("hello_q6") of lesson 1 refuses, saying where its truth is shown,
    and records nothing: the reveal would sit in lesson 6's record, where nothing grades it, while
    lesson 1's record shows nothing. Its own lesson's questions still reveal there."""
    from course_lib.exercises import predictions
    from course_lib.questions import OtherLesson, show
    from course_lib.questions import variants as V

    monkeypatch.delenv(V.KEY_ENV, raising=False)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    here = tmp_path / "06_scaling_out"
    here.mkdir()
    monkeypatch.setattr(predictions, "_HERE", here)
    predictions.commit("hello_q6", {"q6_limit": 150.0}, "a dummy commit")
    with pytest.raises(OtherLesson, match=r"hello_q6 is a question of lesson 01_hello_roofline.*verify cell"):
        show("hello_q6", namespace={"q6_limit": 150.0})
    kinds = [e.get("kind") for e in predictions.load_record(here / predictions.RECORD_FILE)]
    assert "reveal" not in kinds, kinds


def test_a_gate_on_another_lessons_question_reads_that_lessons_record(tmp_path, monkeypatch, capsys):
    """after("wall_q6") in lesson 4's folder waits until lesson 2's record, in its sibling
    folder, holds Q6's reveal, and says the question is lesson 2's."""
    from course_lib.exercises import predictions
    from course_lib.questions import after

    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    four, two = tmp_path / "04_quantization", tmp_path / "02_memory_wall"
    four.mkdir()
    two.mkdir()
    monkeypatch.setattr(predictions, "_HERE", four)
    assert not after("wall_q6", what="The reality check")
    assert "lesson 2's Q6" in capsys.readouterr().out
    monkeypatch.setattr(predictions, "_HERE", two)
    predictions.commit("wall_q6", {"q6_fraction": 0.7}, None)
    predictions.reveal("wall_q6")
    monkeypatch.setattr(predictions, "_HERE", four)
    assert after("wall_q6", what="The reality check")


# ---- no text gives a question away (issue 45) --------------------------------------------------------
#: what a row of the README's lesson table must not say: a regime (the answer of a regime question),
#: which ratio rules (lesson 2's Q1), the limit's formula (lesson 1's Q6)
STATED_FINDINGS = [r"\b(?:memory|compute|latency|bandwidth)-bound\b", r"\bby the \w+ ratio\b", r"F\s*/\s*S_act"]


def test_the_readmes_lesson_table_says_what_is_learned_not_the_answers(monkeypatch):
    """The README's table of lessons, searched as the read-ahead test searches a notebook's text
    (every question's answer, with the lesson's own numbers): it names what each lesson teaches
    to predict, never what the prediction turns out to be."""
    import nbformat

    from course_lib import measure
    from course_lib.measure.result import example
    from course_lib.questions import variants as V

    monkeypatch.delenv(V.KEY_ENV, raising=False)
    monkeypatch.setattr(measure, "this_machine", lambda *a, **k: example())     # no measuring here
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    table = re.search(r"(?ms)^## The lessons.*?\n(\|.*?)\n\n", readme).group(1)
    rows = [r for r in table.splitlines() if re.match(r"\|\s*\d+\s*\|", r)]
    assert len(rows) == len(RELEASED), "the README's table has a row per lesson"
    problems = []
    for row in rows:
        folder = re.search(r"`(\d\d_[a-z_]+)/", row).group(1)
        prefix = next(p for p, l in lessons().items() if l.assignment == folder)
        # the row as a markdown cell of a notebook whose cells name its lesson's questions
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(row.replace("|", " . "))])
        nb.cells.append(nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade_id": f"{prefix}_q1_verify"}}))
        problems += [f"lesson {folder}: {p}" for p in read_ahead_leaks(nb, _unmeasured_solution)]
        # a regime or a formula stated as the lesson's finding: the answers of lesson 1's Q4, Q6, Q7,
        # lesson 2's Q1, lesson 3's Q1 and lesson 6's Q3 were worded so before (issue 45)
        for phrase in STATED_FINDINGS:
            if re.search(phrase, row, re.I):
                problems.append(f"lesson {folder}: the row states a finding ({phrase!r}): {row[:120]}...")
    assert not problems, "the README's lesson table states answers:\n" + "\n".join(problems)


# ---- practice is practice (issue 45) -----------------------------------------------------------------
@pytest.fixture
def practice_copy(tmp_path, monkeypatch):
    """This kernel as the public student repository's: solvers that hold no key, practice data
    beside the package (`write` it), no course service; the record in a lesson's folder."""
    import dataclasses
    import json

    from course_lib import ledger
    from course_lib.exercises import predictions
    from course_lib.questions import REGISTRY, key
    from course_lib.questions import variants as V

    monkeypatch.delenv(V.KEY_ENV, raising=False)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    q = QUESTIONS["wall_q1"]
    truth = key.solution_data(q.solution())
    monkeypatch.setitem(REGISTRY, "wall_q1", dataclasses.replace(q, solve=lambda **g: key.held("wall_q1")))
    monkeypatch.setattr(ledger, "advertised", lambda: None)
    data = tmp_path / "practice.json"
    monkeypatch.setattr(key, "PRACTICE_FILE", data)
    here = tmp_path / "02_memory_wall"
    here.mkdir()
    monkeypatch.setattr(predictions, "_HERE", here)
    predictions.commit("wall_q1", {"q1_speedup": 1.6}, "the bandwidth ratio")
    return lambda entries: data.write_text(json.dumps({"wall_q1": truth} if entries else {})), here


def test_a_practice_verify_without_its_truth_records_nothing(practice_copy):
    """Practice data without the question's truth (or a student on other numbers): the verify
    cell says so and records no reveal (issue 45: it printed "the reveal is recorded", then
    "Truth not available")."""
    from course_lib.exercises import predictions
    from course_lib.questions import key, show

    write, here = practice_copy
    write(False)
    with pytest.raises(key.KeyUnavailable, match="practice.*Nothing was recorded"):
        show("wall_q1", namespace={"q1_speedup": 1.6})
    assert "reveal" not in [e.get("kind") for e in predictions.load_record(here / predictions.RECORD_FILE)]


def test_a_practice_verify_shows_the_practice_truth_and_says_it_is_practice(practice_copy, capsys):
    from course_lib.exercises import predictions
    from course_lib.questions import show
    from course_lib.questions.core import PRACTICE_NOTE

    write, here = practice_copy
    write(True)
    show("wall_q1", namespace={"q1_speedup": 1.6})
    assert PRACTICE_NOTE in capsys.readouterr().out
    assert "reveal" in [e.get("kind") for e in predictions.load_record(here / predictions.RECORD_FILE)]
