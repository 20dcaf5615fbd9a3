"""The chapters' exercises, checked: the learner writes a function, one call checks it.

    from annotated.exercises import checker
    check = checker("en")              # checker("zh"): the messages in Chinese
    check("2.1", causal_mask)          # one line: passed, or what is wrong, and a hint

    core         how a check runs: the cases, the right answer, the comparison, the slips
    messages     the words of every check's line and of the grader's table, per language
    notebook     where the exercises sit in a chapter or a solutions notebook
    grade        `python -m annotated.exercises grade NOTEBOOK...`: a teacher's grading
    run_notebook one student's notebook run for the grader, in a process of its own
    guard        the code later notebooks run, put back after each graded notebook
    ch01         chapter 1's coding exercises: attention, its softmax and its backward
    ch02         chapter 2's: the masks, attention under a mask
    ch03         chapter 3's: splitting and merging heads, the multi-head layer
    ch04         chapter 4's: the sinusoids and their rotation
    ch05         chapter 5's: the feed-forward network, the sublayer, the embeddings
    ch06         chapter 6's: the schedule, label smoothing, the loss and its gradient
    ch07         chapter 7's: the length penalty, a step of beam search
    ch08         chapter 8's: BLEU and perplexity
    ch09         chapter 9's: averaging checkpoints, accumulating gradients

Each chapter's module gives, for each of its coding exercises, the cases, the right answer
(from reference_numpy/ where it has one, else from the package), the hint, and the slips the
check recognises.

Nothing here imports the solutions, which are notebooks of their own in chapters/solutions/.
In a notebook, a check's line is shown as an output that carries the line in every language
of the book (in its metadata, under "exercise"), so that the book's translated notebooks show
it in their own language without running anything again.
"""
import importlib
import os
import sys

from annotated.base.cli import escaped_for_stdout
from annotated.exercises.core import Exercise, Result, run
from annotated.exercises.messages import MESSAGES
from annotated.exercises.notebook import kind_in_the_book, typed

CHAPTERS = [f"ch{n:02d}" for n in range(1, 10)]
#: The last result of each exercise checked in this process, by exercise id: what the grader
#: reads once a student's notebook has run.
CHECKED: dict[str, Result] = {}


def exercises() -> dict[str, Exercise]:
    """Every coding exercise of the book, by its id ("2.1"), in the book's order."""
    found = {}
    for name in CHAPTERS:
        module = importlib.import_module(f"annotated.exercises.{name}")
        found.update({e.id: e for e in module.EXERCISES})
    return found


def graded_ids(called) -> list[str]:
    """The exercises a notebook is graded on, in the book's order: every coding exercise of each
    chapter whose checks it calls (`called`, ids such as "2.1"), so that a check deleted from
    the notebook counts as not run instead of shrinking the total. An id the book has not (a
    typo) brings in no chapter: the grade's note names it."""
    known = exercises()
    chapters = {i.split(".")[0] for i in called if i in known}
    return [i for i in known if i.split(".")[0] in chapters]


def result_of(exercise_id: str, fn) -> Result:
    """The check of `fn` as the exercise `exercise_id`, its message in every language; a call
    that is itself wrong (see misused) is a ValueError saying how."""
    exercise_id = exercise_id.strip() if isinstance(exercise_id, str) else exercise_id
    problem = misused(exercise_id, fn, "en")
    if problem:
        raise ValueError(problem)
    return run(exercises()[exercise_id], fn)


def nearest_ids(exercise_id: str) -> str:
    """The ids a mistyped `exercise_id` was likely meant to be: its chapter's ("2.1, 2.2,
    2.3"), or the book's first and last when its chapter has none ("1.1–9.3", a range in
    every language)."""
    found = list(exercises())
    same = [i for i in found if i.split(".")[0] == exercise_id.split(".")[0]]
    return ", ".join(same) if same else f"{found[0]}–{found[-1]}"


def checker(lang: str = "en"):
    """`check(exercise_id, fn)` with its messages in `lang` ("en" or "zh"; "zh-CN" and "ZH"
    are "zh"). Another language is one line, and the checks speak English."""
    given = lang
    lang = lang.lower().replace("_", "-").split("-")[0] if isinstance(lang, str) else lang
    if lang not in MESSAGES:
        print(escaped_for_stdout(f"note: checker({given!r}): the checks have no messages in "
                                 f"that language, so they speak English; the book's languages "
                                 f"are {', '.join(map(repr, MESSAGES))}"))
        lang = "en"

    def check(exercise_id: str | None = None, fn=None, *more, **named) -> None:
        """Check `fn` as exercise `exercise_id` and show one line saying how it went (or how
        the call itself is wrong: no function, a number not in quotes, no such exercise,
        arguments given by name, which `check(exercise="2.1", function=f)` guesses)."""
        if named:                  # the number and the function, whatever they were named
            values = list(named.values())
            exercise_id = next((v for v in values if isinstance(v, str)), exercise_id)
            fn = next((v for v in values if callable(v)), fn)
            more = (*more, named)
        exercise_id = typed(exercise_id) if isinstance(exercise_id, str) else exercise_id
        misuse = misused(exercise_id, fn, lang, more)
        if misuse:
            print(escaped_for_stdout(misuse))
            keep_misuse(exercise_id, fn, more)
            return
        result = result_of(exercise_id, fn)
        CHECKED[exercise_id] = result
        show(result, lang)
    return check


