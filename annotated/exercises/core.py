"""How an exercise is checked: the learner's function against the right answer, case by case.

An `Exercise` names the function the learner writes, a list of cases (fixed, random with a
fixed seed, and adversarial: odd lengths, a batch of one, all-padding rows, float64, the edge
of a dtype), the right answer for a case (from reference_numpy/ where it has one, else from
the package), a hint that points to the idea, and the slips it recognises: wrong answers
written out, so that a learner's answer equal to one of them is named ("your heads were
merged without moving the head axis back").

`run(exercise, fn, lang)` calls `fn` on each case in turn (on copies, so nothing it does to
its arguments carries over), stops at the first case whose answer is wrong, and returns a
`Result` whose message is one line: passed, not attempted yet (the stub still raises
NotImplementedError), or the failing case, what was expected and what came back, the slip
if one matches, and the hint. Every text a learner reads is a `Text`, one string per
language.
"""
import contextvars
import copy
import dis
import functools
import hashlib
import importlib
import inspect
import numbers
import os
import signal
import sys
import sysconfig
import threading
import traceback
import types
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from annotated.exercises.messages import MESSAGES


@dataclass(frozen=True)
class Text:
    """One text in every language of the book."""
    en: str
    zh: str

    def __call__(self, lang: str, **values) -> str:
        return getattr(self, lang).format(**values)


@dataclass(frozen=True)
class Case:
    """One call of the learner's function: its arguments, and how the message names it."""
    label: Text
    args: tuple
    kwargs: dict = field(default_factory=dict)


# Added to every case's seed while the check makes its cases again with other numbers, and
# how far the seeds move then.
SEED_OFFSET = contextvars.ContextVar("seed_offset", default=0)
OTHER_SEEDS = 1_000_003


def seeded(seed: int) -> torch.Generator:
    """A case's random generator: the same numbers on every run, from its own seed (moved by
    SEED_OFFSET when the check makes the cases again with other numbers)."""
    return torch.Generator().manual_seed(seed + SEED_OFFSET.get())


def draw(low: int, high: int, seed: int) -> int:
    """A case's random whole number from low to high: the same on every run, from its own seed.
    A check whose arguments are numbers, not tensors, draws one case's numbers this way, so
    that the cases made again with other numbers hold that case with new ones."""
    return int(torch.randint(low, high + 1, (), generator=seeded(seed)))


def randn(*shape, seed: int, dtype=torch.float64) -> torch.Tensor:
    """A case's random tensor: the same numbers on every run, from its own seed."""
    return torch.randn(*shape, generator=seeded(seed), dtype=dtype)


def tokens(rows: list[list[int]]) -> torch.Tensor:
    """A case's batch of token ids, (batch, seq)."""
    return torch.tensor(rows, dtype=torch.long)


@dataclass(frozen=True)
class Slip:
    """A wrong answer the check recognises. `wrong` computes what the mistaken code returns
    for a case's arguments; `page` is the slip's anchor on the book's Common slips page, or
    None for a slip that only this exercise meets."""
    says: Text
    wrong: Callable
    page: str | None = None


@dataclass(frozen=True)
class Exercise:
    id: str                          # "2.1": chapter 2, exercise 1
    function: str                    # the name of the function the learner writes
    topic: Text
    cases: Callable[[], list[Case]]  # made afresh for each check, from fixed seeds
    answer: Callable                 # the right result for a case's arguments
    hint: Text
    slips: tuple[Slip, ...] = ()
    compare: Callable | None = None  # (expected, got) -> a problem (Text, values) or None
    forbidden: tuple[str, ...] = ()  # what the exercise says to do without: "torch.softmax"
    rule: Callable | None = None     # (result, args as the learner's function left them) ->
    #                                  a Text if a right result broke the rule
    allowed: tuple[Callable, ...] = ()   # the project's functions its text lets the answer call


# torch's operators written in Python (its references and decompositions): calling them is
# calling torch's own version of the step.
TORCH_IN_PYTHON = ("torch._refs.", "torch._decomp.", "torch._prims.")
# torch's attention, which holds a softmax: forbidden wherever the answer is equation (1).
ATTENTION = ("torch.nn.functional.scaled_dot_product_attention", *TORCH_IN_PYTHON,
             *(f"torch.ops.aten.{op}" for op in (
                 "scaled_dot_product_attention", "_scaled_dot_product_attention_math",
                 "_scaled_dot_product_flash_attention_for_cpu")))
# What runs code out of the check's sight, refused in every exercise: another process (the
# ways in of subprocess, multiprocessing, os.system and os.fork; the project's code could run
# there) and torch.compile or TorchScript, whose compiled code the check cannot follow.
PROCESSES = ("_posixsubprocess.fork_exec", "os.fork", "os.posix_spawn", "os.posix_spawnp",
             "os.system")
COMPILED, SCRIPTED_NAME = "torch.compile", "torch.jit (TorchScript)"


def present(name: str) -> bool:
    """Whether this platform has the function `name` ("os.fork": not on Windows)."""
    module, _, attribute = name.rpartition(".")
    try:
        return hasattr(importlib.import_module(module), attribute)
    except ImportError:
        return False


OUT_OF_SIGHT = tuple(filter(present, PROCESSES)) + (COMPILED,)

ATEN = "torch.ops.aten."      # a forbidden name under it: the operator, called through torch.ops
# torch's own backward kernels (the softmax's, the embedding's, ...): the answer of a
# "backward", each under its public name and as an operator.
BACKWARD_KERNELS = tuple(f"torch.{name}" for name in dir(torch) if "backward" in name) + tuple(
    f"{ATEN}{name}" for name in sorted({op.split("::")[1].split(".")[0]
                                        for op in torch._C._dispatch_get_all_op_names()
                                        if op.startswith("aten::") and "backward" in op}))
