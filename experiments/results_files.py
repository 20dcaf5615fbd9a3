"""Results files read back by the scripts that publish from them (the README's tables, a
results page rewritten from its JSON): every value is checked before anything is written.

`Record(path, remake)` reads a results file's JSON; `get` takes one value from it, checked to be
there, of its kind and, for a number, finite and within its rule (BLEU 0 to 100, perplexity at
least 1, ...). A file that is missing, not UTF-8 or not JSON, a missing key or an impossible
number is one DataError naming the file, the key, what was found and the fix: restore the
committed file (git checkout) or write it again with the command that made it (`remake`).
`gpu_timings` and `fastest` read benchmarks.gpu_train's record, which the README's GPU table
and experiments.gpu_schedule publish from.
"""
import json
import math
import os
import sys
from pathlib import Path

from annotated.base.errors import DataError
from annotated.base.settings import POSITIVE, at_least, between, shown
from annotated.configs import PRESETS, get
from experiments.folders import committed_folder, relative

BLEU = between(0, 100, "BLEU")
PERPLEXITY = at_least(1)                # exp of a cross-entropy, which is at least 0
COUNT = at_least(0)                     # seconds, bytes, minutes
WHOLE = ((lambda v: v >= 1 and float(v).is_integer()), "a whole number >= 1")   # packages
BYTES = between(1, 2 ** 44, "bytes")    # a folder of this project: far below 16 TiB
SECONDS = between(0.001, 7 * 24 * 3600, "seconds")     # one of the README's commands: < a week
FRACTION = between(0, 1, "fraction")


class Cell(str):
    """The kind of a text that the README or a results page shows in a table cell: one line,
    with no '|', which would end the cell early (Record.get(..., kind=Cell))."""


KINDS = {dict: "object", list: "list", str: "text", bool: "true or false",
         Cell: "one line of text without '|', which a table cell can show"}


class Record:
    """A results file's JSON, read to publish from (see the module's docstring)."""

    def __init__(self, path, remake: str | None):
        self.path = Path(path)
        restore = (f"restore it (git checkout -- {relative(self.path)})"
                   if committed_folder(self.path) is not None else None)
        again = f"write it again ({remake})" if remake else None
        link = (f"it is a link to {relative(Path(os.path.realpath(self.path)))}: "
                if self.path.is_symlink() else "")
        self.fix = link + (" or ".join(filter(None, [restore, again])) or "restore it")
        page = self.path.with_suffix(".md")          # the results page written beside it
        self.page_fix = " or ".join(filter(None, [
            f"restore both (git checkout -- {relative(self.path)} {relative(page)})"
            if restore else None, f"write both again ({remake})" if remake else None])) \
            or "restore both"
        if self.path.exists() and not self.path.is_file() and not self.path.is_dir():
            raise DataError(f"{self.path} is not a regular file (a pipe or a device, which "
                            f"reading would wait on); {self.fix}")
        try:
            self.data = json.loads(self.path.read_text(encoding="utf-8"),
                                   object_pairs_hook=_no_key_twice)
        except FileNotFoundError:
            raise DataError(f"{self.path} does not exist; {self.fix}") from None
        except IsADirectoryError:
            raise DataError(f"{self.path} is a folder, not a results file; " + (
                f"move it away, then {self.fix}"              # a folder under the file's name
                if self.path.suffix == ".json" and (restore or again) else
                "give the file itself")) \
                from None
        except UnicodeDecodeError as e:
            raise DataError(f"{self.path} is not UTF-8 text ({e.reason} at byte {e.start}); "
                            f"{self.fix}") from None
        except json.JSONDecodeError as e:
            raise DataError(f"{self.path} is not valid JSON ({e}); {self.fix}") from None
        except ValueError:                       # an integer of thousands of digits
            raise DataError(f"{self.path} holds a number of more digits than Python reads "
                            f"({sys.get_int_max_str_digits():,}); {self.fix}") from None
        except RecursionError:
            raise DataError(f"{self.path} nests arrays or objects deeper than a results "
                            f"file does (or Python can read); {self.fix}") from None
        except KeyError as e:                        # _no_key_twice: a hand merge, say
            raise DataError(f"{self.path} gives the key {e.args[0]!r} twice in one object, so "
                            f"one value would silently win; {self.fix}") from None
        except OSError as e:
            raise DataError(f"cannot read {self.path} ({e.strerror}); {self.fix}") from None
        if not isinstance(self.data, dict):
            raise DataError(f"{self.path} holds a JSON {type(self.data).__name__}, not the "
                            f"object a results file is; {self.fix}")

    def get(self, *keys, kind=None, rule=None):
        """The value at `keys` (object keys and list positions), checked: with `rule`, a finite
        number (not true or false) that keeps it; with `kind` (dict, list, str, bool), a
        value of that kind, a dict or list not empty."""
        value = self.data
        for depth, key in enumerate(keys):
            inside = isinstance(value, list) and isinstance(key, int) and 0 <= key < len(value)
            if not (inside or (isinstance(value, dict) and key in value)):
                raise DataError(f"{self.path}: {_named(keys[:depth + 1])} is missing; {self.fix}")
            value = value[key]
        if rule is not None and (problem := out_of_rule(value, rule)):
            raise DataError(f"{self.path}: {_named(keys)} {problem}; {self.fix}")
        if kind is Cell and isinstance(value, str) and value.strip() and \
                all(c != "|" and c.isprintable() for c in value):
            return value
        if kind is not None and (not isinstance(value, kind)
                                 or (kind in (dict, list) and not value)):
            expected = f"a non-empty {KINDS[kind]}" if kind in (dict, list) else KINDS[kind]
            raise DataError(f"{self.path}: {_named(keys)} is {shown(value)}, not {expected}; "
                            f"{self.fix}")
        return value


