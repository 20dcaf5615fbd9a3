"""How long each exercise's check takes on one CPU thread: with its worked solution (every case
runs) and with each wrong answer it knows (it stops at the first failing case, then recognises
the slip).

    python -m benchmarks.exercise_checks [--threads 1] [--repeats 3]

Target: every check under 2 s on one thread, so that a learner's cell answers at once and the
grader's time goes to the notebooks themselves.
"""
import contextlib
import io
import json
import time
from pathlib import Path

from annotated.base.cli import ArgumentParser, command
from annotated.exercises import exercises
from annotated.exercises.core import run
from benchmarks.common import add_timing_arguments, set_threads

SOLUTIONS = Path(__file__).resolve().parent.parent / "chapters" / "solutions"
TARGET_SECONDS = 2.0


def solved_functions() -> dict:
    """Every name the solutions notebooks define, their code cells run in order (what they
    print, their own checks' lines, unshown)."""
    namespace = {}
    for path in sorted(SOLUTIONS.glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile("".join(cell["source"]), path.name, "exec"), namespace)
    return namespace


def slowest(fn_by_name: dict, exercise, repeats: int) -> tuple[float, str]:
    """The slowest of the checks of `exercise` with these functions (best of `repeats` runs
    each), and which function it was."""
    times = {}
    for name, fn in fn_by_name.items():
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            run(exercise, fn)
            best = min(best, time.perf_counter() - start)
        times[name] = best
    worst = max(times, key=times.get)
    return times[worst], worst


@command
def main(argv=None):
    parser = ArgumentParser(prog="python -m benchmarks.exercise_checks",
                            description=__doc__.split("\n\n")[0])
    add_timing_arguments(parser, repeats=3, threads=1)
    args = parser.parse_args(argv)
    threads = set_threads(args.threads, default=1)
    solved = solved_functions()
    print(f"{threads} thread(s), best of {args.repeats}; target: every check under "
          f"{TARGET_SECONDS:g} s")
    print(f"{'exercise':9s} {'solution':>9s} {'slowest slip':>13s}  slips")
    over = []
    for exercise in exercises().values():
        right, _ = slowest({"solution": solved[exercise.function]}, exercise, args.repeats)
        wrong, _ = slowest({f"slip {i}": s.wrong for i, s in enumerate(exercise.slips)},
                           exercise, args.repeats)
        over += [exercise.id] if max(right, wrong) > TARGET_SECONDS else []
        print(f"{exercise.id:9s} {right * 1000:7.1f}ms {wrong * 1000:11.1f}ms  "
              f"{len(exercise.slips)}")
    print("every check is under the target" if not over else
          f"over the target: {', '.join(over)}")


if __name__ == "__main__":
    main()
