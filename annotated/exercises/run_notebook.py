"""Run one student's notebook for the grader, in a process of its own, and write what it did.

    python -m annotated.exercises.run_notebook NOTEBOOK REPORT.json CELL_TIMEOUT

The grader (annotated.exercises.grade) starts this in a new process group and kills the group
if the whole notebook takes too long, so that a notebook that hangs its kernel stops nothing
but itself. Here the notebook runs top to bottom, every cell whatever its tags, in a fresh
kernel, in the folder it is started in (the grader's scratch folder), in the chapters' quick
form, with no network: a first cell refuses every connection that leaves the machine (and
notes each file of the book's solutions that the notebook opens, for its row). A cell
that raises does not stop the run; a cell that runs longer than CELL_TIMEOUT seconds is
interrupted and the run goes on. After each of the student's cells a report cell asks the
kernel for the result of every check called so far (annotated.exercises.grading_report), so
that if the kernel dies, the checks before it count. REPORT.json gets the last results, the
cells that raised, and the cells that were stopped; it is written after every cell, so a run
stopped part way still reports.
"""
import asyncio
import ctypes
import json
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

import nbformat

from annotated.base.files import write_files
from annotated.exercises.notebook import CHAPTER_FOLDER, name_offsets

#: The tag nbclient skips cells by, here one no notebook has: every cell runs, and a tag
#: (nbclient's own, skip-execution) cannot keep a check from running.
EVERY_CELL_RUNS = "annotated-grader-runs-every-cell"
#: Run first in the student's kernel: a connection to anything but this machine is refused,
#: and each file of the book's solutions that the notebook opens is noted (watch_solutions).
SETUP = '''\
import socket as _socket
def _local(host):
    return host in ("127.0.0.1", "::1", "localhost", "", None)
def _refuse(what):
    raise OSError(f"the grader runs notebooks without a network ({{what}})")
def _connect(self, address, *rest, _connect=_socket.socket.connect, _local=_local,
             _refuse=_refuse, _inet=(_socket.AF_INET, _socket.AF_INET6)):
    if self.family in _inet and not _local(address[0]):
        _refuse(address[0])
    return _connect(self, address, *rest)
def _getaddrinfo(host, *rest, _getaddrinfo=_socket.getaddrinfo, _local=_local, _refuse=_refuse):
    if not _local(host if isinstance(host, str) else None):
        _refuse(host)
    return _getaddrinfo(host, *rest)
_socket.socket.connect, _socket.getaddrinfo = _connect, _getaddrinfo
del _socket, _local, _refuse, _connect, _getaddrinfo
from annotated.exercises import watch_solutions as _watch_solutions
_watch_solutions({solutions!r})
del _watch_solutions'''
# The report goes out as display data of its own type, not through print or sys.stdout, which
# a student's notebook may replace (`print = ...` to silence debug output).
REPORT = '''\
from IPython.display import publish_display_data as _publish
from annotated.exercises import SOLUTIONS_OPENED as _opened, grading_report as _grading_report
_publish({{{kind!r}: _grading_report({ids!r}), {opened!r}: _opened}})'''
SOLUTIONS = CHAPTER_FOLDER / "solutions"
REPORT_TYPE = "application/vnd.annotated-exercises.report+json"
OPENED_TYPE = "application/vnd.annotated-exercises.solutions-opened+json"
TIMED_OUT = "CellTimeoutError"


def prepared(nb, ids: list[str]):
    """The student's notebook after the no-network cell, each of its cells followed by a report
    cell: if the kernel dies, the checks that ran before count. The grader's cells are marked in
    their metadata."""
    first = nbformat.v4.new_code_cell(SETUP.format(solutions=str(SOLUTIONS)),
                                      metadata={"grader": "setup"})
    cells = [first]
    for cell in nb.cells or [nbformat.v4.new_markdown_cell("")]:
        cells += [cell, nbformat.v4.new_code_cell(
            REPORT.format(kind=REPORT_TYPE, opened=OPENED_TYPE, ids=ids),
            metadata={"grader": "report"})]
    nb.cells = cells
    return nb


# A call that ends the kernel once its cell is done (IPython's exit and quit, a shutdown asked
# of the kernel), so that it dies in a later cell than the one that asked.
ENDS_KERNEL = re.compile(r"(?<![\w.])(?:exit|quit)\s*\(|\.do_shutdown\s*\(")