# sacreBLEU's signature of the scores the README and the results pages publish: one reference,
# no effective order, the 13a tokenizer, exponential smoothing; case:mixed for the cased score,
# case:lc for the lowercased one (any version)
SIGNATURE = {"nrefs": "1", "eff": "no", "tok": "13a", "smooth": "exp"}


def signature_of(record: Record, *keys, case: str) -> str:
    """The sacreBLEU signature at `keys`, checked to be that of the metric the pages name
    (SIGNATURE, and `case`): a score of another tokenizer, smoothing, case or number of
    references published under that name is refused."""
    text = record.get(*keys, kind=str)
    fields = dict(part.split(":", 1) for part in text.split("|") if ":" in part)
    wanted = {**SIGNATURE, "case": case}
    wrong = [f"{key}:{fields.get(key, '(none)')}" for key, value in wanted.items()
             if fields.get(key) != value]
    if wrong:
        raise DataError(f"{record.path}: {_named(keys)} is {shown(text, 90)}, where the score "
                        f"beside it is published as sacreBLEU with "
                        f"{'|'.join(f'{k}:{v}' for k, v in wanted.items())} (it has "
                        f"{', '.join(wrong)}); {record.fix}")
    return text


def cased_and_lowercased(record: Record, *keys) -> tuple[float, float]:
    """The cased BLEU and the lowercased BLEU of one output, at keys + ("bleu",) and keys +
    ("lowercase_bleu",), each in BLEU's range and the cased one not above the lowercased one:
    lowercasing only adds matches, so a pair the other way round had one of them edited."""
    lower = record.get(*keys, "lowercase_bleu", rule=BLEU)
    cased = record.get(*keys, "bleu", rule=BLEU)
    if cased > lower:
        raise DataError(f"{record.path}: {_named(keys + ('bleu',))} is {cased}, above "
                        f"lowercase_bleu beside it, {lower}: lowercasing only adds matches, so "
                        f"one of the two was changed; {record.fix}")
    return cased, lower


def results_page(record: "Record") -> list[str]:
    """The lines of the results page written from the same JSON (the .md beside it); a page
    that is missing is refused: the numbers published from the JSON are checked against it."""
    page = record.path.with_suffix(".md")
    if page.is_dir():
        raise DataError(f"{page}, written beside {record.path.name} from the same results, is "
                        f"a folder: move it away, then {record.page_fix}")
    if not page.is_file():
        restore = (f"restore it (git checkout -- {relative(page)})"
                   if committed_folder(page) is not None else record.fix)
        raise DataError(f"{page}, written beside {record.path.name} from the same results, is "
                        f"missing, and the numbers of {record.path.name} are checked against "
                        f"it; {restore}")
    return page.read_text(encoding="utf-8", errors="replace").splitlines()


def headline_row(record: "Record", table: str) -> str:
    """The key of `table` (an object of rows) that a summary quotes: the decoding the scoring
    chose (chosen_decoding), which the results page shows first. Every row must be on the
    page, that one first: a row renamed, deleted or moved in one of the two files would put
    another decoding's score in its place."""
    rows = record.get(table, kind=dict)
    page = record.path.with_suffix(".md").name
    cells = [line.split("|")[1].strip() for line in results_page(record) if line.startswith("| ")]
    if missing := [key for key in rows if key not in cells]:   # a row renamed, or deleted
        raise DataError(f"{record.path}: its row {missing[0]!r} of {table} is not on {page}: "
                        f"one of the two was edited; {record.page_fix}")
    chosen, first = chosen_decoding(rows), next((cell for cell in cells if cell in rows), None)
    if chosen is None or first != chosen:
        raise DataError(f"{record.path}: {page} shows {first!r} first among the rows of {table}, "
                        f"not the decoding that was chosen"
                        + (f", {chosen!r}" if chosen else " (no row names it)")
                        + f": one of the two was edited; {record.page_fix}")
    return chosen


