"""The exercises: every chapter ends with 4 to 8 of them, at least two of which are coding
exercises checked against reference_numpy; every check passes its solution, names each slip it
knows when a wrong answer makes it, says "not attempted yet" to an untouched stub, and never
imports the solutions; every exercise has a worked solution kept apart from the chapter."""
import ast
import functools
import importlib
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
import types
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch
from conftest import says

from annotated.exercises import CHECKED, checker, core, exercises, graded_ids, result_of
from annotated.exercises.core import Case, Exercise, Slip, Text, fingerprint, run
from annotated.exercises.messages import MESSAGES
from annotated.exercises.notebook import KINDS, checks, listed, source
from reference_numpy import masks as np_masks

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
EXERCISES = exercises()
LANGS = list(MESSAGES)


def notebook(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def solutions_of(chapter: Path) -> Path:
    return chapter.parent / "solutions" / chapter.name


def solved_functions(chapter: Path) -> dict:
    """The names a chapter's solutions notebook defines, its code cells run in order."""
    namespace = {}
    for cell in notebook(solutions_of(chapter))["cells"]:
        if cell["cell_type"] == "code":
            exec(compile(source(cell), f"{solutions_of(chapter).name}", "exec"), namespace)
    return namespace


def coding(chapter: Path) -> list:
    number = str(int(chapter.name[:2]))
    return [e for id_, e in EXERCISES.items() if id_.split(".")[0] == number]


def chapter_of(exercise) -> Path:
    return CHAPTERS[int(exercise.id.split(".")[0]) - 1]


def ids(x):
    return x.name if isinstance(x, Path) else x.id


def stub(*args, **kwargs):
    raise NotImplementedError


# ---- the chapters ----

@pytest.mark.parametrize("chapter", CHAPTERS, ids=ids)
def test_each_chapter_ends_with_four_to_eight_exercises_numbered_in_order(chapter):
    nb = notebook(chapter)
    found = listed(nb)
    number = int(chapter.name[:2])
    assert 4 <= len(found) <= 8, f"{chapter.name} has {len(found)} exercises"
    assert [e.id for e in found] == [f"{number}.{k}" for k in range(1, len(found) + 1)]
    assert all(e.kind in KINDS for e in found), [e.kind for e in found]
    assert sum(e.kind == "coding" for e in found) >= 2
    headings = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown"
                and re.search(r"^## ", source(c), re.M)]
    last = source(nb["cells"][headings[-1]])
    assert re.search(r"^## Exercises\s*$", last, re.M), f"{chapter.name}: the last section " \
        f"is not 'Exercises'"
    assert not any("Things to try" in source(c) for c in nb["cells"])


@pytest.mark.parametrize("chapter", CHAPTERS, ids=ids)
def test_each_coding_exercise_is_a_stub_whose_committed_check_says_not_attempted(chapter):
    nb = notebook(chapter)
    coded = [e.id for e in listed(nb) if e.kind == "coding"]
    called = checks(nb)
    assert sorted(coded) == sorted(e.id for e in coding(chapter)) == sorted(called)
    for cell in nb["cells"]:
        found = [m for m in checks({"cells": [cell]}) if cell["cell_type"] == "code"]
        if not found:
            continue
        exercise = EXERCISES[found[0]]
        assert called[exercise.id] == exercise.function
        assert re.search(rf"def {exercise.function}\(", source(cell))
        assert "raise NotImplementedError" in source(cell)
        statuses = [o.get("metadata", {}).get("exercise", {}).get("status")
                    for o in cell["outputs"]]
        assert statuses == ["not attempted"], (exercise.id, statuses)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=ids)
def test_a_predict_exercise_keeps_its_answer_folded(chapter):
    nb = notebook(chapter)
    found = listed(nb)
    for e in found:
        if e.kind != "predict, then run":
            continue
        answer = nb["cells"][e.cell + 1]
        assert answer["cell_type"] == "code", f"{e.id}: no prepared cell after the question"
        assert "hide-output" in answer["metadata"].get("tags", [])
        assert answer["metadata"].get("jupyter", {}).get("outputs_hidden") is True
        assert answer["outputs"], f"{e.id}: the prepared cell has no committed answer"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=ids)
def test_every_exercise_has_a_worked_solution_under_the_same_title(chapter):
    asked = {e.id: e.title for e in listed(notebook(chapter))}
    solved = {e.id: e.title for e in listed(notebook(solutions_of(chapter)))}
    assert solved == asked


# ---- the checks ----

@pytest.mark.parametrize("chapter", CHAPTERS, ids=ids)
def test_every_solution_passes_its_check(chapter):
    namespace = solved_functions(chapter)
    for exercise in coding(chapter):
        result = result_of(exercise.id, namespace[exercise.function])
        assert result.status == "passed", result.message()


@pytest.mark.parametrize("exercise", list(EXERCISES.values()), ids=ids)
def test_every_known_slip_fails_with_its_own_message_in_every_language(exercise):
    assert len(exercise.slips) >= 2, f"{exercise.id} knows fewer than two wrong answers"
    for slip in exercise.slips:
        result = run(exercise, slip.wrong)
        assert result.status == "failed", f"{exercise.id}: {slip.says.en!r} passes its check"
        for lang in LANGS:
            message = result.message(lang)
            assert slip.says(lang) in message, (lang, message)
            assert exercise.hint(lang) in message and "\n" not in message
            assert (MESSAGES[lang]["page"] in message) == (slip.page is not None)


@pytest.mark.parametrize("exercise", list(EXERCISES.values()), ids=ids)
def test_an_untouched_stub_is_not_attempted_yet_and_names_its_function(exercise):
    result = result_of(exercise.id, stub)
    assert result.status == "not attempted"
    for lang in LANGS:
        assert f"`{exercise.function}`" in result.message(lang)
        assert exercise.topic(lang) in result.message(lang)


@pytest.mark.parametrize("exercise", list(EXERCISES.values()), ids=ids)
def test_every_check_runs_the_same_cases_every_time(exercise):
    first, again = exercise.cases(), exercise.cases()
    assert [c.label for c in first] == [c.label for c in again]
    assert len({c.label.en for c in first}) == len(first), "two cases share a label"
    solution = solved_functions(chapter_of(exercise))[exercise.function]
    assert run(exercise, solution) == run(exercise, solution)


def test_the_checks_never_import_the_solutions():
    package = ROOT / "annotated" / "exercises"
    for path in package.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [n for n in names if "solution" in n or n.startswith("chapters")], path.name
        assert "solutions/" not in path.read_text(encoding="utf-8").replace(
            "chapters/solutions/", ""), path.name


# ---- the messages, on an exercise made here ----

def doubled(x):
    return [2 * v for v in x]


TOY = Exercise(
    id="0.1", function="double", topic=Text("doubling", "加倍"),
    cases=lambda: [Case(Text("three numbers", "三个数"), (list_of(1.0, 2.0, 3.0),)),
                   Case(Text("one number", "一个数"), (list_of(5.0),))],
    answer=lambda x: tensor(doubled(x)),
    hint=Text("twice each entry", "每个数乘以二"),
    slips=(Slip(Text("You squared.", "你求了平方。"), lambda x: tensor([v * v for v in x])),
           Slip(Text("You added one.", "你加了一。"), lambda x: tensor([v + 1 for v in x]),
                "slip-scale")))


def list_of(*values):
    return list(values)


def tensor(values):
    import torch
    return torch.tensor(values, dtype=torch.float64)


def test_a_right_answer_passes_every_case():
    result = run(TOY, lambda x: tensor(doubled(x)))
    assert result.status == "passed" and result.cases == 2
    assert "2" in result.message("en") and "2" in result.message("zh")


def test_a_wrong_answer_names_the_case_what_was_expected_and_what_came_back():
    result = run(TOY, lambda x: tensor([3 * v for v in x]))
    message = result.message("en")
    assert result.status == "failed" and result.cases == 1
    assert "three numbers" in message and "2" in message and "3" in message
    assert "twice each entry" in message
    assert "三个数" in result.message("zh") and "每个数乘以二" in result.message("zh")


def test_a_known_slip_is_named_and_a_slip_on_the_book_page_points_there():
    squared = run(TOY, lambda x: tensor([v * v for v in x]))
    assert "You squared." in squared.message() and MESSAGES["en"]["page"] not in squared.message()
    plus_one = run(TOY, lambda x: tensor([v + 1 for v in x]))
    assert "You added one." in plus_one.message() and MESSAGES["en"]["page"] in plus_one.message()


def test_a_slip_is_named_only_when_the_answer_also_passes_the_cases_the_slip_fails():
    """A causal mask wrong only at size 1 (all False there) equals the inverted-mask slip on
    that case, but passed size 4, where that slip fails: it is not blamed on the inversion."""
    causal = EXERCISES["2.1"]

    def wrong_at_one(size):
        mask = torch.ones(size, size, dtype=torch.bool).tril()[None, None]
        return mask if size > 1 else ~mask
    message = run(causal, wrong_at_one).message()
    assert "size 1" in message and causal.hint("en") in message
    assert not any(slip.says("en") in message for slip in causal.slips), message
    inverted = run(causal, causal.slips[1].wrong).message()
    assert causal.slips[1].says("en") in inverted          # still named where it is the slip


def test_a_float64_answer_computed_in_float32_shows_two_numbers_that_differ_and_says_why():
    """Off in the eighth digit: six digits would print the same number twice."""
    attention = EXERCISES["2.3"]

    def in_float32(q, k, v, mask):
        scores = q.float() @ k.float().transpose(-2, -1) / q.size(-1) ** 0.5
        weights = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        return (weights @ v.float()).to(q.dtype), weights.to(q.dtype)
    result = run(attention, in_float32)
    message = result.message("en")
    expected, got = re.search(r"expected (\S+), got (\S+)", message).groups()
    assert expected != got and len(expected) > len("0.123456"), message
    says(message, "float64", "float32's rounding", "dtype of the inputs")
    says(result.message("zh"), "float32", "float64")
    assert not any(slip.says("en") in message for slip in attention.slips), message