# Any tensor saved for a backward pass while the answer runs: an autograd graph being built.
GRAPH = "torch.autograd (a tensor that requires grad)"
# What an exercise that says "no autograd" forbids: the public ways in, forward mode (autograd
# too), the engine that every backward pass goes through, any graph at all, torch's Python
# versions of its operators, and its backward kernels.
AUTOGRAD = ("torch.Tensor.backward", "torch.autograd.backward", "torch.autograd.grad",
            *(f"torch.func.{f}" for f in ("vjp", "grad", "grad_and_value", "jacrev", "hessian",
                                          "jvp", "jacfwd", "linearize")),
            *(f"torch.autograd.functional.{f}" for f in ("vjp", "vhp", "hvp", "hessian")),
            "torch.autograd.functional.jacobian", "torch.autograd.functional.jvp",
            "torch.autograd.forward_ad.make_dual",
            "torch.autograd.Variable._execution_engine.run_backward",
            "torch.autograd.graph.saved_tensors_hooks",
            "torch.autograd.graph.disable_saved_tensors_hooks", GRAPH, *TORCH_IN_PYTHON,
            *BACKWARD_KERNELS)


@dataclass(frozen=True)
class Result:
    id: str
    status: str                      # "passed", "failed" or "not attempted"
    messages: dict[str, str]         # the one line the learner reads, in every language
    cases: int                       # the cases that ran (all of them when passed)
    wrong_call: bool = False         # failed by a wrong call of check, which ran no case

    def message(self, lang: str = "en") -> str:
        return self.messages[lang]


# ---- comparing an answer with the expected one ----

#: (rtol, atol) by dtype: what two correct implementations that add up in another order
#: still share. In float64, an entry may also be off by rtol of the largest expected magnitude:
#: one that should be 0 beside entries of 1 comes out of a solve or a long sum as a few 1e-12.
TOLERANCE = {np.dtype(np.float64): (1e-10, 1e-12), np.dtype(np.float32): (1e-4, 1e-5),
             np.dtype(np.float16): (1e-2, 1e-2)}


def as_array(x) -> np.ndarray | None:
    """A tensor, array or number as a NumPy array (None for anything else)."""
    if isinstance(x, torch.Tensor):
        if x.is_meta:                              # shapes only: no values to compare
            return None
        x = x.detach().cpu()
        x = x if x.layout == torch.strided else x.to_dense()             # sparse: its values
        return (x.float() if x.dtype == torch.bfloat16 else x).numpy()
    if isinstance(x, (np.ndarray, np.generic, bool, int, float)):
        return np.asarray(x)
    return None


def kind(dtype: np.dtype) -> str:
    return "bool" if dtype == np.bool_ else "float" if dtype.kind == "f" else \
        "int" if dtype.kind in "iu" else str(dtype)


def compare(expected, got, lang: str, inner: bool = False) -> str | None:
    """What differs between `got` and `expected`, one phrase in `lang`, or None if they agree:
    the type, the number of values returned, the shape, the dtype, or the first entry off.
    `inner`: comparing items inside a returned value (named as its items, not values)."""
    if got is None:
        return MESSAGES[lang]["none"]
    if isinstance(got, types.GeneratorType):
        lazy = got.gi_code.co_name == "<genexpr>"           # (x for ...), not a def with yield
        return MESSAGES[lang]["genexpr" if lazy else "generator"]
    if isinstance(expected, tuple):
        if not isinstance(got, (tuple, list)):     # one value, or several but not in order
            return MESSAGES[lang]["not_tuple_inner" if inner else "not_tuple"].format(
                expected=len(expected), got=type(got).__name__)
        if len(got) != len(expected):
            return MESSAGES[lang]["count_inner" if inner else "count"].format(
                expected=len(expected), got=len(got))
        for i, (e, g) in enumerate(zip(expected, got)):
            problem = compare(e, g, lang, inner=True)
            if problem:
                return MESSAGES[lang]["item" if inner else "returned"].format(
                    i=i + 1, n=len(expected), problem=problem)
        return None
    if isinstance(expected, torch.Tensor) and not isinstance(got, torch.Tensor) \
            and as_array(got) is not None:      # a NumPy array, a list, a number (loss.item())
        owner = type(got).__module__
        return MESSAGES[lang]["not_tensor"].format(
            got=type(got).__name__ if owner == "builtins" else f"{owner}.{type(got).__name__}")
    want, have = as_array(expected), as_array(got)
    if isinstance(got, (bool, np.bool_)) and want is not None and want.dtype != np.bool_:
        return MESSAGES[lang]["type"].format(got=f"bool ({got})")    # a test, not a number
    if isinstance(got, int) and not isinstance(got, bool) and want is not None \
            and want.ndim == 0 and kind(want.dtype) == "float":
        have = have.astype(want.dtype)          # a whole number as a Python int: 1 for 1.0
    if isinstance(got, torch.Tensor) and got.is_meta:
        return MESSAGES[lang]["meta"]
    if isinstance(got, torch.Tensor) and (got.layout != torch.strided or got.is_mkldnn):
        return MESSAGES[lang]["layout"].format(
            layout="MKLDNN" if got.is_mkldnn else str(got.layout).removeprefix("torch."))
    if isinstance(got, numbers.Complex) and not isinstance(got, numbers.Real) \
            and want is not None:               # float() of a complex raises
        return MESSAGES[lang]["complex"].format(got=got)
    if have is None and isinstance(got, numbers.Number) and want is not None:
        return MESSAGES[lang]["number_type"].format(got=f"{type(got).__module__}."
                                                        f"{type(got).__name__}")
    if have is None:
        return MESSAGES[lang]["type"].format(got=type(got).__name__)
    if want.shape != have.shape:
        return MESSAGES[lang]["shape"].format(expected=tuple(want.shape), got=tuple(have.shape))
    if isinstance(got, torch.Tensor) and got.dtype == torch.bfloat16 and want.ndim and not (
            isinstance(expected, torch.Tensor) and expected.dtype == torch.bfloat16):
        # as_array gave it as float32 (NumPy has no bfloat16): name the dtype returned
        return MESSAGES[lang]["dtype"].format(expected=want.dtype, got="bfloat16")
    if kind(want.dtype) != kind(have.dtype) or (kind(want.dtype) == "float" and want.ndim and
                                                want.dtype != have.dtype):
        return MESSAGES[lang]["dtype"].format(expected=want.dtype, got=have.dtype)
    return first_difference(want, have, lang)


