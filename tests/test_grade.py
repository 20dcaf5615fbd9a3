"""The teacher's grading command: it runs students' notebooks, each in a process of its own,
and grades every exercise each one checks. A notebook that raises, loops, kills its kernel or
is not a notebook at all gets a clear line in the table, never a traceback, and never stops
the others from being graded."""
import gzip
import io
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from conftest import says

pytestmark = pytest.mark.slow           # each notebook starts a kernel

SETUP = 'import math\nimport torch\nfrom annotated.exercises import checker\ncheck = checker("en")'
MASK = ('def causal_mask(size):\n'
        '    return torch.ones(size, size, dtype=torch.bool).tril()[None, None]\n'
        'check("2.1", causal_mask)')
KEY = 'def key_mask(tokens, pad):\n    return (tokens != pad)[:, None, None, :]\ncheck("2.2", key_mask)'
KEY_STUB = 'def key_mask(tokens, pad):\n    raise NotImplementedError\ncheck("2.2", key_mask)'
ATTENTION = ('def masked_attention(q, k, v, mask):\n'
             '    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n'
             '    w = s.masked_fill(~mask, {fill}).softmax(-1)\n'
             '    return w @ v, w\n'
             'check("2.3", masked_attention)')


def write(folder, name, cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, folder / name)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A class's notebooks, graded in one run: (exit code, JSON rows by name, the table)."""
    folder = tmp_path_factory.mktemp("class")
    write(folder, "a_correct.ipynb", [SETUP, MASK, KEY, ATTENTION.format(fill='float("-inf")')])
    write(folder, "b_half_done.ipynb", [SETUP, MASK, KEY_STUB, ATTENTION.format(fill="-1e9")])
    write(folder, "c_raises.ipynb", [SETUP, MASK, 'raise ValueError("my mistake")', KEY])
    write(folder, "d_loops.ipynb", [SETUP, MASK, "while True:\n    pass", KEY])
    write(folder, "e_dies.ipynb", [SETUP, MASK, "import os\nos._exit(3)", KEY])
    write(folder, "f_no_network.ipynb", [
        SETUP, 'import urllib.request\nurllib.request.urlopen("http://example.com")', MASK])
    (folder / "g_not_json.ipynb").write_text("{ this is not JSON", encoding="utf-8")
    write(folder, "h_silenced.ipynb", [SETUP, "print = lambda *a, **k: None", MASK,
                                       "import io, sys\nsys.stdout = io.StringIO()", KEY])
    write(folder, "i_reads_solutions.ipynb", [SETUP, (
        "import pathlib, annotated\n"
        "folder = pathlib.Path(annotated.__file__).parents[1] / 'chapters' / 'solutions'\n"
        "text = (folder / '02_masking.ipynb').read_text()"), MASK])
    notebooks = sorted(str(p) for p in folder.iterdir())
    command = [sys.executable, "-m", "annotated.exercises", "grade", *notebooks,
               "--cell-timeout", "30", "--timeout", "300"]
    as_json = subprocess.run(command + ["--json"], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL)
    rows = {row["notebook"].rsplit("/", 1)[-1].split("_")[0]: row
            for row in json.loads(as_json.stdout)}
    as_table = subprocess.run(command[:4] + [str(folder / "g_not_json.ipynb"),
                                             str(folder / "missing.ipynb")],
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)
    return as_json.returncode, rows, as_table