def test_float32_work_fails_a_float64_case_whether_the_answer_is_an_array_or_a_number():
    """Rounded to float32 inside and given back as float64 (or as a Python float): off in the
    eighth digit, which the float64 tolerance does not let pass."""
    import numpy as np

    def softmax_in_float32(x):
        e = (x.float() - x.float().amax(-1, keepdim=True)).exp()
        return (e / e.sum(-1, keepdim=True)).to(x.dtype)

    def best_in_float32(hypotheses, alpha):
        scores = [float(np.float32(log_p / ((5 + len(tokens)) / 6) ** alpha))
                  for tokens, log_p in hypotheses]
        i = max(range(len(scores)), key=scores.__getitem__)
        return i, scores[i]

    def loss_with_float32_log_p(logits, target, pad, eps_ls):
        log_p = logits.float().log_softmax(-1).to(logits.dtype)
        q = torch.full_like(log_p, eps_ls / (logits.size(-1) - 2))
        q.scatter_(-1, target.unsqueeze(-1), 1 - eps_ls)
        q[..., pad] = 0
        keep = target != pad
        return -(q * log_p).sum(-1)[keep].sum() / keep.sum()
    for exercise, answer in (("1.2", softmax_in_float32), ("7.3", best_in_float32),
                             ("6.3", loss_with_float32_log_p)):
        result = run(EXERCISES[exercise], answer)
        assert result.status == "failed", (exercise, result.message())
        says(result.message(), "float64", "float32's rounding")


def test_an_answer_that_keeps_results_by_shape_fails_on_the_cases_made_again():
    """Right on the book's numbers, then given back for any input of the same shape: the check
    makes its cases again from other seeds, where such a cache is wrong. A cache keyed by the
    values themselves is right, and passes."""
    by_shape, by_value = {}, {}

    def kept_by_shape(x):
        key = (tuple(x.shape), x.dtype)
        if key not in by_shape:
            e = (x - x.amax(-1, keepdim=True)).exp()
            by_shape[key] = e / e.sum(-1, keepdim=True)
        return by_shape[key].clone()

    def kept_by_value(x):
        key = (x.dtype, x.numpy().tobytes(), tuple(x.shape))
        if key not in by_value:
            e = (x - x.amax(-1, keepdim=True)).exp()
            by_value[key] = e / e.sum(-1, keepdim=True)
        return by_value[key].clone()
    result = run(EXERCISES["1.2"], kept_by_shape)
    assert result.status == "failed"
    says(result.message(), "made again with other random numbers", "kept from an earlier call")
    says(result.message("zh"), "另一组随机数", "之前")
    assert run(EXERCISES["1.2"], kept_by_value).status == "passed"


@pytest.mark.parametrize("exercise", list(EXERCISES.values()), ids=ids)
def test_an_answer_that_looks_up_results_computed_before_the_check_fails(exercise):
    """Every check holds a case whose numbers change when the check makes its cases again:
    results computed beforehand for the book's cases, and looked up by the inputs' values, are
    wrong there. The lookup gives back the last result it holds for inputs it has not seen."""
    solution = solved_functions(chapter_of(exercise))[exercise.function]

    def key(args):          # the values among the arguments, not the functions some are given
        return fingerprint([a for a in args if not callable(a)])
    kept = {}
    for case in exercise.cases():
        with torch.enable_grad():
            kept[key(case.args)] = solution(*case.args, **case.kwargs)
    last = list(kept.values())[-1]

    def looked_up(*args, **kwargs):
        found = kept.get(key(args), last)
        return found.clone() if isinstance(found, torch.Tensor) else found
    result = run(exercise, looked_up)
    assert result.status == "failed", result.message()
    if exercise.rule is None:           # else the rule may refuse the lookup first
        says(result.message(), "made again with other random numbers")


def test_an_answer_wrong_only_on_new_numbers_is_not_told_it_kept_a_result():
    """Wrong on the cases made again, with results of its own (an overflow that only the new
    numbers reach, say): the line says the case was made again, without the sentence about
    results kept from an earlier call, which it did not give back."""
    solution = solved_functions(chapter_of(EXERCISES["1.2"]))["stable_softmax"]
    book = [case.args[0] for case in EXERCISES["1.2"].cases()]

    def right_on_the_books_numbers(x):
        mine = solution(x)
        return mine if any(x.shape == b.shape and torch.equal(x, b) for b in book) else mine / 2
    result = run(EXERCISES["1.2"], right_on_the_books_numbers)
    says(result.message(), "made again with other random numbers")
    assert "kept from an earlier call" not in result.message()
    assert "之前某次调用" not in result.message("zh")


def test_a_naive_softmax_that_looks_up_only_the_books_large_scores_fails():
    """1.2's scores near +-1000 are drawn too: a softmax without the shift, with results
    computed beforehand for the book's large scores alone, meets new large scores."""
    solution = solved_functions(chapter_of(EXERCISES["1.2"]))["stable_softmax"]
    large = [case.args[0] for case in EXERCISES["1.2"].cases() if case.args[0].abs().max() > 500]
    kept = [(x, solution(x)) for x in large]

    def partly_looked_up(x):
        for seen, result in kept:
            if x.shape == seen.shape and torch.equal(x, seen):
                return result.clone()
        e = x.double().exp()
        return (e / e.sum(-1, keepdim=True)).to(x.dtype)
    result = run(EXERCISES["1.2"], partly_looked_up)
    assert result.status == "failed", result.message()
    says(result.message(), "made again with other random numbers")


def test_smoothed_targets_that_zero_padding_rows_only_for_a_batch_fail():
    """6.2's target may have any shape: an answer that zeroes the padding positions only for
    (batch, seq) targets is wrong on an unbatched sentence with padding, and on three axes."""
    def zeroes_2d_only(target, V, pad, eps_ls):
        q = torch.full((*target.shape, V), eps_ls / (V - 2))
        q.scatter_(-1, target[..., None], 1 - eps_ls)
        q[..., pad] = 0
        if target.dim() == 2:
            q[target == pad] = 0
        return q
    result = run(EXERCISES["6.2"], zeroes_2d_only)
    assert result.status == "failed"
    says(result.message(), "without a batch axis")


def test_a_number_rounded_to_float16_on_return_is_named_as_such():
    """Added up in float64, then given back in the float16 of the inputs: the value is off by
    float16's rounding alone, and the message says so."""
    def back_in_float16(lp, mask):
        return torch.exp(-lp[mask].double().mean()).to(lp.dtype)
    result = run(EXERCISES["8.3"], back_in_float16)
    assert result.status == "failed"
    says(result.message(), "float16", "rounding", "float32 or float64")
    says(result.message("zh"), "float16", "舍入")


def test_a_float64_answer_wrong_by_more_than_rounding_gets_no_rounding_note():
    """A learning rate one step late is off by a tenth, at a value of about 1e-6."""
    def one_step_late(step, d_model, warmup_steps):
        step += 1
        return d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)
    message = run(EXERCISES["6.1"], one_step_late).message()
    assert "rounding" not in message and "step s + 1" in message, message


def test_a_value_inside_a_returned_value_is_named_once_each_level():
    """9.3 returns (gradients, overflowed): the gradient off is named as an item of value 1."""
    def in_float16(grads, scale):
        return tuple((g.half() / scale).float() for g in grads), False
    result = run(EXERCISES["9.3"], in_float16)
    says(result.message(), "value 1 of the 2 returned: its item 1 of 3: at index")
    assert result.message().count("returned") == 1 and result.message("zh").count("返回") == 1

    def divided_in_float16(grads, scale):         # a list of float16 tensors: the dtype is off
        return [g / scale for g in grads], any(not g.isfinite().all() for g in grads)
    result = run(EXERCISES["9.3"], divided_in_float16)
    says(result.message(), "value 1 of the 2 returned: its item 1 of", "dtype float32")
    assert result.message().count("returned") == 1 and result.message("zh").count("返回") == 1


@pytest.mark.parametrize("frequencies", ["exp(-log(10000) * 2i / d)", "exp(2i * -log(10000) / d)",
                                         "10000 ** (2i / d)"])
def test_a_sinusoid_table_with_its_angles_in_float32_is_named_so_however_written(frequencies):
    """Each way of writing the frequencies in float32 rounds the angles differently: the note
    comes from how far the table is off, not from matching one float32 formula."""
    import math

    def sinusoids(length, d_model):
        pos = torch.arange(length).unsqueeze(1).float()
        two_i = torch.arange(0, d_model, 2).float()
        log_base = math.log(10000)
        omega = {"exp(-log(10000) * 2i / d)": lambda: torch.exp(-log_base * two_i / d_model),
                 "exp(2i * -log(10000) / d)": lambda: torch.exp(two_i * -(log_base / d_model)),
                 "10000 ** (2i / d)": lambda: 1 / 10000 ** (two_i / d_model)}[frequencies]()
        angle = pos * omega
        return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)
    result = run(EXERCISES["4.1"], sinusoids)
    says(result.message(), "10,000", "computed in float32", "float64")
    says(result.message("zh"), "float32", "float64")


def float64_sinusoids(length, d_model):
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    angle = pos / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)      # float64, not 32


def int64_kept_only(state_dicts, key):
    values = [sd[key] for sd in state_dicts]
    if values[-1].dtype == torch.int64:
        return values[-1]
    return torch.stack([v.double() for v in values]).mean(0).to(values[-1].dtype)


def keys_from_queries_when_shapes_match(q, k, v):
    keys = q if q.shape == k.shape else k
    weights = (q @ keys.transpose(-2, -1) / q.size(-1) ** 0.5).softmax(-1)
    return weights @ v, weights