def first_difference(want: np.ndarray, have: np.ndarray, lang: str) -> str | None:
    """The first entry where `have` is off `want` (beyond TOLERANCE), or None."""
    if kind(want.dtype) == "float":
        rtol, atol = TOLERANCE.get(want.dtype, TOLERANCE[np.dtype(np.float32)])
        if want.dtype == np.float64 and want.size:
            atol = max(atol, rtol * float(np.nan_to_num(np.abs(want), posinf=0.0).max()))
        with np.errstate(invalid="ignore", over="ignore"):
            off = ~np.isclose(have.astype(np.float64), want.astype(np.float64), rtol=rtol,
                              atol=atol, equal_nan=True)
    else:
        off = have != want
    if not off.any():
        return None
    where = tuple(int(i) for i in np.argwhere(off)[0]) if want.ndim else ()
    expected, got = entries(want[where], have[where])
    said = MESSAGES[lang]["value_at" if where else "value"].format(where=list(where),
                                                                   expected=expected, got=got)
    return said + small_error_note(want, have, lang)


def entries(want, have) -> tuple[str, str]:
    """Two entries as text, floats with six significant digits, or as many more as it takes to
    tell them apart (a float64 answer computed in float32 is off in the eighth)."""
    want, have = (x.item() if hasattr(x, "item") else x for x in (want, have))
    if not (isinstance(want, float) and isinstance(have, float)):
        return str(want), str(have)
    shown = f"{want:.6g}", f"{have:.6g}"
    for digits in range(7, 18):                 # trailing zeros kept: 0.20827600, 0.20827596
        if shown[0] != shown[1]:
            break
        shown = f"{want:#.{digits}g}", f"{have:#.{digits}g}"
    return shown


def small_error_note(want: np.ndarray, have: np.ndarray, lang: str) -> str:
    """A note for a float64 answer whose every entry is off by no more than float32's rounding
    (a few parts in a million): given back in float32, or computed in float32 somewhere (a
    .float(), a torch.tensor of Python floats), or approximated (finite differences); or off by
    far less, as a long, ill-conditioned or approximate way in float64 makes it. Also a
    result rounded to a few decimals, as for printing it."""
    if not (np.isfinite(want).all() and np.isfinite(have).all()):
        return ""
    bound = np.isin(have, (0, 1, -1)).all()       # 1 for 0.9995 comes of a clamp, a min(1,
    for decimals in range(4, 0, -1):              # ...) or a branch far more often
        rounded = np.round(want.astype(np.float64), decimals)
        if not bound and rounded.any() and np.array_equal(rounded, have.astype(np.float64)):
            return MESSAGES[lang]["rounded"].format(decimals=decimals)
    if want.dtype != np.float64:
        return ""
    off = np.abs(have.astype(np.float64) - want)
    if not off.any() or (off > 4e-6 * np.abs(want) + 1e-7 * np.abs(want).max()).any():
        return ""
    said = ("float32_result" if have.dtype == np.float32 else
            "rounding" if off.max() > FLOAT64_WORK * np.abs(want).max() else "float64_way")
    return MESSAGES[lang][said].format(off=f"{off.max():.1g}")


#: Below this share of the largest expected magnitude, an answer's error is too small for any
#: float32 step (whose rounding is about 6e-8 of a number): it came from float64 work.
FLOAT64_WORK = 1e-9


# ---- running a check ----

@dataclass(frozen=True)
class Outcome:
    """How the learner's function fared: its status, the cases that ran and, when it failed,
    the case, what it returned (or the error it raised) and what was expected."""
    status: str      # passed, failed, not attempted, not callable, own, changed, forbidden,
    #                  rule (a right result, reached the way the exercise forbids), tampered,
    #                  emptied (the check was left no case to run),
    #                  again (wrong on a case made again with other numbers)
    n: int
    case: Case | None = None
    got: Any = None
    expected: Any = None
    later: list = field(default_factory=list)   # results_after a wrong case


def call(fn, case: Case, kept: list | None = None):
    """fn on copies of the case's arguments, so that nothing it does to them carries over; what
    it returned, and the name of the first argument it changed in place (None if none).
    `kept`: a list that gets the copies, (args, kwargs), as fn left them (for a rule)."""
    args, kwargs = copy.deepcopy(case.args), copy.deepcopy(case.kwargs)
    if kept is not None:
        kept.append((args, kwargs))
    got = called_from_python(fn)(*args, **kwargs)
    names = parameter_names(fn, len(args))
    given = [*zip(names, case.args, args), *((k, case.kwargs[k], kwargs[k]) for k in kwargs)]
    changed = next((name for name, before, after in given if bits(before) != bits(after)), None)
    return got, changed


def called_from_python(fn):
    """fn, a functools.partial unwrapped into a call made here: a partial calls its function
    from C, where the watch on forbidden functions (forbidding) would not see it."""
    if not isinstance(fn, functools.partial):
        return fn
    inner = called_from_python(fn.func)
    return lambda *args, **kwargs: inner(*fn.args, *args, **{**fn.keywords, **kwargs})


def parameter_names(fn, n: int) -> list[str]:
    """The names of fn's first n positional parameters, or their numbers if it has none."""
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"#{i + 1}" for i in range(n)]