def zip_of(content: bytes) -> bytes:
    """A zip archive holding one notebook, as handed in by mistake."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("hw.ipynb", content)
    return archive.getvalue()


FILES = {"not JSON": (b"{ this is not", ["not JSON", "line 1", "save it again"],
                      ["不是 JSON", "第 1 行", "重新保存"]),
         "empty": (b" \n", ["empty", "save"], ["空文件", "保存"]),
         "format 5": (b'{"nbformat": 5, "nbformat_minor": 0, "cells": [], "metadata": {}}',
                      ["format is 5", "format 4", "save"], ["格式是 5", "保存"]),
         "a format 3 notebook": (b'{"nbformat": 3, "worksheets": []}',
                                 ["format 3", "format 4", "nbconvert"], ["第 3 版", "nbconvert"]),
         "JSON, not a notebook": (b'{"cells": []}', ["without the 'nbformat'"], ["'nbformat'"]),
         "JSON without cells": (b'{"nbformat": 4}', ["without the 'cells'"], ["'cells'"]),
         "a JSON list": (b'[1, 2]', ["'cells', 'nbformat'"], ["'cells', 'nbformat'"]),
         "not UTF-8": ('{\n"cells": ["Café"]}'.encode("latin-1"),
                       ["not UTF-8", "line 2", "save it", "utf-8"], ["不是 UTF-8", "第 2 行", "保存"]),
         "UTF-16": ('{"cells": []}'.encode("utf-16"), ["not UTF-8", "-f utf-16"], ["utf-16"]),
         "gzipped": (gzip.compress(b'{"cells": []}', mtime=0), ["gzip-compressed", "unpack it"],
                     ["gzip 压缩", "解压"]),
         "a zip archive": (zip_of(b'{"cells": []}'), ["zip-compressed", "unpack it", ".ipynb"],
                           ["zip 压缩", "解压"]),
         "a Python script": (b"import torch\n\ndef causal_mask(size):\n    return None\n",
                             ["a Python script", "hand in the", ".ipynb"], ["Python 脚本", ".ipynb"])}


@pytest.mark.parametrize("content, en, zh", FILES.values(), ids=FILES.keys())
def test_a_file_that_is_no_notebook_says_why_in_the_tables_language(tmp_path, content, en,
                                                                     zh):
    """The Chinese table in Chinese: no English reason inside a Chinese sentence."""
    from annotated.exercises.grade import notebook_problem
    from annotated.exercises.messages import MESSAGES
    (tmp_path / "x.ipynb").write_bytes(content)
    for lang, names in (("en", en), ("zh", zh)):
        nb, problem = notebook_problem(tmp_path / "x.ipynb", MESSAGES[lang])
        assert nb is None
        says(problem, *names)
        if lang == "zh":
            assert not any(word in problem for word in ("not ", "without", "older", "of format",
                                                        "Expecting"))


def statuses(row) -> dict:
    return {i: e["status"] for i, e in row["exercises"].items()}


def test_a_correct_notebook_passes_every_exercise(graded):
    _, rows, _ = graded
    assert rows["a"]["graded"] and (rows["a"]["passed"], rows["a"]["total"]) == (3, 3)
    assert rows["a"]["note"] is None


def test_a_notebook_that_silences_its_own_output_is_graded_all_the_same(graded):
    """`print = ...` or sys.stdout replaced, to quieten debug output: the grader's reports
    do not go through either."""
    _, rows, _ = graded
    assert statuses(rows["h"]) == {"2.1": "passed", "2.2": "passed", "2.3": "not run"}
    assert rows["h"]["note"] is None


def test_a_half_done_notebook_gets_its_stubs_and_its_wrong_answers_told_apart(graded):
    _, rows, _ = graded
    assert statuses(rows["b"]) == {"2.1": "passed", "2.2": "not attempted", "2.3": "failed"}
    assert "-1e9" in rows["b"]["exercises"]["2.3"]["en"] and rows["b"]["exercises"]["2.3"]["zh"]


def test_a_cell_that_raises_is_noted_and_the_rest_still_graded(graded):
    _, rows, _ = graded
    assert statuses(rows["c"]) == {"2.1": "passed", "2.2": "passed", "2.3": "not run"}
    assert "cell 3" in rows["c"]["note"] and "my mistake" in rows["c"]["note"]


def test_a_loop_is_stopped_at_the_cell_timeout_and_the_rest_still_graded(graded):
    _, rows, _ = graded
    assert statuses(rows["d"]) == {"2.1": "passed", "2.2": "passed", "2.3": "not run"}
    assert "3" in rows["d"]["note"] and "30 s" in rows["d"]["note"]


def test_a_dead_kernel_and_a_file_that_is_not_a_notebook_are_one_line_each(graded):
    """A kernel that dies in cell 3 keeps the check that passed before it, and says where."""
    code, rows, table = graded
    assert rows["e"]["graded"] and statuses(rows["e"])["2.1"] == "passed"
    says(rows["e"]["note"], "kernel died", "cell 3")
    assert not rows["g"]["graded"] and "not a notebook" in rows["g"]["note"]
    assert code == 1                       # some notebooks could not be graded
    assert table.returncode == 1 and "Traceback" not in table.stdout + table.stderr
    lines = table.stdout.strip().split("\n")
    assert len(lines) == 3 and "not a notebook" in lines[0] and "missing.ipynb" in lines[1]
    assert "no such file" in lines[1] and "check the path" in lines[1]


def test_a_notebook_that_opens_the_books_solutions_is_named_in_its_row(graded):
    """It may run them (exec of their cells) and pass every check: the row says where its
    answers may come from; a notebook that does not open them gets no such note."""
    _, rows, _ = graded
    assert statuses(rows["i"])["2.1"] == "passed"
    says(rows["i"]["note"], "02_masking.ipynb", "solutions", "may not be its own work")
    assert all("solutions" not in (row["note"] or "") for name, row in rows.items()
               if name != "i")


def test_a_notebook_cannot_reach_the_network(graded):
    _, rows, _ = graded
    assert statuses(rows["f"]) == {"2.1": "passed", "2.2": "not run", "2.3": "not run"}
    assert "without a network" in rows["f"]["note"]


def test_a_class_that_all_ran_exits_0(tmp_path):
    write(tmp_path, "one.ipynb", [SETUP, MASK])
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade",
                           str(tmp_path / "one.ipynb"), "--lang", "zh"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and "通过 1 / 3" in done.stdout


def test_a_wrong_argument_is_one_line_and_exit_code_2():
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade", "x.ipynb",
                           "--timeout", "-1"], capture_output=True, text=True)
    assert done.returncode == 2 and "--timeout" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade", "x.ipynb",
                           "--timeout", "1e9"], capture_output=True, text=True)   # past a clock's
    assert done.returncode == 2 and "604,800" in done.stderr and "Traceback" not in done.stderr


def test_a_notebook_whose_name_starts_with_a_dash_is_told_how_to_give_it(tmp_path):
    write(tmp_path, "-x.ipynb", [SETUP, MASK])
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade", "-x.ipynb"],
                          capture_output=True, text=True, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    says(done.stderr, "'-x.ipynb' was read as an option", "-- -x.ipynb", "./-x.ipynb")


def test_a_kernel_its_own_code_stops_is_continued_and_named(tmp_path):
    """A stopped kernel ignores the interrupt at --cell-timeout and would hold the grader to
    --timeout: it is continued, its checks after that cell count, and the row names the
    cell."""
    write(tmp_path, "stops.ipynb", [SETUP, "import os, signal\nos.kill(os.getpid(), "
                                            "signal.SIGSTOP)", MASK])
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade",
                           str(tmp_path / "stops.ipynb"), "--json", "--cell-timeout", "20",
                           "--timeout", "120"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600)
    row = json.loads(done.stdout)[0]
    assert row["exercises"]["2.1"]["status"] == "passed"
    says(row["note"], "cell(s) 2", "SIGSTOP", "go on")


def test_a_check_cell_tagged_to_be_skipped_runs_all_the_same(tmp_path):
    """nbclient skips cells tagged skip-execution; a grader does not: a tag cannot keep a
    wrong answer's check from running (here under a stored output that says it passed)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SETUP), nbformat.v4.new_code_cell(
        MASK.replace(".tril()", ".triu()"), metadata={"tags": ["skip-execution"]},
        outputs=[nbformat.v4.new_output("stream", text="Exercise 2.1: passed all 5 cases.\n")])]
    nbformat.write(nb, tmp_path / "tagged.ipynb")
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade",
                           str(tmp_path / "tagged.ipynb"), "--json"], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=600)
    assert json.loads(done.stdout)[0]["exercises"]["2.1"]["status"] == "failed"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_stopping_grade_stops_the_notebook_and_its_kernel(tmp_path, signum):
    """The notebook runs in a process group of its own: a stop of grade must reach it, or a
    looping kernel keeps a core busy after grade has said `interrupted`."""
    marker = tmp_path / "kernel.pid"
    write(tmp_path, "loops.ipynb", [SETUP, f"import os\nopen({str(marker)!r}, 'w').write("
                                           f"str(os.getpid()))\nwhile True:\n    pass", MASK])
    grading = subprocess.Popen([sys.executable, "-m", "annotated.exercises", "grade",
                                str(tmp_path / "loops.ipynb")], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not (marker.is_file() and marker.read_text()) and time.monotonic() < deadline:
        time.sleep(0.2)
    kernel = int(marker.read_text())
    grading.send_signal(signum)
    _, err = grading.communicate(timeout=120)
    assert grading.returncode == 128 + signum and "Traceback" not in err, err
    deadline = time.monotonic() + 60
    while alive(kernel) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(kernel), "the notebook's kernel is still running"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"


def test_a_deleted_check_counts_as_not_run_not_out_of_the_total(tmp_path):
    """A notebook that calls only 2.1's check is graded on chapter 2's three coding exercises;
    an id the book has not is no exercise of the total."""
    write(tmp_path, "only_one.ipynb", [SETUP, MASK, 'check("2.9", len)'])
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade",
                           str(tmp_path / "only_one.ipynb"), "--json"], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=600)
    row = json.loads(done.stdout)[0]
    assert (row["passed"], row["total"]) == (1, 3), row
    assert statuses(row) == {"2.1": "passed", "2.2": "not run", "2.3": "not run"}
    import tempfile                               # and the grader's lock file is gone
    found = tmp_path.stat()
    assert not (Path(tempfile.gettempdir()) / f"annotated-grade-{found.st_dev}-{found.st_ino}"
                ).exists()
    says(row["note"], 'check("2.9", ...)', "2.1, 2.2, 2.3")      # its check printed, not raised


