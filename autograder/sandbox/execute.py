"""SandboxedExecute: nbgrader's Execute preprocessor running each notebook in the sandboxed
kernel (autograder.sandbox.kernel_manager), with the grader's time limits, answer recording and hidden
tests run last."""
from __future__ import annotations

import ast
import json
import logging
import os
import threading
import time

from nbformat.notebooknode import NotebookNode
from traitlets import Bool, Integer, Unicode

from nbgrader.preprocessors import Execute

from course_lib.exercises.question_ids import cell_id, is_graded

from autograder.sandbox.kernel_manager import SandboxKernelManager
from autograder.outputs.limits import CUT_NOTE, MAX_NOTEBOOK_OUTPUT_CHARS, MAX_OUTPUT_CHARS, TOTAL_NOTE, cap_outputs, output_chars
from autograder.outputs.page_safety import sanitize_cell_outputs
from autograder.sandbox.bwrap import SandboxSpec
from autograder.integrity.verifier_program import strip_warnings

log = logging.getLogger("autograder")


def _error_output(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def capture_expression(names: list[str]) -> str:
    """An expression that, evaluated in the kernel's namespace, returns (the JSON record of
    `names` (course_lib.exercises.answers.record), a fingerprint of the recorder's code): a kernel
    that replaced the recorder shows another fingerprint than the solution's kernel did."""
    return ("(lambda m: (m.record({names!r}, globals()), __import__('hashlib').sha256(repr([(f.__module__, "
            "f.__code__.co_code, [c for c in f.__code__.co_consts if not hasattr(c, 'co_code')], "
            "f.__code__.co_names) for f in (m.record, m.encode, "
            "m._encode_numpy, m._float, m._numpy)]).encode()).hexdigest()))(__import__('course_lib.exercises.answers', "
            "fromlist=['record']))").format(names=list(names))


RECORDER_REPLACED = ("the kernel replaced the answer recorder (course_lib.exercises.answers): its record is not the value of "
                     "the answer cell, so this answer is not taken")


def _grade_id(cell) -> str | None:
    return cell_id(cell) or None


class SandboxedExecute(Execute):
    """nbgrader's Execute with the sandboxed kernel, a notebook wall clock, per-cell time limits,
    warning-proof test cells, a record of the answers right after each answer cell ran (for the
    clean re-verification and the report), and the hidden tests run last.

    Hidden tests last: every other cell runs first, in order, so none of their outputs was
    produced by a kernel that had seen a hidden test (feedback shows them safely); the hidden
    test cells then run, in order, only to compare the kernel's verdict with the clean one."""

    sandbox_spec = Unicode("", config=True)
    notebook_timeout = Integer(900, config=True)
    capture = Unicode("{}", config=True, help="JSON {answer grade_id: [variable, ...]}: values to record "
                      "right after each of those cells ran")
    recorder = Unicode("", config=True, help="the recorder's fingerprint in the solution's kernel (preflight); "
                       "another one means the kernel replaced it")
    deferred = Unicode("[]", config=True, help="JSON [grade_id, ...]: the hidden-test cells, run after all others")
    cell_timeouts = Unicode("{}", config=True, help="JSON {grade_id: seconds}; other cells get `timeout`")
    grade_cell_warnings = Bool(True, config=True, help="remove warning text from test cells' stderr")
    max_output_chars = Integer(MAX_OUTPUT_CHARS, config=True)
    max_notebook_output_chars = Integer(MAX_NOTEBOOK_OUTPUT_CHARS, config=True)

    def __init__(self, *args, **kwargs):
        kwargs["kernel_manager_class"] = SandboxKernelManager
        super().__init__(*args, **kwargs)

    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        km.sandbox_spec = self.sandbox_spec
        return km

    def preprocess(self, nb, resources=None, km=None):
        from nbclient import NotebookClient
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        NotebookClient.__init__(self, nb, km)
        self.reset_execution_trackers()
        self._check_assign_resources(resources)
        capture = json.loads(self.capture or "{}")
        deferred = json.loads(self.deferred or "[]")
        limits = json.loads(self.cell_timeouts or "{}")
        self.timeout_func = lambda cell: limits.get(_grade_id(cell), self.timeout)
        order = [i for i, c in enumerate(self.nb.cells) if _grade_id(c) not in deferred]
        last = [i for i, c in enumerate(self.nb.cells) if _grade_id(c) in deferred]
        answers, timings, killed, stopped = {}, {}, threading.Event(), None
        self._hidden_phase, self._output_total, self._cut_cells = False, 0, set()
        snapshot, meta_out = None, {}
        with self.setup_kernel():
            assert self.kc
            timer = threading.Timer(self.notebook_timeout, self._kill, args=(killed,))
            timer.daemon = True
            timer.start()
            try:
                info_msg = self.wait_for_reply(self.kc.kernel_info())
                self.nb.metadata["language_info"] = info_msg["content"]["language_info"]
                self._lock_rundir()
                for index in order + last:
                    cell = self.nb.cells[index]
                    if index in last and snapshot is None:
                        # the first hidden test is about to enter the kernel: what every other cell
                        # shows is fixed now (a later display update, widget change or output
                        # appended to an earlier cell is dropped)
                        snapshot = self._snapshot(set(last))
                        self._hidden_phase = True
                    if stopped:
                        if cell.cell_type == "code":
                            cell.outputs = [_error_output("CellNotRun", f"not run: {stopped}")]
                            cell.execution_count = None
                        continue
                    gid = _grade_id(cell)
                    t0 = time.monotonic()
                    try:
                        self.preprocess_cell(cell, resources, index)
                        if gid in capture and cell.cell_type == "code":
                            answers[gid] = self._capture(capture[gid], meta_out)
                    except (CellTimeoutError, DeadKernelError) as e:
                        stopped = self._stopped_by(e, killed, cell)
                        log.warning("%s", stopped)
                        log.info("%s", e)
                        self.km.kill_now()
                        cell.outputs = list(cell.get("outputs", [])) + [_error_output("KernelStopped", stopped)]
                    finally:
                        if cell.cell_type == "code":
                            timings[gid or f"#{index}"] = round(time.monotonic() - t0, 4)
                            self._stream_notes(cell)
                            cap_outputs(cell, self.max_output_chars)
            finally:
                timer.cancel()
        self._close_notebook(snapshot, last, answers, timings, meta_out, stopped)
        return self.nb, self.resources

    def _stopped_by(self, e, killed: threading.Event, cell) -> str:
        """Why the kernel was stopped at `cell` (a CellTimeoutError or DeadKernelError `e`)."""
        from nbclient.exceptions import CellTimeoutError

        if killed.is_set():
            stopped = f"the notebook ran past its time limit ({self.notebook_timeout} s)"
        elif isinstance(e, CellTimeoutError):
            stopped = (f"the cell ran past its time limit ({self.timeout_func(cell)} s) and did "
                       "not stop when interrupted")
        else:
            stopped = "the kernel died (out of memory or crashed)"
        return stopped

    def _close_notebook(self, snapshot: dict | None, last: list, answers: dict, timings: dict, meta_out: dict,
                        stopped: str | None) -> None:
        """After the kernel is gone: the outputs as they were before the hidden tests ran, every
        output made inert, and what was recorded into the notebook's autograder metadata."""
        self._lock_rundir(unlock=True)     # the next notebook's kernel makes its sockets there
        if snapshot is not None:
            self._restore(snapshot)
        # no widget state is kept: its views are JavaScript (removed from the outputs below), and
        # it is one more channel out of the kernel
        self.nb.metadata.pop("widgets", None)
        for cell in self.nb.cells:
            if cell.cell_type == "code":
                sanitize_cell_outputs(cell)
        if self.grade_cell_warnings:
            self._strip_grade_cell_warnings()
        meta = self.nb.metadata.setdefault("autograder", {})
        meta["answers"] = answers
        meta["timings"] = timings
        meta["hidden_run_last"] = [_grade_id(self.nb.cells[i]) for i in last]
        meta["sandboxed"] = SandboxSpec.from_json(self.sandbox_spec).enabled
        meta.update(meta_out)
        if stopped:
            meta["stopped"] = stopped

    def _snapshot(self, hidden: set) -> dict:
        import copy

        return {"outputs": {i: copy.deepcopy(c.get("outputs", [])) for i, c in enumerate(self.nb.cells)
                            if c.cell_type == "code" and i not in hidden}}

    def _restore(self, snapshot: dict) -> None:
        for i, outputs in snapshot["outputs"].items():
            self.nb.cells[i].outputs = outputs

    def _update_display_id(self, display_id, msg):
        if not getattr(self, "_hidden_phase", False):   # after: an update of an earlier output is dropped
            super()._update_display_id(display_id, msg)

    def handle_comm_msg(self, outs, msg, cell_index):
        if not getattr(self, "_hidden_phase", False):   # after: widget state no longer changes
            super().handle_comm_msg(outs, msg, cell_index)

    def output(self, outs, msg, display_id, cell_index):
        """nbclient's output, cut to max_output_chars at once and kept within the notebook's total
        (MAX_NOTEBOOK_OUTPUT_CHARS): beyond it an output is dropped before it is kept, with one
        note in its cell."""
        if not hasattr(self, "_output_total"):
            self._output_total, self._cut_cells, self._hidden_phase = 0, set(), False
        if not hasattr(self, "_stream_seen"):
            self._stream_seen = {}
        content = msg.get("content") or {}
        hooked = self.output_hook_stack[msg["parent_header"].get("msg_id")]
        if msg.get("msg_type") == "stream" and not hooked:
            # streams are merged as they come (as nbclient would at the cell's end), keeping the
            # first max_output_chars and counting the rest for the cut note
            for prev in reversed(outs):
                if prev.get("output_type") == "stream" and prev.get("name") == content.get("name"):
                    text = content.get("text", "")
                    self._stream_seen[id(prev)] = self._stream_seen.get(id(prev), len(prev["text"])) + len(text)
                    add = text[:max(0, min(self.max_output_chars - len(prev["text"]),
                                           self.max_notebook_output_chars - self._output_total))]
                    prev["text"] += add
                    self._output_total += len(add)
                    return None
        if self._output_total >= self.max_notebook_output_chars:
            if cell_index not in self._cut_cells:
                self._cut_cells.add(cell_index)
                outs.append(NotebookNode(output_type="stream", name="stdout",
                                         text=TOTAL_NOTE.format(limit=self.max_notebook_output_chars)))
            return None
        out = super().output(outs, msg, None if self._hidden_phase else display_id, cell_index)
        if out is not None:
            if out.get("output_type") == "stream" and not hooked:
                self._stream_seen[id(out)] = len(out["text"])
                out["text"] = out["text"][:self.max_output_chars]
            else:
                cap_outputs({"outputs": [out]}, self.max_output_chars)    # cut at once (with its note)
            self._output_total += output_chars(out)
        return out

    def _stream_notes(self, cell) -> None:
        """The cut note on each stream of `cell` that was cut while it came in."""
        seen = getattr(self, "_stream_seen", {})
        for out in cell.get("outputs", []):
            n = seen.pop(id(out), 0)
            if out.get("output_type") == "stream" and n > len(out.get("text", "")):
                out["text"] = out["text"] + CUT_NOTE.format(n=n, k=len(out["text"]))

    def _lock_rundir(self, unlock: bool = False) -> None:
        """Once the kernel has bound its sockets, its run directory (on the host's disk) is the
        grader's again: the kernel can no longer write files there (the per-submission disk quota
        is the private home and /tmp, both memory-backed and sized). `unlock`, once that kernel
        is gone: the kernel's uid's again, for the next notebook's kernel."""
        spec = SandboxSpec.from_json(self.sandbox_spec)
        if spec.enabled and spec.uid is not None and os.geteuid() == 0:
            owner = spec.uid if unlock else 0
            for p in (os.path.join(spec.rundir, "kernel.json"), spec.rundir):
                try:
                    os.chown(p, owner, owner)
                except OSError:
                    pass
            os.chmod(spec.rundir, 0o755 if unlock else 0o711)

    def _kill(self, killed):
        killed.set()
        log.warning("notebook time limit (%s s) reached: killing the kernel", self.notebook_timeout)
        try:
            self.km.kill_now()
        except Exception as e:  # pragma: no cover
            log.warning("could not kill the kernel: %s", e)

    def _capture(self, names, meta_out: dict) -> dict:
        """The record of `names` in the student's kernel now (course_lib.exercises.answers.record); a
        failure is recorded for each name. A silent request: no pre/post-run hooks fire. Where the
        recorder is not the solution kernel's (`recorder`), nothing is taken and it is flagged
        (meta_out["recorder_replaced"])."""
        try:
            msg_id = self.kc.execute("", silent=True, store_history=False,
                                     user_expressions={"values": capture_expression(names)})
            reply = self.wait_for_reply(msg_id)
            res = reply["content"]["user_expressions"]["values"]
            if res.get("status") != "ok":
                why = f"recording failed in the kernel: {res.get('ename')}: {str(res.get('evalue'))[:200]}"
                return {n: {"error": why} for n in names}
            text = res["data"]["text/plain"]
            if len(text) > 4 * 2**20:
                return {n: {"error": "the record is larger than 4 MB: not an answer"} for n in names}
            got = ast.literal_eval(text)
            if not (isinstance(got, tuple) and len(got) == 2 and all(isinstance(x, str) for x in got)):
                return {n: {"error": f"{RECORDER_REPLACED} (it returned {type(got).__name__})"} for n in names}
            record, fingerprint = got
            meta_out.setdefault("recorder", fingerprint)
            if self.recorder and fingerprint != self.recorder:
                meta_out["recorder_replaced"] = True
                return {n: {"error": RECORDER_REPLACED} for n in names}
            values = json.loads(record)
            if not isinstance(values, dict):
                return {n: {"error": f"{RECORDER_REPLACED} (not a record)"} for n in names}
            return {n: values[n] if isinstance(values.get(n), dict) else {"error": "not recorded"} for n in names}
        except Exception as e:
            log.warning("could not record the answer values: %s", e)
            return {n: {"error": f"recording failed: {type(e).__name__}: {e}"} for n in names}

    def _strip_grade_cell_warnings(self):
        for cell in self.nb.cells:
            if cell.cell_type != "code" or not is_graded(cell):
                continue
            kept = []
            for out in cell.get("outputs", []):
                if out.get("output_type") == "stream" and out.get("name") == "stderr":
                    rest = strip_warnings(out.get("text", ""))
                    if not rest.strip():
                        continue
                    out["text"] = rest
                kept.append(out)
            cell.outputs = kept