def bits(value) -> list:
    """The bytes of every tensor and array in `value`, and its numbers, strings and the
    lengths and keys of its lists and dicts (nested in lists, tuples and dicts): what a
    function that changes its argument in place changes (a list cleared or appended to)."""
    if isinstance(value, torch.Tensor):      # (as bytes: NumPy has no bfloat16)
        return [value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy()
                .tobytes()] if value.layout == torch.strided and not value.is_meta else []
    if isinstance(value, np.ndarray):
        return [value.tobytes()]
    if isinstance(value, dict):              # (its keys' order aside: a key put back is no change)
        keys = sorted(value, key=repr)
        return [("keys", *map(repr, keys))] + [b for k in keys for b in bits(value[k])]
    if isinstance(value, (list, tuple)):
        return [(type(value).__name__, len(value))] + [b for v in value for b in bits(v)]
    if value is None or isinstance(value, (int, float, complex, str, bytes)):
        return [repr(value)]
    return []


def outcome(exercise: Exercise, fn) -> Outcome:
    """Call `fn` on each case in turn, then on the cases made again with other numbers; the
    first wrong case ends the check."""
    if not callable(fn):
        return Outcome("not callable", 0, got=fn)
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        return Outcome("async", 0, got=fn)          # (calling it would only make a coroutine)
    if from_the_package(fn) or fn is exercise.answer or rebuilt(fn, exercise.answer):
        return Outcome("own", 0, got=fn)
    cases = tuple(exercise.cases())   # a tuple: the learner's code cannot shorten it
    if not cases:                      # ... nor may it leave the check nothing to run
        return Outcome("emptied", 0)
    if unseen := compiled_code_in(fn):
        return Outcome("forbidden", 1, cases[0], unseen)
    found = outcome_on(exercise, fn, cases)
    if found.status != "passed":
        return found
    again = outcome_on(exercise, fn, other_numbers(exercise, cases))
    if again.status == "failed":          # right on the book's numbers only: a kept result?
        return Outcome("again" if given_back(fn, again.got, cases) else "redrawn", again.n,
                       again.case, again.got, again.expected)
    return again if again.status != "passed" else found


def given_back(fn, got, cases: tuple[Case, ...]) -> bool:
    """Whether `got` is what `fn` returns for one of the book's own cases: a result kept from
    an earlier call. (A result of its own that is wrong on the new numbers is another
    mistake, such as an overflow that only larger numbers reach.)"""
    try:
        seen = fingerprint(got)
    except Exception:                              # nothing that can be compared
        return False
    for case in cases:
        try:
            with time_limit(CASE_SECONDS):
                if fingerprint(call(fn, case)[0]) == seen:
                    return True
        except (Exception, TooSlow):
            continue
    return False


def rebuilt(fn, answer) -> bool:
    """Whether `fn` is the check's answer made again from its code and closure (a slip built
    by the same factory has the same code, but another closure)."""
    code = getattr(fn, "__code__", None)
    return code is not None and code is getattr(answer, "__code__", None) and \
        getattr(fn, "__closure__", None) == getattr(answer, "__closure__", None)


def other_numbers(exercise: Exercise, cases: tuple[Case, ...]) -> tuple[Case, ...]:
    """The cases made again from other seeds (other random numbers; the drawn cases with other
    sizes too), those that changed: an answer that gives back a result kept from an earlier
    call, chosen by the inputs' shapes or looked up by their values, is wrong on them."""
    token = SEED_OFFSET.set(OTHER_SEEDS)
    try:
        remade = exercise.cases()
    finally:
        SEED_OFFSET.reset(token)
    return tuple(new for old, new in zip(cases, remade)
                 if fingerprint(new.args) != fingerprint(old.args))


def outcome_on(exercise: Exercise, fn, cases: tuple[Case, ...]) -> Outcome:
    """Call `fn` on each of `cases` in turn; the first wrong case ends the check."""
    for n, case in enumerate(cases, start=1):
        sealed = fingerprint(call(exercise.answer, case))   # before the learner's code runs,
        refused: list[str] = []       # what it called that it may not, even if it caught that
        error, given = None, []       # given: the arguments as the learner's function left them
        try:
            with under_watch(exercise, fn, case, refused):
                got, changed = call(fn, case, given)
        except TooSlow:
            return Outcome("slow", n, case)
        except (Exception, SystemExit) as raised:   # the learner's code: a finding, not a crash
            error = raised
        if refused:
            return Outcome("forbidden", n, case, refused[0])
        expected, meant_to_change = call(exercise.answer, case)   # ... which cannot read it
        if fingerprint((expected, meant_to_change)) != sealed:
            return Outcome("tampered", n, case)
        if isinstance(error, NotImplementedError) and n == 1 and still_the_stub(fn, error):
            return Outcome("not attempted", 0)
        if error is not None:
            return Outcome("failed", n, case, error)
        if changed and not meant_to_change:
            return Outcome("changed", n, case, changed)
        if difference(exercise, expected, got, "en"):
            return Outcome("failed", n, case, got, expected,
                           later=results_after(exercise, fn, cases[n:]))
        broken = exercise.rule and exercise.rule(got, *given[0][0], **given[0][1])
        if broken:                    # the right result, reached the way the exercise forbids
            return Outcome("rule", n, case, broken)
    return Outcome("passed", len(cases))


@contextmanager
def under_watch(exercise: Exercise, fn, case: Case, refused: list):
    """The watch the learner's function runs under on a case: the time limit, and the
    functions the exercise forbids (their names appended to `refused` when called)."""
    with time_limit(CASE_SECONDS), forbidding(
            exercise.forbidden, refused,
            trusted_code(fn, case) | {f.__code__ for f in exercise.allowed}):
        yield