@pytest.mark.parametrize("exercise, answer, names, not_named", [
    ("1.1", keys_from_queries_when_shapes_match, ["5 queries, 5 keys"], []),
    ("7.1", lambda length, alpha: ((5 + length) / 6) ** alpha if not torch.is_tensor(length)
     or length.numel() > 1 else float(((5 + length) / 6) ** alpha),
     ["a tensor of one length", "tensor"], []),
    ("7.1", lambda length, alpha: 1 if alpha == 0 else ((5 + length) / 6) ** alpha,
     ["a tensor of lengths, alpha 0", "tensor"], []),
    ("6.1", lambda s, d, w: 0.0, ["got 0"], ["rounded"]),
    ("6.1", lambda s, d, w: d ** -0.5 * min(s ** -0.5, s // w * w ** -0.5), ["//", "Divide"],
     ["rounded"]),
    ("4.1", float64_sinusoids, ["expected dtype float32, got float64"], ["computed in float32"]),
    ("9.1", int64_kept_only, ["int32", "int64 entries", "boolean mask"], [])],
    ids=["q as k", "one length", "alpha 0 lengths", "zero", "integer division",
         "float64 table", "int64 only"])
def test_a_wrong_answer_is_told_its_own_cause_not_a_neighbour_s(exercise, answer, names,
                                                                 not_named):
    """A shortcut that holds only where the shapes differ (keys taken from the queries) fails
    on self-attention's shapes; a number for a tensor of one length, or for lengths at alpha
    0, fails on those cases; a result of 0 is not a rounded one; a table returned in float64
    is a dtype mistake, not angles computed in float32; an answer that keeps only int64
    entries fails on an int32 buffer and a mask, as the rule says they are no weights
    either."""
    message = run(EXERCISES[exercise], answer).message()
    says(message, *names)
    assert not [n for n in not_named if n in message], message


def test_bleu_from_whole_numbers_is_checked_in_float64_as_other_exercises_are():
    """8.1 and 8.2 take counts: a float32 step is named as float32's rounding, as in every
    exercise whose inputs are not float32; perplexity (8.3) may add up in float32, as its
    exercise says."""
    import math

    def penalty_in_float32(c, r):
        if c == 0:
            return 1.0 if r == 0 else 0.0
        return float(torch.tensor(1 - r / c).exp().clamp(max=1))
    says(run(EXERCISES["8.1"], penalty_in_float32).message(), "float32's rounding", "float64")

    def penalty(c, r):
        return 1.0 if c >= r else 0.0 if c == 0 else math.exp(1 - r / c)
    assert run(EXERCISES["8.1"], penalty).status == "passed"

    def perplexity_in_float32(log_probs, mask):
        return float((-log_probs.float()[mask].sum() / mask.sum()).exp())
    assert run(EXERCISES["8.3"], perplexity_in_float32).status == "passed"


def test_float64_work_off_by_far_less_than_float32_is_not_called_float32_rounding():
    """An entry that should be 0 beside entries of 1, off by 5e-12 (a solve's rounding):
    right; off by 5e-10, named as float64 work gone a long way; off by 5e-8, float32's."""
    from annotated.exercises.core import first_difference
    want = np.eye(4)
    for off, names in ((5e-12, None), (5e-10, ("far less than any float32 step", "exactly")),
                       (5e-8, ("float32's rounding",))):
        have = want.copy()
        have[2, 0] = off
        said = first_difference(want, have, "en")
        assert said is None if names is None else all(n in said for n in names), (off, said)
        if names:
            assert "float64" in first_difference(want, have, "zh")


def test_a_float32_number_and_an_approximated_gradient_are_told_apart_from_float32_work():
    """Both are off by as little as float32's rounding: a float32 tensor given back is named
    as such; a float64 gradient from finite differences is told it must be exact."""
    def lrate_in_float32(step, d_model, warmup_steps):
        rate = d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)
        return torch.tensor(rate, dtype=torch.float32)
    says(run(EXERCISES["6.1"], lrate_in_float32).message(), "your answer is float32", "float64")

    def by_finite_differences(logits, target, pad, eps_ls):
        def loss(logits, target, pad, eps_ls):
            log_p = logits.log_softmax(-1)
            q = torch.full_like(log_p, eps_ls / (logits.size(-1) - 2))
            q.scatter_(-1, target.unsqueeze(-1), 1 - eps_ls)
            q[..., pad] = 0
            keep = target != pad
            return -(q * log_p).sum(-1)[keep].sum() / keep.sum()
        grad, h = torch.zeros_like(logits), 1e-5
        for i in range(logits.numel()):
            step = torch.zeros_like(logits).view(-1)
            step[i] = h
            step = step.view_as(logits)
            grad.view(-1)[i] = (loss(logits + step, target, pad, eps_ls)
                                - loss(logits - step, target, pad, eps_ls)) / (2 * h)
        return grad
    says(run(EXERCISES["6.4"], by_finite_differences).message(), "off by at most",
         "finite differences")


def smoothed(target, V, pad, eps_ls):
    """A right answer to 6.2, written here: the tests change what it gives back."""
    q = torch.full((*target.shape, V), eps_ls / (V - 2))
    q.scatter_(-1, target.unsqueeze(-1), 1 - eps_ls)
    q[..., pad] = 0
    q[target == pad] = 0
    return q


def test_a_list_argument_changed_in_place_fails_as_a_tensor_does():
    """Cleared, or a token appended to each hypothesis (then its length taken minus one):
    right results, but the caller's lists are changed."""
    def lp(n, alpha):
        return ((5 + n) / 6) ** alpha

    def best_then_cleared(hypotheses, alpha):
        scores = [log_p / lp(len(tokens), alpha) for tokens, log_p in hypotheses]
        i = max(range(len(scores)), key=scores.__getitem__)
        hypotheses.clear()
        return i, scores[i]

    def appending(hypotheses, alpha):
        for tokens, _ in hypotheses:
            tokens.append(2)
        scores = [log_p / lp(len(tokens) - 1, alpha) for tokens, log_p in hypotheses]
        i = max(range(len(scores)), key=scores.__getitem__)
        return i, scores[i]
    for answer in (best_then_cleared, appending):
        says(run(EXERCISES["7.3"], answer).message(), "changed its argument `hypotheses`",
             "in place")


def test_a_dict_whose_keys_are_put_back_in_another_order_is_not_changed():
    """A parameter taken out of a dict and put back: the dict is equal, only its keys' order
    differs; one key removed is a change."""
    from annotated.exercises.core import bits
    params = {"W_Q.weight": torch.ones(2, 2), "W_Q.bias": torch.zeros(2), "h": 2}
    put_back = dict(params)
    put_back["W_Q.weight"] = put_back.pop("W_Q.weight")
    assert list(put_back) != list(params) and bits(put_back) == bits(params)
    del put_back["h"]
    assert bits(put_back) != bits(params)