def test_checks_called_in_a_loop_or_under_another_name_are_graded(tmp_path):
    """The notebook's text names no exercise: the checks it runs do."""
    mask, key = MASK.rsplit("\n", 1)[0], KEY.rsplit("\n", 1)[0]
    write(tmp_path, "alias.ipynb", ['from annotated.exercises import checker\nc = checker("zh")',
                                    "import torch", mask, 'c("2.1", causal_mask)'])
    write(tmp_path, "loop.ipynb", [SETUP, mask, key,
                                   'for number, fn in [("2.1", causal_mask)]:\n'
                                   '    check(number, fn)',
                                   'grade_it = check\ngrade_it("2.2", key_mask)'])
    write(tmp_path, "never.ipynb", [SETUP, mask, "if False:\n    check(x, causal_mask)"])
    write(tmp_path, "uncalled.ipynb", [SETUP, mask, 'later = lambda: check("2.1", causal_mask)'])
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade",
                           str(tmp_path / "loop.ipynb"), str(tmp_path / "never.ipynb"),
                           str(tmp_path / "alias.ipynb"), str(tmp_path / "uncalled.ipynb"),
                           "--json"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=600)
    loop, never, alias, uncalled = json.loads(done.stdout)
    # a check inside a lambda never called names its chapter: its exercises never ran
    assert statuses(uncalled) == {"2.1": "not run", "2.2": "not run", "2.3": "not run"}
    assert (alias["passed"], alias["total"]) == (1, 3), alias
    assert (loop["passed"], loop["total"]) == (2, 3), loop
    assert statuses(loop) == {"2.1": "passed", "2.2": "passed", "2.3": "not run"}
    assert not never["graded"] and never["total"] == 0
    says(never["note"], "no exercise")


def test_a_check_called_with_its_number_unquoted_fails_that_exercise_with_the_call_s_line(
        tmp_path):
    """check(2.2, key_mask) prints how to call it and checks nothing: the row fails 2.2 with
    that line, where it said the check never ran. A wrong call after a right one of the same
    exercise leaves the right one's result."""
    key = KEY.rsplit("\n", 1)[0]
    write(tmp_path, "unquoted.ipynb", [SETUP, MASK, key, "check(2.2, key_mask)",
                                       "check(2.1, causal_mask)"])
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade",
                           str(tmp_path / "unquoted.ipynb"), "--json"], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=600)
    row = json.loads(done.stdout)[0]
    assert statuses(row) == {"2.1": "passed", "2.2": "failed", "2.3": "not run"}
    says(row["exercises"]["2.2"]["en"], "check(2.2, ...)", "in quotes", 'check("2.2", ...)')
    says(row["exercises"]["2.2"]["zh"], 'check("2.2", ...)', "引号")
    says(row["note"], 'check("2.2", ...)', "in quotes")        # the table shows it too


@pytest.mark.parametrize("lang, typo, names", [
    ("en", "2.9", ('check("2.9", ...)', "no exercise", "2.1, 2.2, 2.3", "correct the number")),
    ("zh", "2.9", ('check("2.9", ...)', "2.1, 2.2, 2.3")),
    ("en", "2.l", ('check("2.l", ...)', "no exercise", "2.1, 2.2, 2.3")),
    ("en", "1.4", ("1.4", "predict-then-run", "no check")),
    ("zh", "1.4", ("1.4", "先预测、再运行", "没有检查"))])