def results_after(exercise: Exercise, fn, cases: tuple[Case, ...]) -> list:
    """(case, what `fn` returns, the right answer) for the cases after a wrong one, as far as
    it runs them as it ran the others (no error, no refused call, in time): against them,
    matching_slip tells two slips apart that agree on the failing case."""
    found = []
    for case in cases:
        refused: list[str] = []
        try:
            with under_watch(exercise, fn, case, refused):
                got = call(fn, case)[0]
        except (TooSlow, Exception, SystemExit):
            break
        if refused:
            break
        found.append((case, got, call(exercise.answer, case)[0]))
    return found


def still_the_stub(fn, error: BaseException) -> bool:
    """Whether `error` was raised by the code of `fn` itself (unwrapped), not by a function it
    called (a helper still a stub, or IPython's refusal of input()), from the one line of its
    body that runs: the book's stub, `raise NotImplementedError`, not an answer that raises it
    for some inputs."""
    frames = traceback.extract_tb(error.__traceback__)
    inner = fn.func if isinstance(fn, functools.partial) else fn
    code = getattr(inspect.unwrap(inner), "__code__", None)
    if not frames or code is None or (frames[-1].filename, frames[-1].name) != (
            code.co_filename, code.co_name):
        return False
    body = {line for _, line in dis.findlinestarts(code) if line and line > code.co_firstlineno}
    return body == {frames[-1].lineno}


def fingerprint(value) -> str:
    """A digest of a value (tensors, arrays and numbers, nested in tuples, lists and dicts):
    what the expected answer is kept as while the learner's code runs, so that the code can
    neither read it nor replace what computes it unseen."""
    digest = hashlib.sha256()

    def add(v):
        if isinstance(v, torch.Tensor):
            v = as_array(v) if v.layout == torch.strided and not v.is_meta else repr(v)
        if isinstance(v, np.ndarray):
            digest.update(f"{v.dtype}{v.shape}".encode() + np.ascontiguousarray(v).tobytes())
        elif isinstance(v, (list, tuple)):
            digest.update(f"{type(v).__name__}{len(v)}".encode())
            for item in v:
                add(item)
        elif isinstance(v, dict):
            for key in v:
                add(key)
                add(v[key])
        else:
            digest.update(repr(v).encode())
    add(value)
    return digest.hexdigest()


SCRIPTED = (torch.jit.ScriptFunction, torch.jit.ScriptModule, torch._C.ScriptMethod)


def compiled_code_in(fn, depth: int = 3) -> str | None:
    """"torch.jit (TorchScript)" if `fn` reaches a traced or scripted function, "torch.compile"
    if it is or reaches a compiled one (through its closure, the globals its code names, or
    the lists and dicts they hold): their code runs out of the check's sight, so the
    project's functions could hide in it."""
    seen, todo = set(), [(fn, depth)]
    while todo:
        value, left = todo.pop()
        if id(value) in seen or left < 0:
            continue
        seen.add(id(value))
        if isinstance(value, SCRIPTED):
            return SCRIPTED_NAME
        if compiled(value):
            return COMPILED
        if isinstance(value, functools.partial):
            todo += [(v, left) for v in (value.func, *value.args, *value.keywords.values())]
        elif inspect.isfunction(value):
            codes = [value.__code__, *(c for c in value.__code__.co_consts
                                       if inspect.iscode(c))]
            names = {n for code in codes for n in code.co_names}
            todo += [(value.__globals__[n], left - 1) for n in names if n in value.__globals__]
            todo += [(cell.cell_contents, left - 1) for cell in value.__closure__ or ()
                     if cell_filled(cell)]
        elif isinstance(value, dict):
            todo += [(v, left - 1) for v in value.values()]
        elif isinstance(value, (list, tuple)):
            todo += [(v, left - 1) for v in value]
    return None


def compiled(value) -> bool:
    """Whether `value` is a function or module that torch.compile made."""
    try:
        return isinstance(value, torch.nn.Module) and hasattr(value, "_orig_mod") or \
            inspect.isfunction(value) and hasattr(value, "_torchdynamo_orig_callable")
    except Exception:                         # an object whose attributes cannot be read
        return False


def cell_filled(cell) -> bool:
    try:
        cell.cell_contents
        return True
    except ValueError:                        # a name bound later in the enclosing function
        return False


#: How long the learner's function may take on one case (the book's answers take a moment).
CASE_SECONDS = 60


class TooSlow(BaseException):
    """Raised inside the learner's function when a case has run CASE_SECONDS: a BaseException,
    so that an answer's own `except Exception` does not swallow it."""


@contextmanager
def time_limit(seconds: float):
    """For the block, in the main thread (where signals arrive): TooSlow after `seconds`. The
    notebook's own SIGALRM handler and timer, if it set any, are put back after. (Windows has
    no SIGALRM: there the cases run without a limit.)"""
    if threading.current_thread() is not threading.main_thread() or \
            not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum, frame):
        raise TooSlow
    previous = signal.signal(signal.SIGALRM, expired)
    left = signal.setitimer(signal.ITIMER_REAL, seconds)[0]
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if left:
            signal.setitimer(signal.ITIMER_REAL, left)


class Forbidden(Exception):
    """Raised by a function the exercise says to do without, when the learner's code calls
    it; its one argument is the function's name."""


class Refused(str):
    """The name of a call an exercise forbids, with `inside`: the library function that the
    learner's code called and that made the call ("" where their own code made it)."""
    inside = ""


def refusal(name: str, frame) -> Refused:
    """`name`, called from `frame`, with the outermost library function between the learner's
    code and `frame`: torch.distributions.Categorical, reached by the learner, calls
    Tensor.logsumexp. The check's own frames are stepped over."""
    while frame is not None and frame.f_code.co_filename in CHECKER_FILES:
        frame = frame.f_back
    outer = None
    while frame is not None and frame.f_code is not call.__code__ \
            and frame.f_code.co_filename.startswith(LIBRARY_FOLDERS):
        outer, frame = frame, frame.f_back
    found = Refused(name)
    if outer is not None:
        found.inside = f"{outer.f_globals.get('__name__')}.{outer.f_code.co_qualname}" \
            .removesuffix(".__init__")
    return found