@pytest.mark.parametrize("exercise, returned", [
    ("2.1", lambda size: torch.nested.nested_tensor([torch.ones(size, size).tril()])),
    ("2.1", lambda size: torch.quantize_per_tensor(torch.ones(1, 1, size, size).tril(), 1.0, 0,
                                                   torch.qint8)),
    ("1.1", lambda q, k, v, mask=None: type("Odd", (tuple,), {"__len__": lambda self: 1 // 0})(
        (v, v)))], ids=["nested", "quantized", "len-raises"])
def test_a_value_the_check_cannot_read_fails_in_one_line(exercise, returned):
    with warnings.catch_warnings():                 # both kinds of tensor warn they are new
        warnings.simplefilter("ignore")
        result = run(EXERCISES[exercise], returned)
    assert result.status == "failed"
    for lang in LANGS:
        assert "\n" not in result.message(lang)
    says(result.message(), "cannot be read", "raised", "plain tensors")


def test_a_bfloat16_result_is_named_as_the_wrong_dtype():
    message = run(EXERCISES["6.2"], lambda *args: smoothed(*args).bfloat16()).message()
    says(message, "expected dtype float32", "got bfloat16")


def test_a_helper_still_a_stub_is_named_where_it_raises_not_called_not_attempted():
    def split_heads(x):
        raise NotImplementedError

    def multi_head(*args, **kwargs):
        return split_heads(args[0])
    result = run(EXERCISES["3.3"], multi_head)
    assert result.status == "failed"
    says(result.message(), "raised NotImplementedError", "raise NotImplementedError")


def test_a_whole_number_given_as_an_int_is_compared_by_its_value():
    """lp = 1 for alpha 0 and a length that is a number, written as the int 1: right (for a
    tensor of lengths, a tensor of ones is asked for); the int 0 there is wrong by its value."""
    def penalty(length, alpha):
        return 1 if alpha == 0 and not torch.is_tensor(length) else ((5 + length) / 6) ** alpha
    assert run(EXERCISES["7.1"], penalty).status == "passed"
    says(run(EXERCISES["7.1"], lambda length, alpha: 0 if alpha == 0 else penalty(
        length, alpha)).message(), "alpha 0", "expected 1", "got 0")


def test_a_project_module_built_before_the_check_is_refused_when_called_in_it():
    """Called through torch.nn.Module's __call__, which the case's own modules (the norm, the
    dropout) also go through: only their classes' methods may call the project."""
    from annotated.sublayer import SublayerConnection
    built = SublayerConnection(8, 0.1)

    class Wrapped(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = [inner]

        def forward(self, t):
            return self.inner[0](t)

    def post_ln(x, fx, norm, drop):
        built.norm, built.dropout = norm, Wrapped(drop)
        return built(x, lambda _: fx)
    says(run(EXERCISES["5.3"], post_ln).message(), "SublayerConnection.forward", "own code")


def test_results_squeezed_of_their_axes_of_size_one_fail():
    says(run(EXERCISES["6.2"], lambda *args: smoothed(*args).squeeze()).message(), "a batch of one sentence",
         "expected shape (1, 3, 8)")

    def step_squeezed(scores, log_probs, k):
        top, i = (scores[:, None] + log_probs).reshape(-1).topk(k)
        V = log_probs.size(-1)
        return top.squeeze(), (i // V).squeeze(), (i % V).squeeze()
    says(run(EXERCISES["7.2"], step_squeezed).message(), "k = 1", "expected shape (1,)")


def test_a_default_device_or_dtype_the_notebook_set_does_not_break_a_check():
    """The check's cases and its own answer are made on the CPU in float32 by default, and the
    notebook's settings are back afterwards."""
    def causal(size):
        return torch.ones(size, size, dtype=torch.bool).tril()[None, None]
    try:
        torch.set_default_device("cpu")               # a mode, as any default device
        assert run(EXERCISES["1.3"], lambda dp, p: p * (dp - (dp * p).sum(-1, keepdim=True))
                   ).status == "passed"
        torch.set_default_device("meta")
        torch.set_default_dtype(torch.float64)
        assert run(EXERCISES["2.1"], causal).status == "passed"
        assert run(EXERCISES["6.1"], lambda step, d_model, warmup_steps: d_model ** -0.5 * min(
            step ** -0.5, step * warmup_steps ** -1.5)).status == "passed"
        assert torch.get_default_dtype() == torch.float64
        assert torch.empty(1).device.type == "meta"
    finally:
        torch.set_default_device(None)                # no default device mode left behind
        torch.set_default_dtype(torch.float32)


def test_logsumexp_doing_the_stabilising_step_is_refused_in_the_softmax():
    says(run(EXERCISES["1.2"], lambda x: torch.exp(x - torch.logsumexp(x, -1, keepdim=True))
             ).message(), "torch.logsumexp", "do without")


def test_a_forbidden_call_made_inside_a_library_function_names_both():
    """Categorical normalises its logits with Tensor.logsumexp: the learner called the
    distribution, so the refusal names it first, then what it calls."""
    def through_a_distribution(x):
        return torch.distributions.Categorical(logits=x).probs
    message = run(EXERCISES["1.2"], through_a_distribution).message()
    says(message, "torch.distributions.categorical.Categorical", "torch.Tensor.logsumexp",
         "do without")
    assert message.index("Categorical") < message.index("logsumexp")
    says(run(EXERCISES["1.2"], through_a_distribution).message("zh"), "Categorical", "logsumexp")
    direct = run(EXERCISES["1.2"], lambda x: (x - x.logsumexp(-1, keepdim=True)).exp()).message()
    assert "Categorical" not in direct and "torch.Tensor.logsumexp" in direct


def shifted_by(shift):
    def stable_softmax(x):
        e = (x - shift(x.masked_fill(torch.isinf(x), 0))).exp()
        return e / e.sum(-1, keepdim=True)
    return stable_softmax


def averaged_last_five(state_dicts, key):
    values = [sd[key] for sd in state_dicts[-5:]]
    if not values[-1].is_floating_point():
        return values[-1]
    return torch.stack([v.double() for v in values]).mean(0).to(values[-1].dtype)


def divided_by_non_zero_targets(weight, pieces, loss_of):
    n = sum(int((y != 0).sum()) for _, y in pieces)
    for x, y in pieces:
        (loss_of(weight, x, y)[0] / n).backward()
    return weight.grad


@pytest.mark.parametrize("exercise_id, answer, case, slip", [
    ("1.1", lambda q, k, v: (lambda e: ((e / e.sum(-1, keepdim=True)) @ v,
                                        e / e.sum(-1, keepdim=True)))(
        (q @ k.mT / q.size(-1) ** 0.5).exp()), "scores of a few hundred", "exp() of the raw"),
    ("1.2", shifted_by(lambda x: x.amin(-1, keepdim=True)), "rows spread wide", "minimum"),
    ("1.2", shifted_by(lambda x: x.mean(-1, keepdim=True)), "rows spread wide", "mean"),
    ("2.2", lambda t, pad: (torch.cumsum((t == pad).int(), 1) == 0)[:, None, None, :],
     "padded on the left", "padded on the left"),
    ("8.1", lambda c, r: 1.0 if c / r > 1 else (0.0 if c == 0 else np.exp(1 - r / c)),
     "an empty reference", "ZeroDivisionError"),
    ("9.1", averaged_last_five, "eight checkpoints", "leaves out some checkpoints"),
    ("9.2", divided_by_non_zero_targets, "padding id 3", "id 0 for padding"),
    ("2.3", lambda q, k, v, mask: (lambda w: (w @ v, w))((q @ k.mT / q.size(-1) ** 0.5).masked_fill(
        ~mask, torch.finfo(q.dtype).min).softmax(-1)), "near the lowest float16 holds",
     "lowest number the dtype holds"),
    ("9.3", lambda grads, scale: ([g.float() / scale for g in grads], not all(
        np.isfinite(g.float().sum().item()) for g in grads)), "whose sum is not", "overflows")],
    ids=["1.1-naive", "1.2-min", "1.2-mean", "2.2-left", "8.1-r0", "9.1-last5", "9.2-pad0",
         "2.3-lowest", "9.3-sum"])
def test_a_shortcut_that_holds_only_for_the_books_usual_inputs_fails(exercise_id, answer, case,
                                                                     slip):
    """Answers right wherever a row's scores lie close together, padding comes last, the
    reference has words, at most five checkpoints come, or padding is the id 0."""
    result = run(EXERCISES[exercise_id], answer)
    assert result.status == "failed"
    says(result.message(), case, slip)


def test_a_length_penalty_that_fails_on_whole_number_lengths_fails_its_case():
    """The search counts lengths in an int64 tensor: an answer that works in place on a float
    tensor of lengths cannot divide an integer one."""
    def in_place(length, alpha):
        if torch.is_tensor(length):
            return (length + 5).div_(6).pow_(alpha)
        return ((5 + length) / 6) ** alpha
    says(run(EXERCISES["7.1"], in_place).message(), "whole-number lengths, int64",
         "RuntimeError")


def detached_copy(weight, pieces, loss_of):
    w = weight.detach().requires_grad_()
    n = sum(int((y != loss_of.pad).sum()) for _, y in pieces)
    for x, y in pieces:
        loss, _ = loss_of(w, x, y)
        if loss.requires_grad:
            (loss / n).backward()
    return w.grad


def grad_cleared(weight, pieces, loss_of):
    n = sum(int((y != loss_of.pad).sum()) for _, y in pieces)
    for x, y in pieces:
        loss, _ = loss_of(weight, x, y)
        if loss.requires_grad:
            (loss / n).backward()
    grad, weight.grad = weight.grad.clone(), None
    return grad


@pytest.mark.parametrize("answer", [detached_copy, grad_cleared], ids=["copy", "cleared"])
def test_a_right_gradient_left_out_of_weight_grad_fails_naming_weight_grad(answer):
    """The optimizer steps with weight.grad: a gradient computed on a copy of the weight, or
    returned and cleared, would leave every update empty."""
    result = run(EXERCISES["9.2"], answer)
    assert result.status in ("failed", "rule")
    says(result.message(), "weight.grad holds nothing", "the optimizer")


def split_by_b(scores, log_probs, k):
    top, flat = (scores[:, None] + log_probs).flatten().topk(k)
    return top, flat // log_probs.size(0), flat % log_probs.size(0)


@pytest.mark.parametrize("exercise_id, answer, slip", [
    ("5.3", lambda x, fx, norm, drop: norm(drop(x) + drop(fx)), "on x and fx each"),
    ("7.2", split_by_b, "(k, or b")], ids=["5.3-each", "7.2-by-b"])
def test_a_slip_written_another_way_is_named_in_words_that_fit_it(exercise_id, answer, slip):
    """Dropout on x and on fx apart is dropout on their sum under one mask; a flat index
    split by b is split by k where the two are equal: the message names both ways."""
    says(run(EXERCISES[exercise_id], answer).message(), slip)


@pytest.mark.parametrize("exercise_id, answer, name", [
    ("1.2", functools.partial(torch.softmax, dim=-1), "torch.softmax"),
    ("1.3", functools.partial(torch._softmax_backward_data, dim=-1, input_dtype=torch.float64),
     "torch._softmax_backward_data")])
def test_a_forbidden_function_handed_in_as_a_partial_is_refused(exercise_id, answer, name):
    """A partial calls its function from C, out of the watch's sight: the check calls it."""
    says(run(EXERCISES[exercise_id], answer).message(), name, "do without")


def test_a_predict_or_derive_exercise_given_to_check_is_named_as_such():
    with pytest.raises(ValueError) as misused:
        result_of("1.4", lambda x: x)
    says(str(misused.value), "Exercise 1.4", "predict-then-run", "no check")


def test_the_softmax_exercise_names_what_it_asks_to_do_without():
    text = next(source(cell) for cell in notebook(CHAPTERS[0])["cells"]
                if source(cell).startswith("### Exercise 1.2"))
    assert all(name in text for name in ("`softmax`", "`log_softmax`", "`logsumexp`"))


def test_a_tensor_for_one_length_and_a_score_returned_first_are_named():
    says(run(EXERCISES["7.1"], lambda n, alpha: torch.as_tensor(((5 + n) / 6) ** alpha))
         .message(), "a tensor for a number", "`length`")
    says(run(EXERCISES["7.3"], lambda found, alpha: (lambda scores: (
        max(scores), scores.index(max(scores))))(
        [log_p / ((5 + len(t)) / 6) ** alpha for t, log_p in found])).message(),
        "returns the score first", "(position, score)")


def test_an_answer_that_raises_not_implemented_for_some_inputs_is_not_a_stub():
    def causal_mask(size):
        if size > 3:
            raise NotImplementedError
        return causal(size)
    message = run(EXERCISES["2.1"], causal_mask).message()
    says(message, "raised NotImplementedError", "raise NotImplementedError")
    assert "not attempted" not in message


def test_the_answer_rebuilt_from_its_code_is_the_projects_own():
    answer = EXERCISES["1.2"].answer
    copy = types.FunctionType(answer.__code__, dict(answer.__globals__), "mine")
    says(run(EXERCISES["1.2"], copy).message(), "the project's own function")


def test_an_exit_in_an_answer_is_named_at_the_learners_line():
    def causal_mask(size):
        exit()
    message = run(EXERCISES["2.1"], causal_mask).message()
    says(message, "SystemExit", "`exit()`")


def test_a_warm_up_slope_fixed_at_4000_steps_fails():
    says(run(EXERCISES["6.1"], lambda step, d_model, warmup_steps: d_model ** -0.5 * (
        step * 4000 ** -1.5 if step < warmup_steps else step ** -0.5)).message(),
         "warming up")


def test_a_slip_that_is_right_on_the_failing_case_is_not_named():
    """A loss computed in float32 is off by rounding alone; log(softmax), right in float64 on
    that case, is not the reason."""
    def in_float32(logits, target, pad, eps_ls):
        log_p = torch.log_softmax(logits.float(), -1)
        q = torch.full_like(log_p, eps_ls / (logits.size(-1) - 2))
        q.scatter_(-1, target.unsqueeze(-1), 1 - eps_ls)
        q[..., pad] = 0
        keep = target != pad
        return (-(q * log_p).sum(-1)[keep].sum() / keep.sum()).to(logits.dtype)
    loss = EXERCISES["6.3"]
    message = run(loss, in_float32).message()
    assert "float32's rounding" in message
    assert not any(slip.says("en") in message for slip in loss.slips), message


def test_a_wrong_shape_or_dtype_is_said_before_any_value():
    import torch
    shape = run(TOY, lambda x: tensor(doubled(x))[None])
    assert "(3,)" in shape.message() and "(1, 3)" in shape.message()
    dtype = run(TOY, lambda x: tensor(doubled(x)).float())
    assert "float64" in dtype.message() and "float32" in dtype.message()
    kind = run(TOY, lambda x: torch.tensor(doubled(x)).long())
    assert "int64" in kind.message()


def test_an_error_in_the_learners_code_is_a_finding_with_its_line_not_a_crash():
    def double(x):
        return tensor(doubled(x))[7]
    result = run(TOY, double)
    assert result.status == "failed"
    assert "IndexError" in result.message() and "three numbers" in result.message()
    assert "line" in result.message() and "\n" not in result.message()


def test_a_stub_says_not_attempted_and_a_non_function_says_what_it_is():
    """A name that a later cell gave another value: the line says to define the function
    again."""
    assert run(TOY, stub).status == "not attempted"
    assert "not attempted" in run(TOY, stub).message()
    result = run(TOY, 3)
    assert result.status == "failed"
    says(result.message(), "int", "run the cell that defines", "again")
    says(result.message("zh"), "int", "重新运行")


@pytest.mark.parametrize("decimals", [1, 2])
def test_a_result_rounded_for_printing_is_named_as_rounded(decimals):
    """8.2 asks for BLEU as sacreBLEU gives it; sacreBLEU prints it with 2 decimals."""
    exercise = EXERCISES["8.2"]
    solution = solved_functions(chapter_of(exercise))[exercise.function]
    result = run(exercise, lambda *args: round(float(solution(*args)), decimals))
    assert result.status == "failed"
    says(result.message(), f"rounded to {decimals} decimal")
    says(result.message("zh"), f"舍入到了 {decimals} 位小数")


def test_a_result_of_one_for_nearly_one_is_not_called_rounded():
    """1 for 0.9995 (a test set 6 words short) comes of a branch or a clamp far more often
    than of rounding for print: the line does not guess rounding (38 for 38.02 it does)."""
    def penalty_one_when_nearly_as_long(c, r):
        return 0.0 if c == 0 else 1.0 if c == r - 6 else min(1.0, math.exp(1 - r / c))
    result = run(EXERCISES["8.1"], penalty_one_when_nearly_as_long)
    assert result.status == "failed"
    says(result.message(), "6 words short", "expected 0.999504, got 1")
    assert "rounded" not in result.message()


@pytest.mark.parametrize("wrap, en, zh", [
    (lambda grads: torch.cat(grads), ["tuple of 3 items", "got a Tensor", "not stacked"],
     ["含 3 项的元组", "不要堆叠"]),
    (lambda grads: (g for g in grads), ["generator expression", "tuple(x for ...)"],
     ["生成器表达式", "tuple(x for ...)"])], ids=["stacked", "generator expression"])
def test_items_returned_stacked_or_as_a_generator_expression_are_named_so(wrap, en, zh):
    """9.3 returns a tuple of gradients: one tensor of them all is no "1 value of 1", and a
    generator expression holds no `yield`."""
    def unscaled(grads, scale):
        return wrap([g.float() / scale for g in grads]), False
    result = run(EXERCISES["9.3"], unscaled)
    says(result.message(), "value 1 of the 2 returned", *en)
    says(result.message("zh"), *zh)
    assert "yield" not in result.message() and "got 1" not in result.message()


def test_an_answer_that_never_ends_is_stopped_after_the_cases_time_limit(monkeypatch):
    """A loop that never ends, even one inside `try: ... except Exception`, is stopped and
    named; the notebook's own SIGALRM handler is left as it was."""
    monkeypatch.setattr(core, "CASE_SECONDS", 0.5)

    def loops(*args):
        while True:
            try:
                time.sleep(10)
            except Exception:
                pass
    before = signal.getsignal(signal.SIGALRM)
    result = run(EXERCISES["6.1"], loops)
    assert result.status == "failed" and signal.getsignal(signal.SIGALRM) is before
    says(result.message(), "more than 0.5 s", "loop")
    says(result.message("zh"), "超过 0.5 秒")


def test_a_bool_where_a_number_is_expected_is_named_as_a_bool_not_a_dtype():
    result = run(EXERCISES["8.1"], lambda c, r: c < r)
    says(result.message(), "a tensor or a number", "bool (True)")
    assert "dtype" not in result.message()


def test_an_async_function_is_one_line_saying_so_without_a_warning(recwarn):
    async def mask_of(size):                      # named otherwise than the exercise's stub
        return torch.ones(size, size, dtype=torch.bool).tril()[None, None]
    result = run(EXERCISES["2.1"], mask_of)
    assert result.status == "failed" and not [w for w in recwarn if "never awaited" in
                                              str(w.message)]
    says(result.message(), "your function", "async def", "plain `def`")
    assert "`causal_mask`" not in result.message()
    says(result.message("zh"), "async def", "普通的 `def`")


def test_a_function_passed_quoted_or_called_is_told_to_pass_the_function_itself():
    for given, en, zh in (("causal_mask", ["text 'causal_mask'", "without quotes"], ["不要加引号"]),
                          (torch.ones(1, 1, 4, 4, dtype=torch.bool), ["Tensor", "without calling"],
                           ["不要调用"])):
        result = run(EXERCISES["2.1"], given)
        assert result.status == "failed"
        says(result.message(), *en, 'check("2.1", causal_mask)')
        says(result.message("zh"), *zh, 'check("2.1", causal_mask)')


def test_a_forgotten_return_and_an_id_given_as_a_number_are_named():
    result = result_of("2.1", lambda size: None)
    assert result.status == "failed"
    says(result.message(), "returned None", "return")

    def yields(size):
        yield torch.ones(size, size, dtype=torch.bool).tril()[None, None]
    says(result_of("2.1", yields).message(), "generator", "yield", "return")
    with pytest.raises(ValueError) as wrong:
        result_of(2.1, stub)
    says(str(wrong.value), "as text", 'check("2.1", ...)')


def test_an_answer_that_changes_its_input_in_place_fails_naming_the_argument():
    """A softmax that overwrites its scores returns the right numbers and would pass; the
    reference answer leaves its inputs alone, so the learner's must too."""
    def softmax_in_place(x):
        x.sub_(x.max(-1, keepdim=True).values).exp_()
        return x.div_(x.sum(-1, keepdim=True))
    result = result_of("1.2", softmax_in_place)
    assert result.status == "failed"
    says(result.message(), "`x`", "in place")
    assert result_of("1.2", lambda x: (x - x.max(-1, keepdim=True).values).exp() /
                     (x - x.max(-1, keepdim=True).values).exp().sum(-1, keepdim=True)).status \
        == "passed"


def floor_divided_penalty(c, r):
    return (0.0 if r else 1.0) if c == 0 else 1.0 if c >= r else math.exp(1 - r // c)


def warmup_exponent_sign_lost(step, d_model, warmup_steps):
    return d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** 1.5)


@pytest.mark.parametrize("exercise_id, answer, not_named", [
    ("8.1", floor_divided_penalty, "upside down"),
    ("6.1", warmup_exponent_sign_lost, "larger of the two")])
def test_a_mistake_that_matches_a_slip_on_one_case_only_is_not_named_as_it(
        exercise_id, answer, not_named):
    """r // c gives the upside-down ratio's penalty of 1 at c = 18, r = 20, and warmup^1.5
    gives max()'s rate at step 10; on the cases after those the answers are right where the
    slips are wrong, so the message names neither slip (it would send the learner to fix
    what is right), only the failing case and the hint."""
    message = result_of(exercise_id, answer).message()
    assert not_named not in message and "Hint" in message, message
    assert "upside down" in result_of("8.1", lambda c, r: (0.0 if r else 1.0) if c == 0 else
                                      min(1.0, math.exp(1 - c / r))).message()


@pytest.mark.parametrize("exercise_id, answer, layout", [
    ("2.1", lambda size: torch.ones(1, 1, size, size, dtype=torch.bool).tril().to_sparse(),
     "sparse_coo"),
    ("2.1", lambda size: torch.ones(size, size, dtype=torch.bool).tril().to_sparse_csr(),
     "sparse_csr"),
    ("5.2", lambda tokens, table: (table[tokens] * table.shape[-1] ** 0.5).to_mkldnn()
     if table.dtype == torch.float32 else table[tokens] * table.shape[-1] ** 0.5, "MKLDNN")])
def test_a_sparse_or_mkldnn_result_is_refused_for_the_plain_tensor_the_chapter_uses(
        exercise_id, answer, layout):
    """Its numbers may be right, but masked_fill, + and indexing in the chapter's code fail on
    it: the check asks for a plain tensor, naming the layout."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                  # CSR support is "in beta"
        message = result_of(exercise_id, answer).message()
    says(message, f"layout {layout}", "plain", ".to_dense()")


@pytest.mark.parametrize("kind", ["decimal.Decimal", "fractions.Fraction"])
def test_a_number_of_another_type_is_told_to_be_a_float(kind):
    """A Decimal or a Fraction is a number, but not one the check compares: the message names
    its type and float(), not 'expected a number'."""
    import decimal
    import fractions
    make = {"decimal.Decimal": decimal.Decimal, "fractions.Fraction": fractions.Fraction}[kind]

    def brevity_penalty(c, r):
        return make(1) if c >= r else make(0) if c == 0 else make(math.exp(1 - r / c))
    message = result_of("8.1", brevity_penalty).message()
    says(message, kind, "float()")
    assert "expected a tensor or a number" not in message


@pytest.mark.parametrize("make", [complex, np.complex128], ids=["complex", "numpy"])
def test_a_complex_number_is_told_to_stay_real_not_to_call_float(make):
    """float() of a complex raises: the message names the complex number and its usual cause."""
    message = result_of("6.1", lambda s, d, w: make(d ** -0.5 * min(s ** -0.5, s * w ** -1.5))
                        ).message()
    says(message, "complex number", "real numbers")
    assert "float()" not in message


def test_a_bfloat16_weight_is_averaged_and_a_change_to_it_in_place_is_seen():
    """9.1 has a bfloat16 entry: an answer that keeps its newest value (it lists three float
    dtypes) fails, with the slip named; one that averages it into the newest checkpoint's
    tensor is seen to change its input, although NumPy cannot hold bfloat16."""
    def three_dtypes(state_dicts, key):
        values = [sd[key] for sd in state_dicts]
        if values[-1].dtype not in (torch.float16, torch.float32, torch.float64):
            return values[-1]
        return torch.stack([v.double() for v in values]).mean(0).to(values[-1].dtype)
    says(result_of("9.1", three_dtypes).message(), "bfloat16", "is_floating_point()")

    def into_the_newest(state_dicts, key):
        values = [sd[key] for sd in state_dicts]
        if not values[-1].is_floating_point():
            return values[-1]
        mean = torch.stack([v.double() for v in values]).mean(0)
        return values[-1].copy_(mean) if values[-1].dtype == torch.bfloat16 else \
            mean.to(values[-1].dtype)
    result = result_of("9.1", into_the_newest)
    assert result.status == "failed"
    says(result.message(), "bfloat16", "in place")


def test_a_check_runs_with_gradients_on_whatever_the_notebook_turned_off():
    """A right answer to 9.2, checked after torch.set_grad_enabled(False) or inside
    inference_mode, passes."""
    def piecewise_gradient(weight, pieces, loss_of):
        losses = [loss_of(weight, x, y) for x, y in pieces]
        n = sum(tokens for _, tokens in losses)
        for loss, _ in losses:
            (loss / n).backward()
        return weight.grad
    for context in (torch.no_grad, torch.inference_mode):
        with context():
            assert result_of("9.2", piecewise_gradient).status == "passed", context


def joined(weight, pieces, loss_of):
    x, y = torch.cat([x for x, _ in pieces]), torch.cat([y for _, y in pieces])
    loss, n = loss_of(weight, x, y)
    (loss / n).backward()
    return weight.grad


def summed_then_backward(weight, pieces, loss_of):
    losses = [loss_of(weight, x, y) for x, y in pieces]
    (sum(loss for loss, _ in losses) / sum(n for _, n in losses)).backward()
    return weight.grad


def per_piece_skipping_empty(weight, pieces, loss_of):
    n = sum(loss_of(weight, x, y)[1] for x, y in pieces)
    for x, y in pieces:
        loss, tokens = loss_of(weight, x, y)
        if tokens:
            (loss / n).backward()
    return weight.grad


@pytest.mark.parametrize("answer", [joined, summed_then_backward])
def test_9_2_refuses_the_right_gradient_from_one_backward_pass(answer):
    """The pieces joined into one batch, or their losses summed before one backward: the
    gradient is right, but the check fails, naming the passes it counted in both languages."""
    result = result_of("9.2", answer)
    assert result.status == "failed"
    says(result.message(), "1 backward pass", "3 pieces", "back-propagate each piece")
    says(result.message("zh"), "1 次反向传播", "3 块")


def test_9_2_accepts_a_piece_with_no_token_left_out_of_the_backward_passes():
    assert result_of("9.2", per_piece_skipping_empty).status == "passed"


def shortcut_attention(q, k, v):
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    return out, (q @ k.transpose(-2, -1) / q.size(-1) ** 0.5).softmax(-1)


def shortcut_loss_grad(logits, target, pad, eps_ls):
    logits = logits.detach().clone().requires_grad_()
    log_p = torch.log_softmax(logits, -1)
    q = torch.full_like(log_p, eps_ls / (logits.size(-1) - 2))
    q.scatter_(-1, target.unsqueeze(-1), 1 - eps_ls)
    q[..., pad] = 0
    keep = target != pad
    (-(q * log_p).sum(-1)[keep].sum() / keep.sum()).backward()
    return logits.grad


def sacrebleu_score(matches, totals, c, r):
    from sacrebleu.metrics import BLEU
    return BLEU.compute_bleu(list(matches), list(totals), c, r, smooth_method="none").score


SHORTCUTS = {"1.1": (shortcut_attention, "scaled_dot_product_attention"),
             "1.2": (lambda x: x.softmax(-1), "torch.Tensor.softmax"),
             "6.4": (shortcut_loss_grad, "torch.autograd"),
             "8.1": (lambda c, r: __import__("sacrebleu").BLEU.compute_bleu([1] * 4, [1] * 4,
                                                                           c, r).bp,
                     "sacrebleu.metrics.bleu.BLEU.compute_bleu"),
             "8.2": (sacrebleu_score, "sacrebleu.metrics.bleu.BLEU.compute_bleu")}


@pytest.mark.parametrize("exercise_id", SHORTCUTS)
def test_an_answer_that_calls_what_the_exercise_says_to_do_without_fails(exercise_id):
    """The exercise's text says 'without' it: the right numbers that way do not pass."""
    answer, name = SHORTCUTS[exercise_id]
    result = run(EXERCISES[exercise_id], answer)
    assert result.status == "failed"
    says(result.message(), name, "do without", EXERCISES[exercise_id].hint("en"))
    says(result.message("zh"), name, "不用它")
    assert torch.Tensor.softmax is not None and torch.softmax(torch.zeros(2), 0).sum() == 1


def test_the_packages_own_function_is_not_an_answer():
    """Nor is the check's own answer, handed in or called."""
    from annotated.masks import padding_mask
    result = result_of("2.2", padding_mask)
    assert result.status == "failed" and "annotated.masks" in result.message()
    answer = EXERCISES["2.2"].answer
    says(result_of("2.2", answer).message(), "annotated.exercises.ch02", "yourself")
    wrapped = result_of("2.2", lambda tokens, pad: answer(tokens, pad))
    says(wrapped.message(), f"annotated.exercises.ch02.{answer.__qualname__}", "yourself")


def test_a_project_function_the_exercise_text_offers_may_be_called():
    """Exercise 3.3's text says "you may use ... `attention`": an answer that does is judged
    by its result, while the project's whole layer is still not an answer."""
    from annotated.attention import attention
    from annotated.multihead import MultiHeadAttention

    def multi_head(query, key, value, params, h):
        def project(x, name, d):
            y = x @ params[f"{name}.weight"].T + params[f"{name}.bias"]
            return y.view(*y.shape[:2], h, d).transpose(1, 2)
        d_k, d_v = params["W_Q.weight"].shape[0] // h, params["W_V.weight"].shape[0] // h
        heads, _ = attention(project(query, "W_Q", d_k), project(key, "W_K", d_k),
                             project(value, "W_V", d_v))
        concat = heads.transpose(1, 2).reshape(*query.shape[:2], h * d_v)
        return concat @ params["W_O.weight"].T + params["W_O.bias"]
    assert run(EXERCISES["3.3"], multi_head).status == "passed"

    def whole_layer(query, key, value, params, h):
        d_model = query.size(-1)
        layer = MultiHeadAttention(d_model, h, params["W_Q.weight"].shape[0] // h,
                                   params["W_V.weight"].shape[0] // h).to(query.dtype)
        layer.load_state_dict(params, strict=False)
        return layer.eval()(query, key, value)
    says(run(EXERCISES["3.3"], whole_layer).message(), "annotated.multihead", "yourself")


def wraps_the_mask(size):
    from annotated.masks import subsequent_mask
    try:                                    # a refusal it catches still counts
        return subsequent_mask(size)
    except Exception:
        return torch.ones(size, size, dtype=torch.bool).tril()[None, None]


@pytest.mark.parametrize("exercise_id, answer, name", [
    ("2.1", wraps_the_mask, "annotated.masks.subsequent_mask"),
    ("1.1", lambda q, k, v: __import__("annotated.attention").attention.attention(q, k, v)[:2],
     "annotated.attention.attention"),
    ("4.1", lambda length, d_model: __import__("annotated.positional").positional
     .sinusoid_table(length, d_model), "annotated.positional.sinusoid_table"),
    ("2.1", lambda size: torch.from_numpy(
        __import__("reference_numpy.masks").masks.subsequent_mask(size)),
     "reference_numpy.masks.subsequent_mask"),
    ("2.1", lambda size: torch.from_numpy(ThreadPoolExecutor(1).submit(
        __import__("reference_numpy.masks").masks.subsequent_mask, size).result()),
     "reference_numpy.masks.subsequent_mask"),
    ("2.1", lambda size: torch.from_numpy(types.FunctionType(      # rebuilt from its code
        np_masks.subsequent_mask.__code__, vars(np_masks))(size)),
     "reference_numpy.masks.subsequent_mask")])
def test_the_packages_own_code_called_inside_an_answer_is_not_an_answer(exercise_id, answer,
                                                                         name):
    """A lambda or a function of one's own around the package's version fails, named."""
    result = run(EXERCISES[exercise_id], answer)
    assert result.status == "failed"
    says(result.message(), name, "project's own", "yourself")
    says(result.message("zh"), name, "本项目")
    assert run(EXERCISES["2.1"], lambda size: torch.ones(size, size, dtype=torch.bool)
               .tril()[None, None]).status == "passed"      # the watch ended with the check


def test_a_forbidden_function_imported_under_another_name_is_still_refused():
    """Bound to a name before the check (from ... import ... as ...), or a private twin."""
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    def att(q, k, v, mask=None):
        w = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
        w = (w if mask is None else w.masked_fill(~mask, float("-inf"))).softmax(-1)
        return sdpa(q, k, v, attn_mask=mask), w
    says(run(EXERCISES["1.1"], att).message(), "scaled_dot_product_attention", "do without")
    says(run(EXERCISES["1.2"], lambda x: torch._softmax(x, -1, False)).message(),
         "torch._softmax", "do without")
    def forward_mode(logits, target, pad, eps_ls):
        def loss(z):
            lp, V = z.log_softmax(-1), z.size(-1)
            q = torch.full_like(lp, eps_ls / (V - 2)).scatter(-1, target.unsqueeze(-1),
                                                              1 - eps_ls)
            q[..., pad] = 0
            keep = target != pad
            return -(q * lp).sum(-1)[keep].sum() / keep.sum()
        return torch.func.jacfwd(loss)(logits)
    says(run(EXERCISES["6.4"], forward_mode).message(), "torch.func.jacfwd", "do without")
    sparse = run(EXERCISES["1.2"], lambda x: torch.sparse.softmax(
        x.double().to_sparse(), -1).to_dense().to(x.dtype))
    says(sparse.message(), "torch.sparse.softmax", "do without")


def through_the_engine(dp, p):
    s = p.log().detach().requires_grad_()
    loss = (s.softmax(-1) * dp).sum()
    return torch.autograd.Variable._execution_engine.run_backward(
        (loss,), (torch.ones_like(loss),), False, False, (s,), False, False)[0]


def through_backward(dp, p):
    s = p.log().detach().requires_grad_()
    s.softmax(-1).backward(dp)
    return s.grad


def softmax_in_attention(x):
    *batch, n = x.shape
    zeros = torch.zeros(*batch, 1, 1, dtype=x.dtype)
    return torch.nn.functional.scaled_dot_product_attention(
        zeros, torch.zeros(*batch, n, 1, dtype=x.dtype),
        torch.eye(n, dtype=x.dtype).expand(*batch, n, n), attn_mask=x.unsqueeze(-2)).squeeze(-2)


def softmax_in_cross_entropy(x):
    """Each entry's probability as exp(-cross-entropy) against its own class."""
    n = x.size(-1)
    rows = x.reshape(-1, n).double().repeat_interleave(n, 0)
    losses = torch.nn.functional.cross_entropy(rows, torch.arange(n).repeat(rows.size(0) // n),
                                               reduction="none")
    return torch.exp(-losses).reshape(x.shape).to(x.dtype)


def unscaled_by_grad_scalers_kernel(grads, scale):
    """GradScaler's own kernel: it divides every gradient and finds inf and NaN at once."""
    grads, found = [g.float().clone() for g in grads], torch.zeros(1)
    torch._amp_foreach_non_finite_check_and_unscale_(grads, found, torch.tensor(1 / scale))
    return grads, bool(found)


def attention_weights_by_sdpa(q, k, v, mask):
    """The weights as torch's attention applied to an identity matrix in place of v."""
    eye = torch.eye(k.size(-2), dtype=q.dtype).expand(*k.shape[:-1], k.size(-2))
    weights = torch.nn.functional.scaled_dot_product_attention(q, k, eye, attn_mask=mask)
    return weights @ v, weights


@pytest.mark.parametrize("exercise_id, answer, name", [
    ("1.2", lambda x: torch._C.TensorBase.softmax(x, -1), "torch.Tensor.softmax"),
    ("1.2", lambda x: torch._C.TensorBase.log_softmax(x, -1).exp(), "torch.Tensor.log_softmax"),
    ("1.2", softmax_in_attention, "scaled_dot_product_attention"),
    ("1.3", through_backward, "torch.autograd (a tensor that requires grad)"),
    ("1.3", through_the_engine, "torch.autograd"),
    ("1.3", lambda dp, p: p.log().detach().requires_grad_().softmax(-1).grad_fn(dp),
     "torch.autograd"),                                  # the graph's own node, called
    ("1.3", lambda dp, p: torch._softmax_backward_data(dp, p, -1, p.dtype),
     "torch._softmax_backward_data"),
    ("1.3", lambda dp, p: torch._log_softmax_backward_data(dp * p, p.log(), -1, p.dtype),
     "torch._log_softmax_backward_data"),
    ("1.2", softmax_in_cross_entropy, "torch.nn.functional.cross_entropy"),
    ("1.2", lambda x: (x - torch.logcumsumexp(x, -1)[..., -1:]).exp(), "torch.logcumsumexp"),
    ("4.5", lambda dy, max_len: torch.ops.aten.embedding_dense_backward(
        dy, torch.arange(dy.size(1)).expand(dy.shape[:2]), max_len, -1, False),
     "torch.ops.aten.embedding_dense_backward"),
    ("9.3", unscaled_by_grad_scalers_kernel, "_amp_foreach_non_finite_check_and_unscale_"),
    ("1.3", lambda dp, p: torch.func.vjp(lambda s: s.softmax(-1), p.log())[1](dp)[0],
     "torch.func.vjp"),                                  # the call made, not one inside it
    ("6.4", lambda logits, target, pad, eps_ls: torch.func.grad(
        lambda z: z.logsumexp(-1).sum())(logits), "torch.func.grad"),
    ("2.3", lambda q, k, v, mask: attention_weights_by_sdpa(q, k, v, mask),
     "scaled_dot_product_attention"),
    ("1.2", lambda x: importlib.import_module("torch._refs").softmax(x, -1),
     "torch._refs.softmax"),
    ("6.4", lambda logits, target, pad, eps_ls: through_the_engine(
        torch.zeros_like(logits), logits.softmax(-1)), "torch.autograd"),
    ("5.1", lambda x, W_1, b_1, W_2, b_2: torch.nn.functional.linear(
        torch.relu(torch.nn.functional.linear(x, W_1, b_1)), W_2, b_2),
     "torch.nn.functional.linear")])
def test_a_forbidden_function_reached_through_a_base_class_or_the_engine_is_refused(
        exercise_id, answer, name):
    """A Tensor method called through torch._C.TensorBase (a type that cannot be patched),
    torch's attention holding the softmax, its Python references, its backward kernels; and
    in 1.3 and 6.4, whose texts say no autograd, any autograd graph at all, however its
    backward is then run (the engine, the graph's node called by hand)."""
    result = run(EXERCISES[exercise_id], answer)
    assert result.status == "failed"
    says(result.message(), name, "do without")
    assert torch.ones(3).softmax(0).sum() == 1                  # put back after the check
    assert run(EXERCISES["1.3"], lambda dp, p: p * (dp - (dp * p).sum(-1, keepdim=True))) \
        .status == "passed"


def peeks_at_the_expected_answer(size):
    frame = sys._getframe(1)
    while frame is not None and "expected" not in frame.f_locals:
        frame = frame.f_back
    return None if frame is None else frame.f_locals["expected"]


def test_the_expected_answer_cannot_be_read_while_the_answer_runs():
    """The check keeps only a digest of it until the learner's function has returned."""
    result = run(EXERCISES["2.1"], peeks_at_the_expected_answer)
    assert result.status == "failed"
    says(result.message(), "returned None")


def test_traced_project_code_is_refused_and_an_import_alone_is_not():
    """TorchScript runs out of the check's sight; importing a project module runs none of its
    functions."""
    from annotated.masks import subsequent_mask
    with warnings.catch_warnings():                       # torch.jit.trace is deprecated
        warnings.simplefilter("ignore")
        traced = {n: torch.jit.trace(lambda n=n: subsequent_mask(n), ()) for n in range(1, 12)}
    says(run(EXERCISES["2.1"], lambda size: traced[size]()).message(), "torch.jit",
         "out of the check's sight")

    def importing(size):
        from annotated import masks  # noqa: F401
        return torch.ones(size, size, dtype=torch.bool).tril()[None, None]
    assert run(EXERCISES["2.1"], importing).status == "passed"


def test_a_first_import_inside_an_answer_is_not_a_call_and_exec_in_a_module_is(monkeypatch):
    """A project module imported for the first time inside an answer runs its class bodies
    and module-level calls (a dataclass built): importing, not the learner's call. Code the
    learner runs in a project module's namespace is no import."""
    import annotated.data
    from annotated.data import datasets
    monkeypatch.delitem(sys.modules, "annotated.data.datasets")
    monkeypatch.setattr(annotated.data, "datasets", datasets)     # put back after the test

    def importing(size):
        import annotated.data.datasets  # noqa: F401
        return torch.ones(size, size, dtype=torch.bool).tril()[None, None]
    assert run(EXERCISES["2.1"], importing).status == "passed"
    assert sys.modules["annotated.data.datasets"] is not datasets        # imported in the check

    def in_its_namespace(size):
        found = {}
        exec("out = subsequent_mask(size)", vars(masks) | {"size": size}, found)
        return found["out"]
    from annotated import masks
    says(run(EXERCISES["2.1"], in_its_namespace).message(), "annotated.masks", "own code")


def causal(size):
    return torch.ones(size, size, dtype=torch.bool).tril()[None, None]


def causal_typed(size: int):
    return torch.ones(size, size, dtype=torch.bool).tril()[None, None]


@pytest.mark.parametrize("answer, names", [
    (torch.compile(causal, backend="eager"), ["torch.compile", "plain Python"]),
    (torch.jit.script(causal_typed), ["torch.jit", "plain Python"]),
    (lambda size: torch.compile(causal, backend="eager")(size), ["torch.compile"]),
    (lambda size: torch.tensor(json.loads(subprocess.run(
        [sys.executable, "-c", "import json, annotated.masks as m; "
         f"print(json.dumps(m.subsequent_mask({size}).tolist()))"],
        capture_output=True, text=True).stdout)), ["another process", "fork_exec"]),
    (lambda size: (os.system("true"), causal(size))[1], ["another process", "os.system"])],
    ids=["compiled", "scripted", "compiling", "subprocess", "os.system"])
def test_code_the_check_cannot_follow_is_refused_in_one_line(answer, names):
    """A compiled answer, or the project's code run in a process the answer starts: right
    numbers, reached out of the check's sight. Plain, the same answer passes."""
    result = run(EXERCISES["2.1"], answer)
    assert result.status == "failed"
    says(result.message(), *names)
    assert run(EXERCISES["2.1"], causal).status == "passed"
    assert subprocess.run(["true"]).returncode == 0                  # put back after the check


@pytest.mark.parametrize("exercise, call", [
    ("1.2", lambda x: torch.ops.aten._softmax(x, -1, False)),
    ("1.2", lambda x: torch.ops.aten.softmax.int(x, -1)),
    ("1.2", lambda x: torch.ops.aten._log_softmax.default(x, -1, False).exp()),
    ("1.1", lambda q, k, v, mask=None: (
        torch.ops.aten.scaled_dot_product_attention(q, k, v, attn_mask=mask),
        (q @ k.transpose(-2, -1) / q.size(-1) ** 0.5).masked_fill(
            ~mask if mask is not None else torch.zeros((), dtype=torch.bool), float("-inf"))
        .softmax(-1)))])
def test_a_forbidden_operator_called_through_torch_ops_is_named(exercise, call):
    result = run(EXERCISES[exercise], call)
    assert result.status == "failed"
    says(result.message(), "torch.ops.aten.", "do without")


class UnprintableError(Exception):
    def __str__(self):
        raise RuntimeError("no text")


def raises_unprintable(size):
    raise UnprintableError()


@pytest.mark.parametrize("answer, names", [
    (raises_unprintable, ["raised UnprintableError"]),
    (lambda size: __import__("sys").exit(3), ["raised SystemExit: 3"])])
def test_an_answer_that_raises_oddly_is_one_line(answer, names):
    result = run(EXERCISES["2.1"], answer)
    assert result.status == "failed"
    says(result.message(), "size", *names)


def test_the_expected_answer_is_made_before_the_learners_code_runs(monkeypatch):
    """An answer that replaces the reference it is compared with still fails."""
    import reference_numpy.masks as masks
    monkeypatch.setattr(masks, "subsequent_mask", masks.subsequent_mask)

    def leaks(size):
        masks.subsequent_mask = lambda n: np.triu(np.ones((n, n), dtype=bool))[None, None]
        return torch.ones(size, size, dtype=torch.bool).triu()[None, None]
    assert run(EXERCISES["2.1"], leaks).status == "failed"


def empties_the_checks_cases(size):
    """A right causal mask that, on its first call, empties every case list it finds in the
    frames above it, so that the check would run no case after this one."""
    frame = sys._getframe(1)
    while frame is not None:
        for value in frame.f_locals.values():
            if isinstance(value, list) and value and isinstance(value[0], Case):
                value.clear()
        frame = frame.f_back
    return torch.ones(size, size, dtype=torch.bool).tril()[None, None]


def test_a_check_left_with_fewer_cases_or_none_never_passes_on_them(monkeypatch):
    """An answer cannot shorten the check's case list; a check that finds none to run (its
    exercise changed behind it) says so and does not pass."""
    causal = EXERCISES["2.1"]
    assert run(causal, empties_the_checks_cases).cases == len(causal.cases())
    emptied = Exercise(**{**vars(causal), "cases": lambda: []})
    result = run(emptied, empties_the_checks_cases)
    assert result.status == "failed" and result.cases == 0
    for lang in LANGS:
        says(result.message(lang), "2.1", {"en": "no case", "zh": "用例"}[lang],
             {"en": "check itself", "zh": "检查本身"}[lang])


@pytest.mark.parametrize("typed", ["\uff12.\uff11", "\uff12\uff0e\uff11", "2,1", "2\u30021",
                                   " 2.1 "])
def test_an_exercise_number_typed_with_full_width_digits_or_a_comma_is_recognised(typed,
                                                                                 capsys):
    """A Chinese input method types full-width digits and dots; a comma or an ideographic
    full stop is a slip of the dot."""
    checker("zh")(typed, stub)
    assert "尚未作答" in capsys.readouterr().out and CHECKED["2.1"].status == "not attempted"


def test_check_prints_one_line_in_its_language_and_remembers_the_function(capsys):
    checker("zh")("2.1", stub)
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and "尚未作答" in printed
    assert CHECKED["2.1"].status == "not attempted"
    checker("zh-CN")("2.1", stub)
    assert "尚未作答" in capsys.readouterr().out
    checker("fr")("2.1", stub)                   # one line, then the checks in English
    note, line = capsys.readouterr().out.splitlines()
    says(note, "'fr'", "English", "'zh'")
    says(line, "Exercise 2.1", "not attempted")
    with pytest.raises(ValueError) as error:
        result_of("9.99", stub)
    says(str(error.value), '"9.99"', "9.1, 9.2, 9.3")
    with pytest.raises(ValueError) as error:
        result_of("12.1", stub)
    says(str(error.value), '"12.1"', "1.1–9.3")


@pytest.mark.parametrize("call, names", [(("9.9", stub), ['"9.9"', "9.1, 9.2, 9.3"]),
                                         ((2.1, stub), ["in quotes", 'check("2.1", ...)']),
                                         (("2.1",), ["your function", 'check("2.1", ']),
                                         ((stub, "2.1"), ["comes first", 'check("2.1", stub)']),
                                         ((stub,), ["check(stub)", 'check("N.M", stub)']),
                                         ((), ["two things", 'check("N.M", your_function)']),
                                         (("2.1", stub, stub), ["two things",
                                                                'check("2.1", stub)']),
                                         ((None, stub), ["check(None, ...)", "in quotes",
                                                         'check("N.M", ...)']),
                                         ((b"2.2", stub), ["check(b'2.2', ...)",
                                                           'check("2.2", ...)']),
                                         ((stub, stub), ["check(stub, ...)", "in quotes"])])
def test_a_check_called_wrongly_is_one_printed_line_in_its_language(call, names, capsys):
    """In a notebook cell, as the other results: one line, not a traceback."""
    checker("en")(*call)
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1
    says(printed.strip(), *names)
    checker("zh")(*call)
    assert any("\u4e00" <= c <= "\u9fff" for c in capsys.readouterr().out)


def test_a_number_with_spaces_around_it_is_the_exercise_it_names(capsys):
    def causal_mask(size):
        return torch.ones(size, size, dtype=torch.bool).tril()[None, None]
    checker("en")(" 2.1 ", causal_mask)
    says(capsys.readouterr().out.strip(), "2.1", "passed")
    assert CHECKED["2.1"].status == "passed"


def test_a_check_given_only_the_function_names_the_exercise_that_asks_for_it(capsys):
    def causal_mask(size):
        raise NotImplementedError
    checker("en")(causal_mask)
    says(capsys.readouterr().out.strip(), "check(causal_mask)", 'check("2.1", causal_mask)')


def test_a_check_given_its_arguments_by_name_says_how_to_give_them(capsys):
    """check(exercise="2.1", function=f) guesses the names: one line with the call to write,
    and the grader fails 2.1 with it, not a TypeError."""
    def causal_mask(size):
        return torch.ones(size, size, dtype=torch.bool).tril()[None, None]
    CHECKED.pop("2.1", None)
    checker("en")(exercise="2.1", function=causal_mask)
    says(capsys.readouterr().out.strip(), "two things", 'check("2.1", causal_mask)')
    assert CHECKED["2.1"].status == "failed" and CHECKED["2.1"].wrong_call


def test_a_kernel_ended_by_a_cell_is_blamed_on_that_cell_not_where_it_died():
    """exit() ends the kernel once its cell is done, so it dies a cell or two later: the row
    names the cell that asked. Written in a comment or a string, it asks nothing."""
    from annotated.exercises.messages import MESSAGES
    from annotated.exercises.run_notebook import died_where

    def notebook(*sources):
        return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    what, detail = died_where(notebook("x = 1", "exit()", "y = 2", "z = 3"), 3)
    assert (what, detail) == ("kernel_ended", "2")
    says(MESSAGES["en"][what].format(detail=detail), "cell 2", "exit()", "remove that call")
    assert died_where(notebook("x = 1", "get_ipython().kernel.do_shutdown(True)", "y"), 2) == \
        ["kernel_ended", "2"]
    assert died_where(notebook("x = 1", "# exit() later", "s = 'quit()'", "y"), 3) == \
        ["kernel_died", "4"]


def test_a_check_in_a_comment_or_a_string_is_no_call():
    """The grader counts a chapter by the checks a notebook calls: one written in a comment
    (a to-do) or a string is not called; one after an IPython magic is."""
    def cell(text):
        return {"cell_type": "code", "source": text}
    nb = {"cells": [cell("check('2.1', causal_mask)  # then: check('5.1', feed_forward)"),
                     cell('note = "check(\'5.2\', f)"\ntodo = """\ncheck(\'3.1\', g)\n"""'),
                     cell("%%capture\ncheck('4.1', sinusoids)")]}
    assert checks(nb) == {"2.1": "causal_mask", "4.1": "sinusoids"}


def test_a_check_prints_on_a_terminal_that_cannot_encode_its_text(capsys, monkeypatch):
    """§ in the hints on an ASCII stdout (PYTHONIOENCODING=ascii): escaped, not a crash."""
    import io
    import sys
    ascii_out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", ascii_out)
    checker("zh")("2.1", lambda size: torch.ones(size, size, dtype=torch.bool).triu()[None, None])
    ascii_out.flush()
    printed = ascii_out.buffer.getvalue().decode("ascii")
    assert printed.count("\n") == 1 and "\\u" in printed


def test_a_typo_in_an_exercise_id_brings_in_no_chapter():
    """check("9.99", ...) in chapter 2's notebook: graded on chapter 2's exercises alone."""
    assert graded_ids(["2.2", "9.99"]) == [i for i in exercises() if i.startswith("2.")]
    assert graded_ids(["9.99"]) == []


def test_a_meta_tensor_is_told_it_has_no_values():
    """It does not crash the check: a meta tensor has no values to compare."""
    meta = result_of("2.1", lambda size: torch.ones(1, 1, size, size, dtype=torch.bool,
                                                              device="meta"))
    says(meta.message("en"), "meta device", "on the CPU")


def numpy_softmax(x):
    e = (x - x.amax(-1, keepdim=True)).exp()
    return (e / e.sum(-1, keepdim=True)).numpy()


@pytest.mark.parametrize("exercise_id, answer, got", [
    ("2.1", lambda size: np.tril(np.ones((size, size), bool))[None, None], "numpy.ndarray"),
    ("1.2", numpy_softmax, "numpy.ndarray"),
    ("2.1", lambda size: torch.ones(size, size, dtype=torch.bool).tril()[None, None].tolist(),
     "a list")])
def test_the_right_numbers_in_a_numpy_array_or_a_list_are_not_a_tensor(exercise_id, answer,
                                                                       got):
    """The chapter's code goes on with torch operations on what the function returns."""
    result = run(EXERCISES[exercise_id], answer)
    assert result.status == "failed"
    says(result.message(), "expected a", "tensor", got)
    says(result.message("zh"), "张量")


def test_several_values_returned_in_a_dict_are_told_a_tuple_is_expected():
    result = run(EXERCISES["7.2"], lambda scores, log_probs, k: {"scores": 1, "beam": 2,
                                                                 "token": 3})
    assert result.status == "failed"
    says(result.message(), "3 values", "tuple", "dict")
    says(result.message("zh"), "元组", "dict")


def test_without_sigalrm_the_cases_run_without_a_time_limit(monkeypatch):
    """Windows has no SIGALRM or setitimer: a check there runs as before, unlimited."""
    monkeypatch.delattr(signal, "setitimer")
    result = run(EXERCISES["2.1"], lambda size: torch.ones(size, size, dtype=torch.bool)
                 .tril()[None, None])
    assert result.status == "passed", result.message()


def test_a_float64_penalty_for_whole_number_lengths_is_told_the_dtype_the_text_asks_for():
    """7.1's text asks for float32 (the default dtype) for a tensor of whole numbers."""
    def lp(length, alpha):
        if isinstance(length, torch.Tensor):
            return ((length.double() + 5) / 6) ** alpha
        return ((5 + length) / 6) ** alpha
    result = run(EXERCISES["7.1"], lp)
    assert result.status == "failed"
    says(result.message("en"), "whole-number lengths", "float64", "float32", "default dtype")
    says(result.message("zh"), "整数长度", "float64", "float32", "默认数据类型")