def died_where(nb, done: int) -> list:
    """[what, detail] for a kernel that died after `done` student cells ran: in the next one,
    or, if one of those asked it to end (ENDS_KERNEL, outside comments and strings), after
    that one."""
    for number, cell in enumerate(students(nb)[:done + 1], start=1):
        text = cell.get("source", "")
        names = name_offsets(text)
        if any(names is None or m.start() in names or m.start() + 1 in names
               for m in ENDS_KERNEL.finditer(text)):
            return ["kernel_ended", str(number)]
    return ["kernel_died", str(done + 1)]


def students(nb) -> list:
    """The student's cells of a prepared notebook, in order."""
    return [cell for cell in nb.cells if "grader" not in cell.get("metadata", {})]


def cell_errors(nb, stopped_cells: set[int], continued: set[int]) -> list[dict]:
    """Every student cell (numbered from 1, in order) that raised, or that ran too long and was
    stopped (`stopped_cells`, by their index in the prepared notebook), or in which its code
    stopped its own kernel, which was continued (`continued`, by index likewise)."""
    found = []
    stopped_ids = {id(nb.cells[i]) for i in stopped_cells if i < len(nb.cells)}
    continued_ids = {id(nb.cells[i]) for i in continued if i < len(nb.cells)}
    for number, cell in enumerate(students(nb), start=1):
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if id(cell) in continued_ids:
            found.append({"cell": number, "stopped": False, "continued": True,
                          "error": "SIGSTOP"})
        if id(cell) in stopped_ids:
            found.append({"cell": number, "stopped": True, "error": TIMED_OUT})
        elif errors:
            found.append({"cell": number, "stopped": False, "error": f"{errors[0]['ename']}: "
                          f"{' '.join(str(errors[0]['evalue']).split())[:120]}".rstrip(": ")})
    return found


def results(nb) -> tuple[dict | None, int]:
    """The newest report a report cell printed (None if none did), and how many student cells
    had run when it did."""
    reports = [cell for cell in nb.cells if cell.get("metadata", {}).get("grader") == "report"]
    for done, cell in reversed(list(enumerate(reports, start=1))):
        for output in cell.get("outputs", []):
            if REPORT_TYPE in output.get("data", {}):
                return output["data"][REPORT_TYPE], done
    return None, 0


def solutions_opened(nb) -> list[str]:
    """The files of the book's solutions the notebook's code opened, as the newest report cell
    that ran says."""
    reports = [cell for cell in nb.cells if cell.get("metadata", {}).get("grader") == "report"]
    for cell in reversed(reports):
        for output in cell.get("outputs", []):
            if OPENED_TYPE in output.get("data", {}):
                return output["data"][OPENED_TYPE]
    return []


def outcome(nb) -> tuple[dict | None, list | None]:
    """What the run of the prepared notebook found, and what went wrong at its end ([what,
    detail], what a key of annotated.exercises.messages), or None."""
    found, done = results(nb)
    last = nb.cells[-1]
    if found is not None and done == len(students(nb)):
        return found, None
    if found is not None:                     # stopped part way: the checks before count
        return found, ["unfinished_at", str(done + 1)]
    errors = [o for o in last.get("outputs", []) if o.get("output_type") == "error"]
    if errors:
        return None, ["report_failed", f"{errors[0]['ename']}: "
                      f"{' '.join(str(errors[0]['evalue']).split())[:120]}"]
    return None, ["unfinished", ""]


def stopped_in(nb) -> list | None:
    """What to report should the run end now (by --timeout, or a signal): the student cell it
    would have stopped in, or None once every student cell has run and been reported."""
    done = results(nb)[1]
    return None if done == len(students(nb)) else ["stopped_in_cell", str(done + 1)]


PR_SET_CHILD_SUBREAPER = 36            # prctl(2): orphaned descendants come back to this process