# Where the project's code lives, as its code objects name their files, and the checker's own
# files there (package_module's aside).
_ROOT = Path(__file__).parents[2]
PROJECT_FOLDERS = (f"{_ROOT / 'annotated'}{os.sep}", f"{_ROOT / 'reference_numpy'}{os.sep}")
CHECKER_FILES = {str(Path(__file__).parent / f) for f in ("__init__.py", "core.py", "messages.py")}
# Where the libraries' code lives (torch's and the standard library's): a forbidden call made
# there was reached through a library function, which the refusal names.
LIBRARY_FOLDERS = tuple({sysconfig.get_paths()[k] for k in ("purelib", "platlib", "stdlib")})


@dataclass
class Refusals:
    """What `forbidding` watches for: the forbidden callables by identity (`originals`), by
    code (`codes`), as C methods by name (`methods`: bound to an object, or reached through a
    base class that cannot be patched), and whole libraries by module prefix; `patched` are
    the (owner, attribute, original) to put back. `held` keeps every original alive, so that
    no other object takes its id while the check runs."""
    originals: dict = field(default_factory=dict)
    held: list = field(default_factory=list)
    codes: dict = field(default_factory=dict)
    methods: dict = field(default_factory=dict)
    libraries: tuple = ()
    patched: list = field(default_factory=list)

    def method_named(self, called) -> str | None:
        """The forbidden name of a C method `called`, bound to its object: Tensor.softmax
        called through torch._C.TensorBase, or the autograd engine's run_backward."""
        target = getattr(called, "__self__", None)
        return next((name for owner, name in self.methods.get(getattr(called, "__name__", None),
                                                               ())
                     if target is owner or (isinstance(owner, type) and isinstance(target, owner))),
                    None)


def refusals(names: tuple[str, ...], refused: list[str]) -> Refusals:
    """Each of `names` replaced, where its owner allows, by a function that raises Forbidden
    (and appends the name to `refused`), and recorded to be recognised however it is reached."""
    found = Refusals(libraries=tuple(n for n in names if n.endswith(".")))  # "sacrebleu."
    for name in names:
        if name.endswith(".") or name == GRAPH:
            continue
        if name.startswith(ATEN):             # the operator itself, under any of its overloads
            packet = getattr(torch.ops.aten, name.removeprefix(ATEN))
            found.originals |= {id(op._op): name for op in
                                [packet, *(getattr(packet, o) for o in packet.overloads())]}
            continue
        path, attribute = name.rsplit(".", 1)
        owner = functools.reduce(getattr, path.split(".")[1:],
                                 importlib.import_module(path.split(".")[0]))
        original = getattr(owner, attribute)
        found.originals[id(original)] = name
        found.held.append(original)
        if hasattr(original, "__code__"):
            found.codes[original.__code__] = name
        found.methods.setdefault(attribute, []).append((owner, name))

        def refuse(*args, _name=name, **kwargs):
            refused.append(refusal(_name, sys._getframe(1)))
            raise Forbidden(_name)
        try:
            setattr(owner, attribute, refuse)
            found.patched.append((owner, attribute, original))
        except (TypeError, AttributeError):   # an immutable type, an object's C method
            pass
    return found


@contextmanager
def forbidding(names: tuple[str, ...], refused: list[str], trusted: set):
    """For the length of the block, each of `names` ("torch.Tensor.softmax",
    "torch.nn.functional.softmax"; "sacrebleu." for every function of that library) raises
    Forbidden when called (refusals), and so does every function of the project
    (package_code) that the learner's code calls, save through the code objects in `trusted`
    (trusted_code): a learner's answer may use torch and their own functions, not the
    project's version of what they are asked to write, however it is wrapped. The name of
    each refused call is appended to `refused`, so that a refusal the learner's code catches
    still counts."""
    def built_a_graph(tensor):
        refused.append(GRAPH)
        raise Forbidden(GRAPH)
    graph = torch.autograd.graph.saved_tensors_hooks(built_a_graph, lambda saved: saved) \
        if GRAPH in names else nullcontext()
    found = refusals(names + OUT_OF_SIGHT, refused)

    def watch(frame, event, arg):             # raising here also ends the watch
        name = (found.originals.get(id(arg)) or found.method_named(arg)) if event == "c_call" \
            else found.codes.get(frame.f_code) if event == "call" else None
        if name is not None:                  # imported under another name before the check
            refused.append(refusal(name, frame if event == "c_call" else frame.f_back))
            raise Forbidden(name)
        if event == "call" and watched(frame) and not importing(frame) \
                and frame.f_code.co_qualname != "__getattr__" \
                and called_by_the_learner(frame, trusted):
            refused.append(f"{frame.f_globals.get('__name__')}.{frame.f_code.co_qualname}")
            raise Forbidden(refused[-1])

    def watched(frame) -> bool:               # the project's code, or a forbidden library's
        module = frame.f_globals.get("__name__") or ""
        return package_code(module, frame.f_code) or f"{module}.".startswith(found.libraries)

    def importing(frame) -> bool:
        """Whether `frame` runs as part of importing a watched module: importlib's loader led
        to a watched module's or class's body (no function's: CO_OPTIMIZED) that led to it.
        An import defines what the learner may not call; it computes nothing for them."""
        body = False
        while frame is not None and frame.f_code is not call.__code__:
            body = body or watched(frame) and not frame.f_code.co_flags & inspect.CO_OPTIMIZED
            if body and frame.f_globals.get("__name__") == "importlib._bootstrap":
                return True
            frame = frame.f_back
        return False
    profiler, threads_profiler, hook = sys.getprofile(), threading.getprofile(), \
        threading.excepthook
    sys.setprofile(watch)
    threading.setprofile(watch)               # and the threads the learner's code starts,
    threading.excepthook = lambda seen: (     # whose refusals are counted, not printed
        None if seen.exc_type is Forbidden else hook(seen))
    try:
        with graph:
            yield
    finally:
        sys.setprofile(profiler)
        threading.setprofile(threads_profiler)
        threading.excepthook = hook
        for owner, attribute, original in found.patched:
            setattr(owner, attribute, original)