def chosen_decoding(keys) -> str | None:
    """The row that experiments.scoring names after the decoding it chose (chosen_label):
    with an average, the only row on one ("average of N"); without, the only row that names
    its checkpoint ("last checkpoint (ckpt_...)"). None if no row, or several, are."""
    for mark in ("average of ", "checkpoint ("):
        if found := [key for key in keys if mark in key]:
            return found[0] if len(found) == 1 else None
    return None


def shown_on_its_page(record: "Record", value: float, keys: tuple, column: str) -> None:
    """Refuse `value` (at `keys`) unless the results page shows it, as a whole number, in the
    row named like its key (keys[-2]) and the column headed `column`: a number edited by hand
    in one of the two, or copied from another row or column, is caught here."""
    lines = results_page(record)
    row = next((i for i, line in enumerate(lines) if line.startswith(f"| {keys[-2]} |")), None)
    header = next((lines[i] for i in range(row or 0, 0, -1)
                   if lines[i].startswith("| ") and lines[i + 1].startswith("| ---")), None)
    cells = [c.strip() for c in header.strip().strip("|").split("|")] if header else []
    where = (f"its row {keys[-2]!r}, column {column!r}" if row is not None and column in cells
             else None)
    row_cells = lines[row].strip().strip("|").split("|") if where else []
    shown = (row_cells[cells.index(column)].strip()
             if where and cells.index(column) < len(row_cells) else None)
    if shown not in {f"{value:.2f}", f"{value}", f"{value:g}"}:
        raise DataError(f"{record.path}: {_named(keys)} is {value}, but "
                        f"{record.path.with_suffix('.md').name}, written from the same "
                        f"results, does not show it in {where or 'a row named ' + repr(keys[-2])}"
                        f": one of the two was edited; {record.page_fix}")


def _no_key_twice(pairs: list) -> dict:
    """json's object_pairs_hook: the object, or KeyError naming a key given twice."""
    found = {}
    for key, value in pairs:
        if key in found:
            raise KeyError(key)
        found[key] = value
    return found


def out_of_rule(value, rule) -> str | None:
    """Why `value` is not a finite number (true and false are not) that keeps `rule`, the
    rule's (test, what is allowed in words); None if it is one."""
    test, allowed = rule
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    try:
        if number and math.isfinite(value) and test(value):
            return None
    except OverflowError:                        # an int past any float: out of every rule
        return f"is a number of {len(str(value)):,} digits, not {allowed}"
    wanted = allowed if allowed.startswith("a ") else f"a number {allowed}"
    return f"is {shown(value)}, not {wanted}"


def _named(keys) -> str:
    """keys as the message names them: test2016.bleu, cases[3].step_s."""
    text = ""
    for key in keys:
        text += f"[{key}]" if isinstance(key, int) else ("." if text else "") + str(key)
    return text


GPU_RECORD = "on a GPU: python -m benchmarks.gpu_train --out results/gpu_train.json"


def gpu_timings(path) -> Record:
    """benchmarks.gpu_train's record at `path`, checked to be a whole measurement on a GPU: a
    CPU run (which only checks the script) or an interrupted one is one DataError, whose fix
    writes that same file again."""
    record = Record(path, GPU_RECORD.replace("results/gpu_train.json", str(path)))
    if not {"machine", "cases"} <= set(record.data):
        raise DataError(f"{path} is not a record of benchmarks.gpu_train (it lacks the "
                        f"'machine' and 'cases' that gpu_train writes); give the file that "
                        f"gpu_train writes, results/gpu_train.json")
    machine = record.get("machine", kind=dict)
    if "gpu" not in machine:
        raise DataError(f"{path} is not a complete GPU measurement: it holds a CPU run, which "
                        f"only checks the script; {record.fix}")
    if record.data.get("complete") is not True:         # restoring it gives it back as it is
        raise DataError(f"{path} is not a complete GPU measurement: it holds a run stopped "
                        f"before its end (\"complete\" is not true), as a time limit leaves "
                        f"it; give a complete record (results/gpu_train.json is one) or "
                        f"measure again ({GPU_RECORD.replace('results/gpu_train.json', str(path))})")
    name = record.get("machine", "gpu", kind=str)
    if not name.strip() or name.strip().lower() in ("cpu", "none", "unknown"):
        raise DataError(f"{path}: machine.gpu is {name!r}, which names no GPU, where gpu_train "
                        f"writes the one it measured on (torch.cuda.get_device_name()); "
                        f"{record.fix}")
    seen = {}
    for i, case in enumerate(record.get("cases", kind=list)):
        if isinstance(case, dict):
            record.get("cases", i, "case", kind=str)       # a name, not a list or a number
        key = (case.get("case"), case.get("compile"), case.get("cuda_graphs")) \
            if isinstance(case, dict) else i
        if key in seen:
            raise DataError(f"{path}: cases[{i}] measures {key[0]!r} in the same mode as "
                            f"cases[{seen[key]}]: a record holds each once; {record.fix}")
        seen[key] = i
    return record