def test_a_notebook_whose_only_check_has_a_mistyped_number_is_told_the_number(tmp_path, lang,
                                                                              typo, names):
    """Its one check names no exercise of the book: the row says which number and the
    chapter's own, not that the notebook has no check; a letter for a digit too. A number
    of an exercise without a check (predict, then run) is told so, as check itself tells it."""
    write(tmp_path, "typo.ipynb", [SETUP, f'check("{typo}", len)'])
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade", "--lang", lang,
                           str(tmp_path / "typo.ipynb"), "--json"], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=600)
    row = json.loads(done.stdout)[0]
    assert not row["graded"]
    says(row["note"], *names)


def test_a_name_the_locale_cannot_decode_is_shown_not_a_traceback(tmp_path):
    """Under the C locale without UTF-8 mode, a Chinese file name reaches Python as bytes it
    could not decode; the table shows the name, with stdout's UTF-8 as the grader advises."""
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
           "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade",
                           "张三 作业.ipynb"], cwd=tmp_path, capture_output=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=300)
    out = done.stdout.decode("utf-8")
    assert done.returncode == 1 and b"Traceback" not in done.stderr, done.stderr
    says(out.splitlines()[0], "张三 作业.ipynb", "no such file")


def test_a_file_nested_deeper_than_python_reads_is_not_a_notebook(tmp_path):
    from annotated.exercises.grade import notebook_problem
    from annotated.exercises.messages import MESSAGES
    deep = tmp_path / "deep.ipynb"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    nb, problem = notebook_problem(deep, MESSAGES["en"])
    assert nb is None and "JSON" in problem


@pytest.mark.parametrize("change, where, found, expected", [
    ({"cells": {"a": 1}}, "`cells`", ("an object", "一个对象"), ("a list", "一个列表")),
    ({"cells": ["x"]}, "`cells[0]`", ("a string", "一个字符串"), ("an object", "一个对象")),
    ({"metadata": []}, "`metadata`", ("a list", "一个列表"), ("an object", "一个对象")),
    ({"cells": [{"cell_type": 7, "source": "", "metadata": {}}]}, "`cells[0].cell_type`",
     ("a number", "一个数"), ("a string", "一个字符串")),
    ({"cells": [{"cell_type": "markdown", "source": ["a", 3], "metadata": {}}]},
     "`cells[0].source[1]`", ("a number", "一个数"), ("a string", "一个字符串"))])
def test_a_notebook_entry_of_the_wrong_kind_is_named_with_its_place(tmp_path, change, where,
                                                                    found, expected):
    """nbformat's own checks fail inside their code on these (naming a Python error); the row
    names the entry, what it is and what a notebook has there, in both languages."""
    from annotated.exercises.grade import notebook_problem
    from annotated.exercises.messages import MESSAGES
    path = tmp_path / "odd.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                "cells": [], **change}))
    for lang, i in (("en", 0), ("zh", 1)):
        nb, problem = notebook_problem(path, MESSAGES[lang])
        assert nb is None
        says(problem, where, found[i], expected[i])
        assert "attribute" not in problem and "argument" not in problem


def test_a_link_to_a_missing_notebook_is_named_as_a_link(tmp_path):
    """A dangling link is not 'no such file': the row names where it points, in both
    languages."""
    from annotated.exercises.grade import grade, parse_args
    link = tmp_path / "alice.ipynb"
    link.symlink_to(tmp_path / "gone" / "alice.ipynb")
    for lang, words in (("en", ("a link to", "gone/alice.ipynb", "does not exist")),
                        ("zh", ("链接", "gone/alice.ipynb"))):
        row = grade(link, parse_args(["grade", str(link), "--lang", lang]))
        assert not row["graded"]
        says(row["note"], *words)
        assert "check the path" not in row["note"]


def test_a_link_to_itself_is_named_as_a_loop_not_as_missing(tmp_path):
    from annotated.exercises.grade import grade, parse_args
    link = tmp_path / "self.ipynb"
    link.symlink_to(link)
    for lang, words in (("en", ("leads back to itself", "loop")), ("zh", ("绕回自身", "成环"))):
        row = grade(link, parse_args(["grade", str(link), "--lang", lang]))
        assert not row["graded"]
        says(row["note"], *words)
        assert "does not exist" not in row["note"]


def test_control_characters_in_a_name_are_shown_escaped_one_row_a_notebook():
    from annotated.exercises.grade import table
    rows = [{"notebook": "evil\x1b[2J\nname.ipynb", "graded": False, "passed": 0, "total": 0,
             "exercises": {}, "note": "not a notebook: evil\x1b[2J\nname.ipynb"},
            {"notebook": "ok.ipynb", "graded": False, "passed": 0, "total": 0, "exercises": {},
             "note": None}]
    shown = table(rows, "en")
    assert "\x1b" not in shown and len(shown.splitlines()) == 3          # two rows, the legend
    assert shown.splitlines()[0].count("evil\\x1b[2J\\nname.ipynb") == 2


def test_grades_as_json_escape_what_stdout_cannot_write(tmp_path):
    """JSON can say anything in ASCII: --json on an ASCII stdout is written, escaped."""
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade", "--json",
                           "--lang", "zh", "缺.ipynb"], cwd=tmp_path, capture_output=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode == 1, done.stderr
    row = json.loads(done.stdout)[0]
    assert row["notebook"] == "缺.ipynb" and row["note"] and not row["graded"]