def called_by_the_learner(frame, trusted: set) -> bool:
    """Whether the learner's code, not the project's, led to `frame`: neither it nor any frame
    between it and `call` (which called the learner's function) runs code in `trusted`."""
    caller = frame
    while caller is not None and caller.f_code is not call.__code__:
        if caller.f_code in trusted:
            return False
        caller = caller.f_back
    return True


def trusted_code(fn, case: Case) -> set:
    """The code that may call the project's functions while `fn` runs on `case`: the functions
    and objects the case hands in (a loss to call, a dropout to apply: their classes' methods,
    but not torch.nn.Module's __call__, through which any module could be called), and fn
    itself where it is one of the exercises' own (a slip, run by the tests)."""
    values = [*case.args, *case.kwargs.values()]
    found = set()
    while values:
        value = values.pop()
        if isinstance(value, (list, tuple)):
            values += value
        elif isinstance(value, dict):
            values += value.values()
        elif inspect.isfunction(value) or inspect.ismethod(value):
            found.add(getattr(value, "__func__", value).__code__)
        elif callable(value):      # an object: its own classes' methods, not torch's
            found.update(f.__code__ for kind in type(value).__mro__ for f in vars(kind).values()
                         if inspect.isfunction(f) and not kind.__module__.startswith("torch"))
    if (getattr(fn, "__module__", None) or "").startswith("annotated.exercises.") \
            and hasattr(fn, "__code__"):
        found.add(fn.__code__)
    return found


def package_module(module: str) -> bool:
    """True for a module of the package or of reference_numpy, the checker's own aside: what a
    learner might hand in, or call, instead of writing their own. The exercises' answers count
    too (annotated.exercises.ch01 and the like)."""
    return module.split(".")[0] in ("annotated", "reference_numpy") and module not in (
        "annotated.exercises", "annotated.exercises.core", "annotated.exercises.messages")


def package_code(module: str, code) -> bool:
    """True for code of the project (package_module), whether its module says so or, for a
    function rebuilt from a project function's code object elsewhere, its file does."""
    return package_module(module) or (code.co_filename.startswith(PROJECT_FOLDERS)
                                      and code.co_filename not in CHECKER_FILES)


def from_the_package(fn) -> bool:
    """True for a function of the package or of reference_numpy (package_module), the
    exercises' own modules aside: the tests run their slips as answers."""
    module = getattr(fn, "__module__", None) or ""
    return package_module(module) and not module.startswith("annotated.exercises.")


def run(exercise: Exercise, fn) -> Result:
    """Check `fn` as `exercise`: the result, with its one-line message in every language. The
    cases are made and run with gradients on, on the CPU in float32 by default, whatever the
    notebook set before (torch.set_default_device, torch.set_default_dtype)."""
    with torch.inference_mode(False), torch.enable_grad(), torch_defaults():
        found = outcome(exercise, fn)
    status = found.status if found.status in ("passed", "not attempted") else "failed"
    return Result(exercise.id, status, {lang: describe(exercise, found, lang)
                                        for lang in MESSAGES}, found.n)


@contextmanager
def torch_defaults():
    """torch's defaults for the block (tensors made on the CPU, in float32), then the
    notebook's put back. A default device the notebook set, even the CPU, is a mode that sees
    every torch call (and calls into autograd's hooks, which some checks forbid): it is
    taken off for the block."""
    mode = getattr(getattr(torch, "_GLOBAL_DEVICE_CONTEXT", None), "device_context", None)
    dtype = torch.get_default_dtype()
    if mode is not None:
        torch.set_default_device(None)
    torch.set_default_dtype(torch.float32)
    try:
        yield
    finally:
        torch.set_default_dtype(dtype)
        if mode is not None:
            torch.set_default_device(mode.device)


def difference(exercise: Exercise, expected, got, lang: str) -> str | None:
    """What differs between what the learner's function returned and what was expected (the
    exercise's compare), or, when reading what it returned raises (an object of its own whose
    len() fails, a tensor NumPy cannot take), that it could not be read."""
    try:
        return (exercise.compare or compare)(expected, got, lang)
    except Exception as error:
        return MESSAGES[lang]["unreadable"].format(error=one_line(error))