def adopt_orphans() -> None:
    """On Linux, make this process the one that a process the notebook starts in a session of
    its own (out of reach of the grader's process group) comes back to when its parent, the
    kernel, ends; stop_orphans then stops it. Elsewhere nothing changes."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


#: The stop this process received (SIGTERM: from the grader, or from the notebook's own code).
STOPPED: list[int] = []


def stop(signum, frame) -> None:
    """Leave on SIGTERM, remembering it: a kernel that dies as this process stops died of the
    stop, and the report written after the last cell (the checks before it) is what counts."""
    STOPPED.append(signum)
    sys.exit(128 + signum)


def take_back_the_stop(notebook) -> None:
    """Run as the notebook starts (nbclient's on_notebook_start), inside the task that runs it.
    nbclient answers SIGTERM itself, by shutting the kernel down under the running cell, and
    what the run then meets (a dead kernel, a missing client) depends on timing. Here SIGTERM
    is remembered and cancels the run instead: its cleanup still shuts the kernel down, and
    the report written after the last cell is what counts."""
    def stopped(run: asyncio.Task) -> None:
        STOPPED.append(signal.SIGTERM)
        run.cancel()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopped, asyncio.current_task())


def stop_orphans() -> None:
    """Kill every process left whose parent is this one (the kernel has shut down by now), and
    theirs as they come back, until none is left."""
    for _ in range(20):
        left = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:                      # the process ended meanwhile
                continue
            if int(fields[1]) == os.getpid():    # its parent's pid
                left.append(int(stat.parent.name))
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def main(path: str, report: str, cell_timeout: float) -> None:
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    from annotated.exercises import graded_ids
    from annotated.exercises.notebook import checks, read
    nb = read(path)
    ids = graded_ids(checks(nb))
    nb = prepared(nb, ids)
    os.environ.pop("ANNOTATED_FULL", None)               # the chapters' quick form
    os.environ.setdefault("MPLBACKEND", "Agg")
    client = NotebookClient(                  # this Python's kernel, whatever the file names
        nb, kernel_name="python3", timeout=cell_timeout, allow_errors=True,
        interrupt_on_timeout=True, skip_cells_with_tag=EVERY_CELL_RUNS,
        error_on_timeout={"ename": TIMED_OUT, "evalue": f"stopped after {cell_timeout:g} s",
                          "traceback": []},
        resources={"metadata": {"path": os.getcwd()}})      # grade's scratch folder
    cells = {"stopped": set(), "continued": set(), "running": 0}

    def after_cell(cell, cell_index, execute_reply):
        if execute_reply and execute_reply["content"].get("ename") == TIMED_OUT:
            cells["stopped"].add(cell_index)
        write_report(report, ids, results(nb)[0], stopped_in(nb), nb, cells)
    client.on_cell_executed = after_cell
    client.on_cell_start = lambda cell, cell_index: cells.update(running=cell_index)
    client.on_notebook_start = take_back_the_stop
    threading.Thread(target=continue_stopped_kernel, args=(client, cells), daemon=True).start()
    adopt_orphans()
    try:
        client.execute()
        found, problem = outcome(nb)
    except (DeadKernelError, asyncio.CancelledError):   # only take_back_the_stop cancels
        if STOPPED:                           # stopped: the report of the last cell stands
            raise SystemExit(128 + STOPPED[0]) from None
        found, done = results(nb)             # the checks that ran before it died still count
        problem = died_where(nb, done)
    finally:
        if sys.platform.startswith("linux"):
            stop_orphans()
    write_report(report, ids, found, problem, nb, cells)


def write_report(report: str, ids: list[str], found, problem, nb, cells: dict) -> None:
    """REPORT.json, replaced whole: written after every cell, so that a run stopped in a cell
    (by --timeout, or by a signal its own code sent) still reports the checks before it.
    `cells`: the cells stopped at --cell-timeout and those whose kernel was continued."""
    write_files({Path(report): json.dumps({
        "ids": ids, "results": found, "problem": problem,
        "errors": cell_errors(nb, cells["stopped"], cells["continued"]),
        "solutions_opened": solutions_opened(nb)})})


def continue_stopped_kernel(client, cells: dict) -> None:
    """Run in a thread: every second, a kernel that its own code stopped (os.kill with
    SIGSTOP, or SIGTSTP) is sent SIGCONT, and the cell it stopped in recorded. Stopped, it
    would ignore the interrupt at --cell-timeout and hold the grader until --timeout."""
    while True:
        time.sleep(1)
        pid = getattr(getattr(getattr(client, "km", None), "provisioner", None), "pid", None)
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state == "T":
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:                      # it ended meanwhile
                continue
            cells["continued"].add(cells["running"])


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("error: annotated.exercises.run_notebook is run by the grader, one notebook at "
                 "a time; grade notebooks with python -m annotated.exercises grade NOTEBOOK...")
    # Stopped by the grader: leave through Python, so that the kernel is shut down too.
    signal.signal(signal.SIGTERM, stop)
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