def test_a_notebook_too_large_to_read_is_told_how_to_make_it_smaller(tmp_path):
    from annotated.exercises.grade import MAX_BYTES, notebook_problem
    from annotated.exercises.messages import MESSAGES
    with open(tmp_path / "big.ipynb", "wb") as f:
        f.truncate(MAX_BYTES + 1)                   # sparse: nothing written, nothing read
    for lang, names in (("en", ["MB", "Clear Outputs", "hand it in again"]),
                        ("zh", ["MB", "清除所有输出", "重新提交"])):
        says(notebook_problem(tmp_path / "big.ipynb", MESSAGES[lang])[1], *names)


def test_a_pipe_a_device_or_a_huge_file_is_no_notebook_and_never_read(tmp_path):
    os.mkfifo(tmp_path / "pipe.ipynb")
    (tmp_path / "zero.ipynb").symlink_to("/dev/zero")
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade",
                           str(tmp_path / "pipe.ipynb"), str(tmp_path / "zero.ipynb"), "--json"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    rows = json.loads(done.stdout)
    assert done.returncode == 1 and all("not a regular file" in row["note"] for row in rows)


def test_a_folder_given_for_a_notebook_names_the_notebooks_in_it(tmp_path):
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade", str(tmp_path)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    says(done.stdout.splitlines()[0], "a folder", f"{tmp_path}/*.ipynb")


def test_a_notebook_cannot_write_over_another_submission(tmp_path):
    """Each notebook runs in a scratch folder: a file it writes by a relative name lands there,
    not beside the submissions."""
    write(tmp_path, "victim.ipynb", [SETUP, MASK])
    before = (tmp_path / "victim.ipynb").read_bytes()
    write(tmp_path, "writer.ipynb", [SETUP, 'open("victim.ipynb", "w").write("garbage")', MASK])
    write(tmp_path, "absolute.ipynb", [SETUP, f'open({str(tmp_path / "victim.ipynb")!r}, "w")'
                                              f'.write("garbage")', MASK])
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade",
                           *(str(tmp_path / name) for name in
                             ("writer.ipynb", "absolute.ipynb", "victim.ipynb")),
                           "--json"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=600)
    rows = json.loads(done.stdout)
    assert done.returncode == 0 and all(row["passed"] == 1 for row in rows), rows
    assert (tmp_path / "victim.ipynb").read_bytes() == before
    says(rows[1]["note"], "victim.ipynb", "put back",                # by its full path: restored
         "victim.ipynb.found-while-grading")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "absolute.ipynb", "victim.ipynb", "victim.ipynb.found-while-grading", "writer.ipynb"]


def test_what_a_notebook_changes_beside_the_submissions_is_put_back_and_named(tmp_path):
    """Student code may write by absolute path, or change its folder first: every file in the
    submissions' folders and their subfolders is put back as it was, and a file it adds there
    is named."""
    (tmp_path / "notes.txt").write_text("the teacher's notes")
    (tmp_path / "other.ipynb").write_text("a notebook not being graded")
    (tmp_path / "week2" / "data").mkdir(parents=True)
    (tmp_path / "week2" / "data" / "answers.txt").write_text("kept in a subfolder")
    (tmp_path / "a.txt").write_text("A")                     # becomes a folder of that name
    (tmp_path / "mode.txt").write_text("M")                  # made unreadable
    (tmp_path / "mode.txt").chmod(0o640)
    write(tmp_path, "vandal.ipynb", [SETUP, MASK, (
        "import os, shutil\n"
        f"os.chmod({str(tmp_path / 'mode.txt')!r}, 0)\n"
        f"open({str(tmp_path / 'notes.txt')!r}, 'w').write('overwritten')\n"
        f"os.remove({str(tmp_path / 'other.ipynb')!r})\n"
        f"shutil.rmtree({str(tmp_path / 'week2')!r})\n"
        f"os.remove({str(tmp_path / 'a.txt')!r})\n"
        f"os.mkdir({str(tmp_path / 'a.txt')!r})\n"
        f"os.chdir({str(tmp_path)!r})\n"
        "os.symlink('/etc/hostname', 'link_added')\n"
        "open('added.txt', 'w').write('hi')")])
    write(tmp_path, "next.ipynb", [SETUP, MASK])
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade",
                           str(tmp_path / "vandal.ipynb"), str(tmp_path / "next.ipynb"), "--json"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
    vandal, after = json.loads(done.stdout)
    assert done.returncode == 0 and vandal["passed"] == after["passed"] == 1
    assert (tmp_path / "notes.txt").read_text() == "the teacher's notes"
    assert (tmp_path / "other.ipynb").read_text() == "a notebook not being graded"
    assert (tmp_path / "week2" / "data" / "answers.txt").read_text() == "kept in a subfolder"
    assert (tmp_path / "a.txt").read_text() == "A"
    assert (tmp_path / "a.txt.found-while-grading").is_dir()
    assert (tmp_path / "mode.txt").stat().st_mode & 0o777 == 0o640
    assert not (tmp_path / "mode.txt.found-while-grading").exists()     # only its mode changed
    says(vandal["note"], "notes.txt", "other.ipynb", "answers.txt", "mode.txt", "put back",
         "added.txt", "link_added", "delete", "went")
    # what was found in its place is kept, in case another program saved it meanwhile
    assert (tmp_path / "notes.txt.found-while-grading").read_text() == "overwritten"
    says(vandal["note"], "another program", "notes.txt.found-while-grading")
    assert after["note"] is None                           # the next row is not blamed


def test_a_mode_changed_alone_is_put_back_with_a_whole_note(tmp_path):
    (tmp_path / "m.txt").write_text("kept")
    os.chmod(tmp_path / "m.txt", 0o644)
    chmod = f"import os\nos.chmod({str(tmp_path / 'm.txt')!r}, 0o755)"
    write(tmp_path, "chmod.ipynb", [SETUP, chmod, MASK])
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade",
                           str(tmp_path / "chmod.ipynb"), "--json"], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=600)
    note = json.loads(done.stdout)[0]["note"]
    assert (tmp_path / "m.txt").stat().st_mode & 0o777 == 0o644
    says(note, "m.txt", "put back")
    assert "kept as" not in note                   # nothing was kept aside to name


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_grading_stopped_by_a_signal_puts_back_what_the_notebook_changed(tmp_path, signum):
    """Ctrl-C or SIGTERM while a notebook that overwrote a submission still runs: the grader
    stops (one line, the signal's own status) and the submission is put back first, named."""
    (tmp_path / "victim.ipynb").write_text("a student's work")
    write(tmp_path, "vandal.ipynb", [SETUP, MASK, (
        f"open({str(tmp_path / 'victim.ipynb')!r}, 'w').write('garbage')\n"
        f"open({str(tmp_path / 'started')!r}, 'w').close()\n"
        "import time\ntime.sleep(600)")])
    process = subprocess.Popen([sys.executable, "-m", "annotated.exercises", "grade",
                                str(tmp_path / "vandal.ipynb"), str(tmp_path / "victim.ipynb")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    assert (tmp_path / "victim.ipynb").read_text() == "a student's work"
    assert process.returncode == (130 if signum == signal.SIGINT else 143), err
    note, stop = err.splitlines()
    says(note, "vandal.ipynb", "victim.ipynb", "put back")
    assert stop.startswith("interrupted")


def test_a_notebook_stopped_in_a_cell_keeps_the_checks_before_and_names_the_cell(tmp_path):
    """A cell past --timeout, a cell that ignores the interrupt, a cell that signals the
    grading process: the checks before it count, and the row names the cell."""
    write(tmp_path, "slow.ipynb", [SETUP, MASK, "import time\ntime.sleep(600)"])
    write(tmp_path, "stuck.ipynb", [SETUP, MASK, (
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass")])
    write(tmp_path, "signals.ipynb", [SETUP, MASK, (
        "import os, signal\nos.kill(os.getppid(), signal.SIGTERM)\nimport time\n"
        "time.sleep(30)")])
    def grade(names, cell_timeout, timeout):
        done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade",
                               *(str(tmp_path / f"{name}.ipynb") for name in names),
                               "--cell-timeout", str(cell_timeout), "--timeout", str(timeout),
                               "--json"], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=400)
        rows = json.loads(done.stdout)
        assert [row["passed"] for row in rows] == [1] * len(names), rows
        return [row["note"] for row in rows]
    [slow] = grade(["slow"], cell_timeout=300, timeout=30)
    stuck, signals = grade(["stuck", "signals"], cell_timeout=20, timeout=90)  # (a busy
    says(slow, "--timeout", "cell 3", "the checks before it count")    # machine imports slowly)
    says(stuck, "cell 3", "did not stop when interrupted", "the checks before it count")
    assert "were stopped" not in stuck       # its interrupt did not stop it: named once
    says(signals, "cell 3", "not by the grader", "signal")


def test_a_cell_that_ignores_its_interrupt_is_named_and_the_cells_after_it_did_not_run():
    """At --cell-timeout the kernel is interrupted; a cell that ignores it runs on, and every
    cell after it then "times out" without having started. The note names that cell alone."""
    from annotated.exercises.grade import ignored_interrupt
    from annotated.exercises.messages import MESSAGES
    row = {"errors": [{"cell": 2, "stopped": False, "error": "ValueError"},
                      {"cell": 3, "stopped": True, "error": "CellTimeoutError"},
                      {"cell": 4, "stopped": True, "error": "CellTimeoutError"}]}
    died = ignored_interrupt(row, ["unfinished_at", "3"])
    assert died == ["ignored_interrupt", "3"] and [e["cell"] for e in row["errors"]] == [2]
    says(MESSAGES["en"][died[0]].format(detail=died[1]), "cell 3", "did not stop",
         "did not run")
    says(MESSAGES["zh"][died[0]].format(detail=died[1]), "第 3 个单元格", "没有运行")


def test_a_run_stopped_after_its_last_cell_names_no_cell_past_the_end():
    """Stopped (by --timeout) once every cell has run and been reported, as a kernel slow to
    shut down may be: nothing was left unfinished, so the report names no cell; stopped
    before, it names the first cell not reported."""
    from annotated.exercises.run_notebook import REPORT_TYPE, prepared, stopped_in
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in (SETUP, MASK, "while True:\n    pass")]
    nb = prepared(nb, ["2.1"])
    reports = [c for c in nb.cells if c.get("metadata", {}).get("grader") == "report"]
    for done, cell in enumerate(reports, start=1):
        cell.outputs = [nbformat.v4.new_output("display_data", data={REPORT_TYPE: {}})]
        assert stopped_in(nb) == (None if done == 3 else ["stopped_in_cell", str(done + 1)])


def test_a_stop_while_a_cell_runs_cancels_the_run_and_is_remembered():
    """nbclient answers SIGTERM by shutting the kernel down under the running cell, and the run
    then meets a dead kernel or a missing client, depending on timing. The grader's run takes
    the stop back: the run is cancelled (its cleanup shuts the kernel down) and the stop is
    remembered, so that the report of the last cell stands whatever the timing."""
    program = (
        "import asyncio, os, signal\n"
        "from annotated.exercises import run_notebook\n"
        "async def cell():\n"
        "    run_notebook.take_back_the_stop(None)\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    await asyncio.sleep(30)\n"
        "try:\n"
        "    asyncio.run(cell())\n"
        "except asyncio.CancelledError:\n"
        "    print('cancelled', run_notebook.STOPPED == [signal.SIGTERM])\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert done.stdout.split() == ["cancelled", "True"], done.stdout + done.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux subreaper")
def test_a_process_a_notebook_starts_in_its_own_session_does_not_outlive_grading(tmp_path):
    """start_new_session (or setsid) takes a process out of the grader's process group; the
    notebook's run adopts it when the kernel ends and stops it."""
    mark = f"{os.getpid() % 1000 + 9000}.5"                       # a sleep no one else runs
    write(tmp_path, "spawns.ipynb", [SETUP, MASK, (
        "import subprocess\n"
        f"subprocess.Popen(['sleep', '{mark}'], start_new_session=True)\n"
        f"subprocess.Popen(['bash', '-c', 'setsid sleep {mark} & disown'])")])
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade",
                           str(tmp_path / "spawns.ipynb")], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    def command_line(path):
        try:
            return path.read_bytes()
        except OSError:                                  # the process ended meanwhile
            return b""
    left = [p for p in Path("/proc").glob("[0-9]*/cmdline")
            if f"sleep\0{mark}".encode() in command_line(p)]
    assert not left, left