def fastest(record: Record, name: str) -> dict:
    """The fastest mode (eager, compiled or CUDA graphs) of the case `name` in a gpu_timings
    record, each of its numbers checked."""
    found = [i for i, case in enumerate(record.data["cases"])
             if isinstance(case, dict) and case.get("case") == name]
    if not found:
        raise DataError(f"{record.path} holds no case {name!r}; measure it {GPU_RECORD} "
                        f"--only base big")
    for i in found:                  # each mode's, or an edited one would drop out of sight
        check_step_numbers(record, i)
    best = min(found, key=lambda i: record.data["cases"][i]["step_s"])
    memory = record.get("machine", "gpu_memory_GiB", rule=POSITIVE)
    record.get("cases", best, "peak_memory_GiB", rule=between(0, memory, "GiB of the GPU"))
    record.get("cases", best, "compile", kind=bool)
    case = record.data["cases"][best]
    if name.split()[0] not in PRESETS:                  # "base 1/8" is the base model's case
        raise DataError(f"{record.path}: its case {name!r} names no model of this project "
                        f"(a preset: base, big, ...); {record.fix}")
    model = get(name.split()[0])
    for key in ("N", "d_model"):
        if case.get(key) != getattr(model, key):
            raise DataError(f"{record.path}: cases[{best}] is named {name!r} but has "
                            f"{key}={case.get(key)!r}, where the {name.split()[0]} model has "
                            f"{getattr(model, key)}; {record.fix}")
    return case


def check_step_numbers(record: Record, i: int) -> None:
    """The step time of cases[i] against its other numbers, as gpu_train computes them: it lies
    within its measured range, and its tokens, tokens/s, TFLOPs and MFU agree with it."""
    step = record.get("cases", i, "step_s", rule=POSITIVE)
    low, high = (record.get("cases", i, "step_s_range", j, rule=POSITIVE) for j in (0, 1))
    if not low <= step <= high:
        raise DataError(f"{record.path}: cases[{i}].step_s is {step:g}, outside the range of "
                        f"its steps, step_s_range = [{low:g}, {high:g}], which holds the "
                        f"median it comes from; {record.fix}")
    tokens = sum(record.get("cases", i, key, rule=POSITIVE)
                 for key in ("source_tokens", "target_tokens"))
    rate = record.get("cases", i, "tokens_per_s", rule=POSITIVE)
    if abs(rate - tokens / step) > 0.02 * tokens / step:
        raise DataError(f"{record.path}: cases[{i}].tokens_per_s is {rate:,}, but its tokens "
                        f"and step time make {tokens / step:,.0f}; {record.fix}")
    record.get("cases", i, "MFU", rule=FRACTION)
    check_flop_rates(record, i)


def check_flop_rates(record: Record, best: int) -> None:
    """A case's TFLOPs and MFU as gpu_train computes them, from its useful FLOPs, its step time
    and the GPU's datasheet peak, which no measured matrix product exceeds."""
    flops = record.get("cases", best, "useful_flops", rule=POSITIVE)
    datasheet = record.get("machine", "bf16_datasheet_peak_TFLOPs", rule=POSITIVE)
    measured = record.get("machine", "bf16_matmul_measured_TFLOPs", rule=POSITIVE)
    if measured > 1.02 * datasheet:
        raise DataError(f"{record.path}: machine.bf16_matmul_measured_TFLOPs is {measured:g}, "
                        f"above the datasheet's peak, bf16_datasheet_peak_TFLOPs = {datasheet:g}, "
                        f"which no GPU exceeds; {record.fix}")
    tflops = flops / record.data["cases"][best]["step_s"] / 1e12
    for key, value, decimals in (("TFLOPs", tflops, 1), ("MFU", tflops / datasheet, 3)):
        found = record.get("cases", best, key, rule=POSITIVE)
        if abs(found - value) > 0.02 * value + 10 ** -decimals:
            raise DataError(f"{record.path}: cases[{best}].{key} is {found:g}, but its "
                            f"useful_flops and step_s make {value:.{decimals}f}"
                            f"{' of the datasheet peak' if key == 'MFU' else ''}; {record.fix}")