def describe(exercise: Exercise, found: Outcome, lang: str) -> str:
    """The one line that says how the check went, in `lang`."""
    say = MESSAGES[lang]
    head = say["head"].format(id=exercise.id, topic=exercise.topic(lang))
    if found.status == "passed":
        return head + say["passed"].format(n=found.n)
    if found.status == "not attempted":
        return head + say["stub"].format(name=exercise.function)
    if found.status == "not callable":
        kind = ("quoted" if isinstance(found.got, str) else
                "called" if isinstance(found.got, (torch.Tensor, tuple)) else
                "not_callable")
        return head + say[kind].format(name=exercise.function, id=exercise.id,
                                       got=found.got if kind == "quoted"
                                       else type(found.got).__name__)
    if found.status == "async":
        return head + say["async"]
    if found.status == "emptied":
        return head + say["emptied"]
    if found.status == "own":
        return head + say["own"].format(name=exercise.function, module=found.got.__module__)
    label = found.case.label(lang)
    if found.status == "slow":
        return head + say["slow"].format(case=label, seconds=CASE_SECONDS) + say["sep"] + \
            say["hint"].format(hint=exercise.hint(lang))
    if found.status == "changed":
        return head + say["changed"].format(case=label, name=found.got)
    if found.status == "tampered":
        return head + say["tampered"].format(case=label)
    if found.status == "rule":
        return head + say["case"].format(case=label, problem=found.got(lang)) + say["sep"] + \
            say["hint"].format(hint=exercise.hint(lang))
    if found.status == "forbidden":
        key = ("calls_own" if package_module(found.got) else
               "compiled" if found.got in (COMPILED, SCRIPTED_NAME) else
               "process" if found.got in PROCESSES else "forbidden")
        inside = getattr(found.got, "inside", "")
        if key == "forbidden" and inside:
            key = "forbidden_inside"
        return head + say[key].format(name=found.got, inside=inside, hint=exercise.hint(lang))
    if found.status in ("again", "redrawn"):            # a case made again with other numbers
        problem = (say["raised_in"].format(error=one_line(found.got),
                                           where=your_line(found.got, lang))
                   if isinstance(found.got, BaseException) else
                   difference(exercise, found.expected, found.got, lang))
        what = say[found.status].format(case=label, problem=problem)
        if found.status == "again":                      # a kept result: no slip explains it
            return head + what + say["sep"] + say["hint"].format(hint=exercise.hint(lang))
    elif isinstance(found.got, BaseException):
        what = say["raised"].format(case=label, error=one_line(found.got),
                                    where=your_line(found.got, lang))
    else:
        problem = difference(exercise, found.expected, found.got, lang)
        what = say["case"].format(case=label, problem=problem)
    try:
        slip = matching_slip(exercise, found, lang)
    except Exception:                 # what the learner returned cannot be read: no slip
        slip = None
    hint = say["hint"].format(hint=exercise.hint(lang))
    return head + what + (say["sep"] + slip if slip else "") + say["sep"] + hint


def matching_slip(exercise: Exercise, found: Outcome, lang: str) -> str | None:
    """The slip the learner's answer makes, named: one whose wrong answer equals theirs on the
    failing case (`found.got`: what their function returned, or the error it raised, which a
    slip matches by raising the same error), is wrong there itself, and, like theirs, passes
    the cases before it. A slip that fails an earlier case is another mistake, even where the
    two agree (at size 1, a mask that is all False is both the inverted and the closed-diagonal
    slip); one that is right on the failing case explains nothing."""
    passed = [(case, call(exercise.answer, case)[0]) for case in exercise.cases()[:found.n - 1]]
    agree = exercise.compare or compare
    right = call(exercise.answer, found.case)[0]
    for slip in exercise.slips:
        wrong = slip_answer(slip, found.case)
        if same_outcome(wrong, found.got, lang) and agree(right, wrong, "en") and all(
                agree(expected, slip_answer(slip, case), "en") is None
                for case, expected in passed) and borne_out(slip, found.later, lang):
            named = slip.says(lang)
            if slip.page:
                named += MESSAGES[lang]["sep"] + MESSAGES[lang]["page"]
            return named
    return None


def borne_out(slip: Slip, later: list, lang: str) -> bool:
    """Whether the learner's results on the cases after the failing one (`later`) bear the
    slip out: two mistakes can agree on one case (r // c and c / r both give a penalty of 1 at
    c = 18, r = 20, but not at c = 5). Where the slip gives a wrong number, the learner's
    answer must agree with it at least as often as it is right instead. A slip models one
    mistake: where it gives NaN, inf or an error (an edge case its model does not handle), an
    answer that is right bears witness neither way."""
    agree = right_instead = 0
    for case, got, right in later:
        wrong = slip_answer(slip, case)
        if same_outcome(wrong, right, lang):
            continue
        agree += same_outcome(wrong, got, lang)
        right_instead += finite(wrong) and same_outcome(right, got, lang)
    return agree >= right_instead


def finite(value) -> bool:
    """Whether a result holds only finite numbers (not an error, NaN or inf)."""
    if isinstance(value, BaseException):
        return False
    if isinstance(value, (tuple, list)):
        return all(finite(v) for v in value)
    array = as_array(value)
    return array is None or array.dtype.kind not in "fc" or bool(np.isfinite(array).all())


def slip_answer(slip: Slip, case: Case):
    """What the slip's wrong answer returns for the case, or the error it raises."""
    try:
        return slip.wrong(*copy.deepcopy(case.args), **copy.deepcopy(case.kwargs))
    except Exception as error:
        return error


def same_outcome(a, b, lang: str) -> bool:
    """True when two calls ended alike: equal results, or the same error."""
    if isinstance(a, Exception) or isinstance(b, Exception):
        return isinstance(a, Exception) and isinstance(b, Exception) and \
            one_line(a) == one_line(b)
    return compare(a, b, lang) is None


def one_line(error: BaseException) -> str:
    try:
        text = " ".join(str(error).split())
    except Exception:                 # an exception of the learner's whose str() fails
        text = ""
    return f"{type(error).__name__}: {text[:160]}" if text else type(error).__name__


#: Where Python's own library lives: its frames (exit()'s, say) are not the learner's code.
PYTHONS_OWN = sysconfig.get_paths()["stdlib"]


def your_line(error: BaseException, lang: str) -> str:
    """Where in the learner's code the error came from: the last frame outside this package
    and outside torch and NumPy, if any."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if not any(part in f.filename for part in ("/torch/", "/numpy/", "annotated/"))
              and not f.filename.startswith((PYTHONS_OWN, "<frozen"))]     # exit(), input()
    if not frames:
        return ""
    code = (frames[-1].line or "").strip()[:60]
    return MESSAGES[lang]["line_code" if code else "line"].format(line=frames[-1].lineno,
                                                                   code=code)