def test_a_terminal_that_cannot_write_the_marks_is_told_before_any_notebook_runs(tmp_path):
    write(tmp_path, "one.ipynb", [SETUP, MASK])
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade",
                           str(tmp_path / "one.ipynb")], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONIOENCODING": "ascii"},
                          timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    says(done.stderr.strip(), "ascii", "PYTHONIOENCODING=utf-8")


def test_a_notebook_that_names_another_python_kernel_is_graded_with_this_one(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in (SETUP, MASK)]
    nb.metadata["kernelspec"] = {"name": "conda-env-dl-py", "language": "python",
                                 "display_name": "Python (dl)"}
    nbformat.write(nb, tmp_path / "conda.ipynb")
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade",
                           str(tmp_path / "conda.ipynb"), "--json"], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=600)
    assert done.returncode == 0 and json.loads(done.stdout)[0]["passed"] == 1, done.stdout


def test_a_second_grader_of_the_same_folder_is_refused_while_the_first_runs(tmp_path):
    """Each would take the other's notebooks' writes for its own and put them back."""
    from annotated.base.errors import DataError
    from annotated.exercises.grade import Folders
    write(tmp_path, "one.ipynb", [SETUP, MASK])
    first = Folders([tmp_path / "one.ipynb"])
    with pytest.raises(DataError) as refused:
        Folders([tmp_path / "one.ipynb"])
    says(str(refused.value), str(tmp_path), "another grader", str(os.getpid()), "wait")
    files = [name for name, _ in first.locks]
    assert all(name.exists() for name in files)
    first.unlock()                          # the first ends: its locks and their files go
    assert not any(name.exists() for name in files)
    second = Folders([tmp_path / "one.ipynb"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.ipynb"]   # no lock among them
    second.unlock()


def test_a_grader_that_lost_the_race_for_a_removed_lock_file_takes_a_new_one(tmp_path):
    """A lock file removed between its opening and its locking (the grader before ended) is
    not kept: two graders would each hold a file of their own."""
    from annotated.exercises.grade import Folders
    write(tmp_path, "one.ipynb", [SETUP, MASK])
    real = Folders.locked
    removed = []

    def locked_then_removed(name, folder):
        handle = real(name, folder)
        if not removed:                     # the first time: another grader unlinks it
            removed.append(name)
            os.unlink(name)
        return handle
    Folders.locked = staticmethod(locked_then_removed)
    try:
        folders = Folders([tmp_path / "one.ipynb"])
    finally:
        Folders.locked = staticmethod(real)
    (name, handle), = folders.locks
    assert removed and os.path.samestat(os.fstat(handle.fileno()), os.stat(name))
    folders.unlock()


def test_a_folder_replaced_by_a_file_or_a_link_is_put_back_and_nothing_written_elsewhere(
        tmp_path):
    """The file or link in the folder's place is kept beside it; the files are put back in a
    real folder, never through the link. A notebook given twice is graded once."""
    class_ = tmp_path / "class"
    (class_ / "sub" / "deeper").mkdir(parents=True)
    (class_ / "sub" / "a.txt").write_text("one")
    (class_ / "sub" / "deeper" / "b.txt").write_text("two")
    (class_ / "linked").mkdir()
    (class_ / "linked" / "a.txt").write_text("mine")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.txt").write_text("TEACHER DATA")
    write(class_, "n.ipynb", [SETUP, MASK, (
        "import os, shutil\n"
        f"shutil.rmtree({str(class_ / 'sub')!r})\n"
        f"open({str(class_ / 'sub')!r}, 'w').write('now a file')\n"
        f"shutil.rmtree({str(class_ / 'linked')!r})\n"
        f"os.symlink({str(elsewhere)!r}, {str(class_ / 'linked')!r})")])
    done = subprocess.run([sys.executable, "-m", "annotated.exercises", "grade",
                           str(class_ / "n.ipynb"), str(class_ / "n.ipynb"), "--json"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
    [row] = json.loads(done.stdout)
    assert done.returncode == 0 and row["passed"] == 1, done.stderr
    says(done.stderr, "note", "n.ipynb is given twice", "graded once")
    assert (class_ / "sub" / "a.txt").read_text() == "one"
    assert (class_ / "sub" / "deeper" / "b.txt").read_text() == "two"
    assert (class_ / "sub.found-while-grading").read_text() == "now a file"
    assert not (class_ / "linked").is_symlink()
    assert (class_ / "linked" / "a.txt").read_text() == "mine"
    assert (elsewhere / "a.txt").read_text() == "TEACHER DATA"
    assert sorted(p.name for p in elsewhere.iterdir()) == ["a.txt"]
    says(row["note"], "a.txt", "b.txt", "put back")


@pytest.fixture
def installation(tmp_path, monkeypatch):
    """A stand-in for the project and Python's installation: a package, the project's folder
    beside it, and a site-packages folder with a start-up file and a library."""
    from annotated.exercises import guard
    project, site = tmp_path / "project", tmp_path / "site-packages"
    (project / "pkg" / "__pycache__").mkdir(parents=True)
    (project / "pkg" / "masks.py").write_text("def tril(x):\n    return x\n")
    (site / "lib").mkdir(parents=True)
    (site / "lib" / "core.py").write_text("VERSION = 1\n")
    (site / "editable.pth").write_text("/somewhere\n")
    monkeypatch.setattr(guard, "PROJECT", project)
    monkeypatch.setattr(guard, "PACKAGES", (project / "pkg",))
    monkeypatch.setattr(guard, "site_folders", lambda: [site])
    return project, site


def test_the_code_later_kernels_run_is_put_back_moved_aside_or_named(installation, tmp_path):
    """A notebook's writes into the project's code are put back (a link in a file's place is
    removed, never written through), a start-up file it adds is moved aside where Python no
    longer reads it, a cache it writes is removed, and a library file it changes is named."""
    from annotated.exercises.guard import Installation
    project, site = installation
    kept = Installation()
    (project / "pkg" / "masks.py").write_text("import os\n")
    (project / "numpy.py").write_text("shadows numpy\n")
    (site / "hook.pth").write_text("import builtins; builtins.HOOKED = 1\n")
    (site / "editable.pth").unlink()
    (tmp_path / "elsewhere.txt").write_text("not the project's")
    (site / "lib" / "core.py").write_text("VERSION = 2\n")
    (project / "pkg" / "__pycache__" / "masks.cpython-311.pyc").write_bytes(b"forged")
    done = kept.restore()
    assert (project / "pkg" / "masks.py").read_text() == "def tril(x):\n    return x\n"
    assert (site / "editable.pth").read_text() == "/somewhere\n"
    assert sorted(done.put_back) == [project / "pkg" / "masks.py", site / "editable.pth"]
    assert sorted(done.moved) == [project / "numpy.py", site / "hook.pth"]
    assert (site / "hook.pth.found-while-grading").is_file() and not (site / "hook.pth").exists()
    assert done.changed == [site / "lib" / "core.py"]
    assert not (project / "pkg" / "__pycache__" / "masks.cpython-311.pyc").exists()
    (project / "pkg" / "masks.py").unlink()
    (project / "pkg" / "masks.py").symlink_to(tmp_path / "elsewhere.txt")
    assert kept.restore().put_back == [project / "pkg" / "masks.py"]
    assert not (project / "pkg" / "masks.py").is_symlink()
    assert (tmp_path / "elsewhere.txt").read_text() == "not the project's"
    again = kept.restore()                       # nothing changed since: nothing to say
    assert again.put_back == again.moved == again.changed == []


def test_a_notebook_that_changes_the_code_of_later_kernels_is_named_in_its_row(
        installation, tmp_path, capsys):
    """Graded in one run: what the first notebook wrote into the project's code and Python's
    start-up files is undone before the second runs, and named in the first's row only."""
    from annotated.exercises import grade
    project, site = installation
    (tmp_path / "class").mkdir()
    write(tmp_path / "class", "a_hostile.ipynb", [SETUP, MASK, (
        f"open({str(project / 'pkg' / 'masks.py')!r}, 'a').write('import os\\n')\n"
        f"open({str(site / 'hook.pth')!r}, 'w').write('import builtins\\n')")])
    write(tmp_path / "class", "b_next.ipynb", [SETUP, MASK, (
        f"assert open({str(project / 'pkg' / 'masks.py')!r}).read().count('import') == 0\n"
        f"import os\nassert not os.path.exists({str(site / 'hook.pth')!r})")])
    grade.main(["grade", str(tmp_path / "class" / "a_hostile.ipynb"),
                str(tmp_path / "class" / "b_next.ipynb"), "--json"])
    hostile, after = json.loads(capsys.readouterr().out)
    assert hostile["passed"] == after["passed"] == 1 and after["errors"] == []
    says(hostile["note"], "masks.py", "put back", "hook.pth", "moved aside",
         "hook.pth.found-while-grading")
    assert after["note"] is None


def test_a_notebook_given_twice_is_named_as_typed_and_graded_once(tmp_path, capsys,
                                                                   monkeypatch):
    from annotated.exercises.grade import once_each
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.ipynb").write_text("{}")
    (tmp_path / "b.ipynb").symlink_to(tmp_path / "a.ipynb")
    kept = once_each([Path("a.ipynb"), Path("./a.ipynb"), Path("b.ipynb")])
    assert kept == [Path("a.ipynb")]
    twice, linked = capsys.readouterr().err.strip().splitlines()
    says(twice, "a.ipynb is given twice", "graded once")
    says(linked, "b.ipynb is a.ipynb", "given before", "graded once")


@pytest.mark.parametrize("shared, kind", [("HOME", "home folder"), ("TMPDIR", "temporary")])
def test_notebooks_in_a_folder_other_programs_write_in_are_refused_before_any_runs(
        tmp_path, monkeypatch, shared, kind):
    """The grader puts back every file of the submissions' folder that changes while a
    notebook runs: in the home or a temporary folder that would undo other programs' writes
    (a training run's log), so it names the folder and asks for one of their own."""
    import tempfile
    from annotated.base.errors import DataError
    from annotated.exercises.grade import Folders
    monkeypatch.setenv(shared, str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)          # read TMPDIR again
    (tmp_path / "alice.ipynb").write_text("{}")
    with pytest.raises(DataError) as refused:
        Folders([tmp_path / "alice.ipynb"])
    says(refused, str(tmp_path), kind, "other programs", "folder of their own")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["alice.ipynb"]     # no lock left