def misused(exercise_id, fn, lang: str, more=()) -> str | None:
    """What is wrong with the call check(exercise_id, fn, *more) itself, in `lang`, or None."""
    say = MESSAGES[lang]
    if more or (exercise_id is None and fn is None):          # check(), check("2.1", f, g)
        return say["usage"].format(id=likely_id(exercise_id, fn),
                                   name=shown(fn) if callable(fn) else "your_function")
    if callable(exercise_id) and not callable(fn):          # check(causal_mask, "2.1")
        return swapped(exercise_id, fn, say)
    if not isinstance(exercise_id, str):
        return say["id_as_text"].format(given=shown(exercise_id),
                                        id=likely_id(exercise_id, fn))
    if exercise_id not in exercises():
        return not_an_exercise(exercise_id, say)
    if fn is None:
        return say["needs_fn"].format(id=exercise_id)
    return None


def not_an_exercise(exercise_id: str, say: dict) -> str:
    """Why check cannot run `exercise_id`, in the language of `say`: it is an exercise without
    a check (predict, or derive), or no exercise of the book at all (the nearest ones named)."""
    if (kind := kind_in_the_book(exercise_id)) is not None:
        return say["not_coding"].format(id=exercise_id, kind=say["kinds"][kind])
    return say["unknown_id"].format(id=exercise_id, known=nearest_ids(exercise_id))


def keep_misuse(exercise_id, fn, more) -> None:
    """For the grader: a wrong call of check (a number not in quotes, the arguments swapped)
    fails the exercise it most likely meant, with the call's own line, unless a check of that
    exercise has run already."""
    meant = likely_id(exercise_id, fn)
    if meant in exercises() and meant not in CHECKED:
        CHECKED[meant] = Result(meant, "failed", {lang: misused(exercise_id, fn, lang, more)
                                                  for lang in MESSAGES}, 0, wrong_call=True)


def likely_id(given, fn) -> str:
    """The exercise a wrong call most likely meant: the number given, as text (2.1, b"2.1"),
    else the exercise whose function has fn's name, else the placeholder N.M."""
    if isinstance(given, bytes):
        given = given.decode("utf-8", "replace")
    if isinstance(given, (int, float)) and not isinstance(given, bool):
        given = str(given)
    if isinstance(given, str) and given.strip() in exercises():
        return given.strip()
    name = getattr(fn if callable(fn) else given, "__name__", "")
    return next((i for i, e in exercises().items() if e.function == name), "N.M")


def shown(value) -> str:
    """A value as a call shows it: a function by its name (your_function for a lambda), any
    other value by its short repr."""
    if callable(value):
        name = getattr(value, "__name__", "")
        return name if name.isidentifier() else "your_function"
    text = repr(value)
    return text if len(text) <= 30 else text[:27] + "..."


def swapped(fn, exercise_id, say: dict) -> str:
    """The line for check(fn, "2.1"), or check(fn): the call as written, and as it should be,
    with the exercise whose function has fn's name where the call gives no number."""
    name = shown(fn)
    written = f"check({name}" + (")" if exercise_id is None else f", {exercise_id!r})")
    return say["swapped"].format(written=written, id=likely_id(exercise_id, fn), name=name)


def show(result: Result, lang: str) -> None:
    """Print the result's line in `lang`; in a notebook, as an output whose metadata holds it
    in every language."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        print(escaped_for_stdout(result.message(lang)))
        return
    display({"text/plain": result.message(lang)}, raw=True,
            metadata={"exercise": {"id": result.id, "status": result.status,
                                   **result.messages}})


#: Each file of the book's solutions this process opened since watch_solutions: for the grader.
SOLUTIONS_OPENED: list[str] = []


def watch_solutions(folder: str) -> None:
    """For the grader, in a student's kernel before any of its code: note each file under
    `folder` (chapters/solutions/) that the process opens from now on (an audit hook, which no
    code can remove), so that a notebook that runs the book's solutions is named."""
    root = os.path.join(os.path.realpath(folder), "")

    def opened(event, args):
        if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            try:
                path = os.path.realpath(os.fsdecode(args[0]))
            except (OSError, ValueError):          # (a name that is no path: open() says so)
                return
            if path.startswith(root) and path not in SOLUTIONS_OPENED:
                SOLUTIONS_OPENED.append(path)
    sys.addaudithook(opened)


def grading_report(ids: list[str]) -> dict[str, dict]:
    """For the grader: the last result of each exercise of `ids` (those its checks name in the
    notebook's text) and of the chapters of every check this process ran (in a loop, under
    another name), its status and its line in every language; "not run" for one that no check
    reached."""
    return {i: {"status": CHECKED[i].status, **CHECKED[i].messages,
                **({"wrong_call": True} if CHECKED[i].wrong_call else {})} if i in CHECKED
            else {"status": "not run"} for i in graded_ids([*ids, *CHECKED])}


check = checker("en")
