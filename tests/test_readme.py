"""The README and the results page say what the results files say: one source for every number.

The README's tables are rendered from results/*.json (experiments.summary); every other
number on the README and on results/README.md must be found in a results file, so a result
that changes without its prose (or prose that changes without its result) fails here."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import says

from annotated.base.errors import DataError
from experiments import summary

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
PAGES = [ROOT / "README.md", RESULTS / "README.md"]
# Numbers that are not results: Multi30k's training pairs (its own README), the paper's year,
# the oldest Python the project runs on.
NOT_RESULTS = {"29,000", "2017", "3.10"}
#: the base model's schedule as committed: what the messages below must quote back
BASE_PLAN = json.loads((RESULTS / "gpu_schedule.json").read_text())["models"]["base"]
GPU_CASES = json.loads((RESULTS / "gpu_train.json").read_text())["cases"]


def prose(text: str) -> str:
    """`text` without code (commands and settings are not results) and without the tables
    experiments.summary renders (the test above checks those whole)."""
    for begin, end in summary.MARKERS.values():
        text = re.sub(re.escape(begin) + ".*?" + re.escape(end), "", text, flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def numbers(text: str) -> set[str]:
    """The numbers that can be results: with a decimal point, thousands commas, or 3+ digits."""
    return set(re.findall(r"(?<![\w.\-])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])"
                          r"|(?<![\w.\-])\d+\.\d+(?![\w.])|(?<![\w.,\-])\d{3,}(?![\w,.])",
                          prose(text)))


def results_text() -> str:
    return "".join(p.read_text() for p in sorted(RESULTS.glob("*"))
                   if p.suffix in (".json", ".md") and p.name != "README.md")


def in_results(number: str, text: str) -> bool:
    plain = number.replace(",", "")
    forms = {number, plain}
    value = float(plain)
    forms |= {f"{value:g}", repr(value)}
    return any(re.search(rf"(?<![\d.]){re.escape(form)}(?![\d])", text) for form in forms)


@pytest.mark.parametrize("name", summary.TABLES)
def test_the_readme_tables_are_the_ones_the_results_files_give(name):
    readme = (ROOT / "README.md").read_text()
    assert summary.readme_table(readme, name) == summary.TABLES[name](), \
        "results changed: run python -m experiments.summary --write"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_number_on_a_results_page_is_in_a_results_file(page):
    text = results_text()
    missing = sorted(n for n in numbers(page.read_text()) - NOT_RESULTS
                     if not in_results(n, text))
    assert not missing, f"{page.name}: not in any results file: {', '.join(missing)}"


def numbers_off_their_files(page: str) -> list[str]:
    """Each number of a section of the results page (## ...) that none of the results files
    the section names holds (`multi30k_tiny.md` names its .json too): "section: number"."""
    off = []
    for section in re.split(r"\n(?=## )", page)[1:]:
        named = {n for name in re.findall(r"`([\w.]+\.(?:json|md))`", section)
                 for n in (name, Path(name).with_suffix(".json").name)}
        text = "".join((RESULTS / n).read_text() for n in sorted(named) if (RESULTS / n).is_file())
        off += [f"{section.splitlines()[0]}: {n}" for n in sorted(numbers(section) - NOT_RESULTS)
                if not in_results(n, text)]
    return off


def test_each_section_of_the_results_page_takes_its_numbers_from_the_files_it_names():
    """A number is tied to its own results file, not only found in some file: the section on
    English->French cannot quote the English->German score without naming its file."""
    page = (RESULTS / "README.md").read_text()
    assert not numbers_off_their_files(page), numbers_off_their_files(page)
    moved = page.replace("against our 39.22 cased (`multi30k_tiny.md`)", "against our 39.22 cased")
    assert numbers_off_their_files(moved) == ["## English->French: 39.22"]


def test_the_number_check_fails_on_a_number_no_results_file_holds():
    text = results_text()
    assert not in_results("123.456", text) and in_results("39.58", text)
    assert numbers("BLEU 39.58, `--alpha 1.4`, 12,103 tokens, 4 heads") == {"39.58", "12,103"}


def test_the_readme_is_short_and_copies_cleanly():
    """At most 150 lines for a newcomer; no inline code broken across lines (it breaks when
    copied from the raw file)."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    outside_blocks = re.sub(r"```.*?```", "", text, flags=re.S)
    broken = [line for line in outside_blocks.splitlines() if line.count("`") % 2]
    assert not broken, broken


def test_the_shipped_model_carries_the_decoding_it_was_scored_with():
    from annotated.pretrained import MULTI30K_EN_DE
    from annotated.store.checkpoint_file import load
    config = load(MULTI30K_EN_DE)["config"]
    decode = json.loads(MULTI30K_EN_DE.with_suffix(".json").read_text())["decode"]
    assert (config["beam_size"], config["alpha"]) == (decode["beam_size"], decode["alpha"])


def test_the_chinese_readme_gives_the_same_two_commands():
    def commands(text):
        return text.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    english = commands((ROOT / "README.md").read_text())
    assert len(english) == 5 and "apt-get install chromium chromium-driver" in english[4]
    assert commands((ROOT / "README.zh-CN.md").read_text(encoding="utf-8")) == english


# --- experiments.summary reads every results file it publishes from, checked ---------------------

@pytest.fixture
def scratch_summary(tmp_path, monkeypatch):
    """experiments.summary pointed at copies of results/ and README.md; returns their folder."""
    shutil.copytree(RESULTS, tmp_path / "results")
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    monkeypatch.setattr(summary, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(summary, "README", tmp_path / "README.md")
    return tmp_path


def test_the_summary_keeps_a_readme_s_line_ends_and_leaves_one_up_to_date_alone(
        scratch_summary, capsys):
    readme = scratch_summary / "README.md"
    text = readme.read_text()
    summary.main(["--write"])
    assert "already" in capsys.readouterr().out and readme.read_text() == text
    stale = text.replace("| base |", "| base (old) |", 1).replace("\n", "\r\n")
    readme.write_bytes(stale.encode())
    summary.main(["--write"])
    assert readme.read_bytes() == text.replace("\n", "\r\n").encode()


def refused_summary(folder, capsys) -> str:
    """`experiments.summary --write` that must stop with one error line and leave README.md
    and the folder as they were; the line."""
    readme = (folder / "README.md").read_bytes()
    before = sorted(p.name for p in folder.iterdir())
    with pytest.raises(SystemExit) as stopped:
        summary.main(["--write"])
    err = capsys.readouterr().err
    assert stopped.value.code == 1 and "Traceback" not in err and err.count("\n") == 1, err
    assert (folder / "README.md").read_bytes() == readme
    assert sorted(p.name for p in folder.iterdir()) == before
    return err


def test_the_tables_printed_say_when_the_readme_shows_others(scratch_summary, capsys):
    """Without --write the tables are printed; a README whose table was edited is named."""
    summary.main([])
    assert "note" not in capsys.readouterr().err
    readme = scratch_summary / "README.md"
    readme.write_text(readme.read_text().replace("| base |", "| base (old) |", 1))
    summary.main([])
    says(capsys.readouterr().err, "README.md", "other tables", "--write")


def test_a_read_only_readme_is_not_replaced(scratch_summary, capsys):
    """Replacing a file asks its folder, not the file: a README made read-only is refused as
    a read-only --out is, and left as it was."""
    readme = scratch_summary / "README.md"
    readme.write_text(readme.read_text().replace("| base |", "| base (old) |", 1))
    readme.chmod(0o444)
    try:
        says(refused_summary(scratch_summary, capsys), "README.md", "read-only", "chmod u+w")
    finally:
        readme.chmod(0o644)


def test_a_results_file_replaced_by_a_link_to_another_is_named_as_the_link(scratch_summary,
                                                                          capsys):
    """The link, not the file it leads to, is what the fix restores."""
    results = scratch_summary / "results"
    (results / "multi30k_tiny.json").unlink()
    (results / "multi30k_tiny.json").symlink_to("multi30k.json")
    err = refused_summary(scratch_summary, capsys)
    says(err, "multi30k_tiny.json", "holds another run", "a link to", "multi30k.json")
    assert "write it again" in err


def test_a_damaged_results_page_or_file_is_one_line(scratch_summary, capsys):
    """A row of the results page cut short, the page replaced by a folder, a number of 5,000
    digits (past what Python reads), a results file that is a link to itself."""
    results = scratch_summary / "results"
    page = results / "multi30k_tiny.md"
    text = page.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| beam 4, alpha 1.4, "))
    page.write_text(text.replace(row, "|".join(row.split("|")[:3]) + "|"))
    says(refused_summary(scratch_summary, capsys), "multi30k_tiny.md", "edited", "both")
    page.write_text(text)
    (results / "multi30k.md").unlink()
    (results / "multi30k.md").mkdir()
    says(refused_summary(scratch_summary, capsys), "multi30k.md", "a folder", "move it away")
    (results / "multi30k.md").rmdir()
    shutil.copy(RESULTS / "multi30k.md", results / "multi30k.md")
    install = results / "install.json"
    saved = install.read_text()
    install.write_text(saved.replace('"packages": ', '"packages": ' + "1" * 5000, 1))
    says(refused_summary(scratch_summary, capsys), "install.json", "number", "digits",
         "write it again")
    install.write_text(saved)
    schedule = results / "gpu_schedule.json"
    schedule.unlink()
    schedule.symlink_to("gpu_schedule.json")
    says(refused_summary(scratch_summary, capsys), "gpu_schedule.json")


def test_a_gpu_case_renamed_in_both_gpu_files_names_the_file(scratch_summary, capsys):
    """Not "unknown config", which reads as a --config of the user's."""
    edit_json(scratch_summary / "results" / "gpu_train.json", lambda r: [
        c.update(case=c["case"].replace("base", "tiny")) for c in r["cases"]])
    edit_json(scratch_summary / "results" / "gpu_schedule.json", lambda r: r.update(
        models={k.replace("base", "tiny"): v for k, v in r["models"].items()}))
    err = refused_summary(scratch_summary, capsys)
    says(err, "gpu_", "'tiny", "names no model")
    assert "unknown config" not in err


def test_a_readme_that_is_a_folder_is_named_with_how_to_restore_it(scratch_summary, capsys):
    readme = scratch_summary / "README.md"
    readme.unlink()
    readme.mkdir()
    with pytest.raises(SystemExit):
        summary.main(["--write"])
    says(capsys.readouterr().err, "README.md", "a folder", "git checkout -- README.md")
    assert readme.is_dir() and not any(readme.iterdir())


def edit_json(path, change):
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))


def first_test2016(record):
    return next(iter(record["test2016"].values()))


@pytest.mark.parametrize("value,names", [(float("nan"), ("nan",)), (-12.5, ("-12.5",)),
                                         (100.5, ("100.5", "<= 100")), ("39", ("'39'",))])
def test_an_impossible_bleu_in_a_results_file_is_never_published(value, names,
                                                                 scratch_summary, capsys):
    edit_json(scratch_summary / "results" / "multi30k_tiny.json",
              lambda r: first_test2016(r).update(lowercase_bleu=value))
    err = refused_summary(scratch_summary, capsys)
    says(err, "multi30k_tiny.json", "lowercase_bleu", *names, "python -m experiments.multi30k")


@pytest.mark.parametrize("name,change,names", [
    ("install.json", lambda r: r["commands"]["(2)"].pop("run_s"),
     ("install.json", "commands.(2).run_s", "missing", "python -m experiments.install")),
    ("install.json", lambda r: r["commands"]["(1)"].update(venv_bytes=-1),
     ("install.json", "venv_bytes", "-1")),
    ("gpu_schedule.json", lambda r: r["models"]["base"]["hours"].update(per_gpu_share=0),
     ("gpu_schedule.json", "per_gpu_share", "python -m experiments.gpu_schedule")),
    ("gpu_train.json", lambda r: [c.update(MFU=float("inf")) for c in r["cases"]],
     ("gpu_train.json", "].MFU", "inf")),
    ("published.json", lambda r: r["multi30k_test2016"]["en-de"][0].pop("bleu"),
     ("published.json", "multi30k_test2016.en-de[0].bleu", "missing")),
    # numbers each fine alone, impossible together or beside what the file says of itself
    ("multi30k_tiny.json", lambda r: first_test2016(r).update(bleu=99.0),
     ("multi30k_tiny.json", "bleu", "99.0", "lowercase_bleu", "only adds matches")),
    ("multi30k_tiny.json", lambda r: first_test2016(r).update(lowercase_bleu=34.22),
     ("multi30k_tiny.json", "lowercase_bleu beside it, 34.22", "one of the two was changed")),
    ("multi30k_tiny.json", lambda r: first_test2016(r).update(bleu=39.5),
     ("multi30k_tiny.json", "bleu", "39.5", "multi30k_tiny.md", "edited",
      "write both again")),
    ("multi30k_tiny.json", lambda r: first_test2016(r).update(
        signature=first_test2016(r)["signature"].replace("case:mixed", "case:lc")),
     ("multi30k_tiny.json", "signature", "case:mixed")),
    ("multi30k_tiny.json", lambda r: first_test2016(r).update(
        lowercase_signature=first_test2016(r)["lowercase_signature"].replace("tok:13a",
                                                                             "tok:char")),
     ("multi30k_tiny.json", "lowercase_signature", "tok:char", "tok:13a")),
    ("multi30k_tiny.json", lambda r: first_test2016(r).update(
        signature=first_test2016(r)["signature"].replace("nrefs:1", "nrefs:4")
        .replace("smooth:exp", "smooth:floor")),
     ("multi30k_tiny.json", "signature", "nrefs:4", "smooth:floor", "nrefs:1", "smooth:exp")),
    ("gpu_schedule.json", lambda r: r["models"]["base"]["hours"].update(per_gpu_share=0.01),
     ("gpu_schedule.json", "per_gpu_share", "0.01",
      f"{BASE_PLAN['hours']['per_gpu_share']:.2f} h")),
    ("gpu_schedule.json", lambda r: r["models"]["base"].update(full_step_s=0.02),
     ("gpu_schedule.json", "full_step_s", "0.02", "gpu_train.json", "whole batch")),
    ("gpu_schedule.json", lambda r: r["models"]["base"]["hours"].update(perfect_scaling=5.0),
     ("gpu_schedule.json", "perfect_scaling", "5.0")),
    ("gpu_schedule.json", lambda r: r["machine"].update(gpu="NVIDIA A100"),
     ("gpu_schedule.json", "machine.gpu", "NVIDIA A100", "gpu_train.json")),
    ("gpu_schedule.json", lambda r: r["models"]["base"].update(share_step_s=0.5),
     ("gpu_schedule.json", "share_step_s", "0.5", "gpu_train.json",
      str(BASE_PLAN["share_step_s"]))),
    ("install.json", lambda r: r["commands"]["(1)"].update(venv_bytes=10 ** 30),
     ("install.json", "venv_bytes", "bytes")),
    ("install.json", lambda r: r["commands"]["(1)"].update(install_s=1e300),
     ("install.json", "install_s", "seconds")),
    ("published.json", lambda r: r["multi30k_test2016"]["en-de"][0].update(system="A | B"),
     ("published.json", "system", "'A | B'", "without '|'")),
    ("gpu_train.json", lambda r: r["machine"].update(gpu="H200\n# hi"),
     ("gpu_train.json", "machine.gpu", "one line")),
    ("install.json", lambda r: r["commands"]["(1)"].update(packages=12.5),
     ("install.json", "packages", "12.5", "whole number")),
    ("gpu_train.json", lambda r: [c.update(peak_memory_GiB=500.0) for c in r["cases"]],
     ("gpu_train.json", "peak_memory_GiB", "500.0", "GiB of the GPU")),
    ("gpu_train.json", lambda r: [c.update(tokens_per_s=99_999_999) for c in r["cases"]],
     ("gpu_train.json", "tokens_per_s", "99,999,999", "step time")),
    ("gpu_train.json", lambda r: [c.update(MFU=0.9) for c in r["cases"]],
     ("gpu_train.json", "MFU", "0.9", "useful_flops and step_s make 0.1")),
    ("gpu_train.json", lambda r: [c.update(TFLOPs=900.0) for c in r["cases"]],
     ("gpu_train.json", "TFLOPs", "900", "useful_flops and step_s make")),
    ("gpu_train.json", lambda r: r["machine"].update(bf16_datasheet_peak_TFLOPs=100.0),
     ("gpu_train.json", "bf16_matmul_measured_TFLOPs", "datasheet", "100")),
    ("gpu_train.json", lambda r: r["machine"].update(gpu="cpu"),
     ("gpu_train.json", "machine.gpu", "'cpu'", "names no GPU")),
    ("gpu_train.json", lambda r: r["cases"][0].update(step_s=0.5),  # slower: out of the race
     ("gpu_train.json", "cases[0].step_s", "0.5", "step_s_range")),
    ("gpu_train.json", lambda r: r["cases"][0].update(step_s_range=[0.1, 1.0], step_s=0.5),
     ("gpu_train.json", "cases[0].tokens_per_s", "step time make")),
    ("gpu_train.json", lambda r: r["cases"].append(dict(r["cases"][0], step_s=0.5)),
     ("gpu_train.json", f"cases[{len(GPU_CASES)}]", "same mode", "cases[0]")),
    # another run's file under this row's name, or a smoke test scored on a few sentences
    ("multi30k_tiny.json", lambda r: (r.update(preset="multi30k"), r["config"].update(P_drop=0.1)),
     ("multi30k_tiny.json", "another run", "preset='multi30k'", "P_drop=0.1", "write it again")),
    ("multi30k_tiny.json", lambda r: r["config"].update(N=1, d_model=16),  # another shape
     ("multi30k_tiny.json", "another run", "N=1", "N=4", "d_model=16")),
    ("multi30k_tiny_en_fr.json", lambda r: r["config"].update(target_lang="de"),
     ("multi30k_tiny_en_fr.json", "target_lang='de'", "target_lang='fr'")),
    ("install.json", lambda r: r["commands"]["(2)"].update(packages=0),
     ("install.json", "packages", "0", "whole number >= 1")),
    ("install.json", lambda r: r["commands"]["(2)"].update(packages=10 ** 400),
     ("install.json", "packages", "401 digits")),
    ("gpu_train.json", lambda r: [c.update(case=c["case"].replace("base", "tiny"))
                                  for c in r["cases"]], ("gpu_train.json", "base")),
    ("multi30k_tiny_lowercase.json", lambda r: r["config"].update(lowercase="false"),
     ("multi30k_tiny_lowercase.json", "lowercase='false'", "lowercase=True")),
    ("multi30k_tiny.json", lambda r: r["average"].update(checkpoints=[1, 2, 3]),
     ("multi30k_tiny.json", "average.checkpoints", "[1, 2, 3]", "checkpoint file names")),
    ("gpu_train.json", lambda r: r["cases"][0].update(case=["base"]),
     ("gpu_train.json", "cases[0].case", "['base']", "text")),
    ("install.json", lambda r: r["commands"]["(2)"].update(venv_bytes=0),
     ("install.json", "venv_bytes", "0", "bytes")),
    ("gpu_train.json", lambda r: [c.update(case={"base": "big", "big": "base"}.get(
        c["case"], c["case"])) for c in r["cases"]],
     ("gpu_train.json", "named 'base'", "d_model=1024", "512")),
    ("multi30k.json", lambda r: first_test2016(r).update(lowercase_ref_tokens=57),
     ("multi30k.json", "57 reference tokens", "multi30k_tiny.json", "part of test2016",
      "changed by hand", "git checkout")),
    ("multi30k.json", lambda r: r.update(limited="the first 3 of the 1,000 sentences"),
     ("multi30k.json", "smoke test", "the first 3", "write it again")),
    ("multi30k_tiny.json", lambda r: first_test2016(r).update(
        lowercase_bleu=first_test2016(r)["bleu"]),                # another column of its row
     ("multi30k_tiny.json", "lowercase_bleu", "column 'lowercased BLEU'", "edited")),
    # a score edited to another row's of the same page, or to a whole number that is the
    # whole part of a score shown elsewhere on it
    ("multi30k.json", lambda r: first_test2016(r).update(
        bleu=list(r["test2016"].values())[-1]["bleu"]),
     ("multi30k.json", "bleu", "multi30k.md", "in its row", "edited")),
    ("multi30k.json", lambda r: first_test2016(r).update(
        bleu=float(int(list(r["test2016"].values())[1]["bleu"]))),
     ("multi30k.json", "bleu", "multi30k.md", "in its row", "edited"))])
def test_a_results_file_without_what_the_readme_shows_is_one_line(name, change, names,
                                                                  scratch_summary, capsys):
    edit_json(scratch_summary / "results" / name, change)
    says(refused_summary(scratch_summary, capsys), *names)


@pytest.fixture
def shipped(scratch_summary, monkeypatch):
    """A copy of the shipped model's record, which the summary reads in its place."""
    path = scratch_summary / "multi30k_en_de.json"
    shutil.copy(summary.PRETRAINED, path)
    monkeypatch.setattr(summary, "PRETRAINED", path)
    return path


def test_a_shipped_model_other_than_its_readme_row_s_is_refused(scratch_summary, shipped,
                                                               capsys):
    """experiments.pretrained replaced the shipped model with another run's: the row that
    says it ships would show the old model's scores."""
    edit_json(shipped, lambda r: r.update(averaged_from=["ckpt_0000010.pt", "ckpt_0000020.pt"]))
    says(refused_summary(scratch_summary, capsys), str(shipped), "another model",
         "multi30k_tiny.json", "ship the model the row scores")


@pytest.mark.parametrize("edited", ["shipped record", "results file"])
def test_one_model_with_two_scores_names_both_files_as_edited(edited, scratch_summary,
                                                              shipped, capsys):
    """The shipped model's record and its row's results file average the same checkpoints
    but disagree on the score: one was changed by hand, and the line cannot tell which."""
    if edited == "shipped record":
        edit_json(shipped, lambda r: r["float32"].update(bleu=0.0, lowercase_bleu=0.0))
    else:                   # by less than its page's two decimals show: the page agrees
        edit_json(scratch_summary / "results" / "multi30k_tiny.json", lambda r: first_test2016(
            r).update(lowercase_bleu=first_test2016(r)["lowercase_bleu"] + 0.001))
    says(refused_summary(scratch_summary, capsys), str(shipped), "multi30k_tiny.json",
         "same model", "by hand", "git checkout")


def test_a_folder_in_place_of_a_results_file_says_to_move_it_and_restore_the_file(
        scratch_summary, capsys):
    path = scratch_summary / "results" / "multi30k.json"
    path.unlink()
    path.mkdir()
    says(refused_summary(scratch_summary, capsys), str(path), "a folder", "move it away",
         "write it again")


def test_another_results_file_given_as_the_gpu_record_is_named_as_not_one():
    from experiments.results_files import gpu_timings
    with pytest.raises(DataError) as error:
        gpu_timings(RESULTS / "install.json")
    says(str(error.value), "install.json", "not a record of benchmarks.gpu_train")
    assert "CPU run" not in str(error.value)


def test_the_quoted_row_is_the_one_its_page_shows_first_whatever_the_keys_order(
        scratch_summary, capsys):
    """JSON's key order means nothing: jq -S or a sorted re-save must not change the score the
    README quotes."""
    summary.main([])
    before = capsys.readouterr().out
    path = scratch_summary / "results" / "multi30k_tiny.json"
    path.write_text(json.dumps(json.loads(path.read_text()), indent=1, sort_keys=True))
    summary.main([])
    assert capsys.readouterr().out == before


def test_a_pipe_in_place_of_a_results_file_is_refused_not_waited_on(scratch_summary, capsys):
    path = scratch_summary / "results" / "published.json"
    path.unlink()
    os.mkfifo(path)
    says(refused_summary(scratch_summary, capsys), str(path), "not a regular file")


def test_a_results_page_that_is_missing_is_named_not_skipped(scratch_summary, capsys):
    """The scores are checked against the page beside their file: without it, no check."""
    (scratch_summary / "results" / "multi30k.md").unlink()
    says(refused_summary(scratch_summary, capsys), "multi30k.json", "multi30k.md", "missing",
         "write it again")


@pytest.mark.parametrize("edit", ["row renamed in the .json", "first row deleted from the .md",
                                  "first two rows swapped in the .md"])
def test_a_row_missing_from_either_results_file_is_refused_not_another_quoted(
        edit, scratch_summary, capsys):
    """Either edit would make the greedy row the first one both files share, and the README
    would quote it as the model's score under the paper's setting."""
    path = scratch_summary / "results" / "multi30k.json"
    first = next(iter(json.loads(path.read_text())["test2016"]))
    page = path.with_suffix(".md")
    lines = page.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith(f"| {first} |"))
    if edit.endswith(".json"):
        path.write_text(path.read_text().replace(f'"{first}"', '"renamed"'))
    elif edit.startswith("first row deleted"):
        page.write_text("".join(lines[:at] + lines[at + 1:]))
    else:
        page.write_text("".join(lines[:at] + [lines[at + 1], lines[at]] + lines[at + 2:]))
    says(refused_summary(scratch_summary, capsys), "multi30k.json", "multi30k.md", "edited",
         "not on" if "swapped" not in edit else "not the decoding that was chosen")


def test_a_key_given_twice_in_a_results_file_is_one_line(scratch_summary, capsys):
    """A bad hand merge: json would keep the last value without a word."""
    path = scratch_summary / "results" / "multi30k_tiny.json"
    text = path.read_text()
    path.write_text(text.replace('"lowercase_bleu": ', '"lowercase_bleu": 93.58, '
                                                       '"lowercase_bleu": ', 1))
    says(refused_summary(scratch_summary, capsys), str(path), "'lowercase_bleu' twice")


@pytest.mark.parametrize("text", ['{"commands": ', "", "\xff\xfe".encode("latin-1"), "[1, 2, 3]"])
def test_a_broken_results_file_is_one_line_naming_it(text, scratch_summary, capsys):
    path = scratch_summary / "results" / "install.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    says(refused_summary(scratch_summary, capsys), str(path), "write it again",
         "python -m experiments.install")


def test_a_cpu_run_in_place_of_the_gpu_record_is_one_line(scratch_summary, capsys):
    """What a CPU run of benchmarks.gpu_train writes: a record without a GPU."""
    edit_json(scratch_summary / "results" / "gpu_train.json",
              lambda r: (r["machine"].pop("gpu"), r.update(cases=[{"case": "copy"}])))
    err = refused_summary(scratch_summary, capsys)
    says(err, "gpu_train.json", "not a complete GPU measurement", "CPU run",
         "python -m benchmarks.gpu_train")


@pytest.mark.parametrize("edit", ["swapped", "missing", "twice"])
def test_readme_markers_out_of_place_are_one_line_naming_them(edit, scratch_summary, capsys):
    readme = scratch_summary / "README.md"
    begin, end = summary.MARKERS["gpu"]
    text = readme.read_text()
    text = {"swapped": text.replace(begin, "\0").replace(end, begin).replace("\0", end),
            "missing": text.replace(end, ""),
            "twice": text + f"\n{begin}\n"}[edit]
    readme.write_text(text)
    err = refused_summary(scratch_summary, capsys)
    says(err, "README.md", begin if edit != "missing" else end, "git checkout -- README.md")


def test_markers_of_one_table_inside_another_are_refused_before_writing(scratch_summary,
                                                                        capsys):
    """Both results markers moved into the commands table: writing the commands table would
    replace them and the results table with it."""
    readme = scratch_summary / "README.md"
    begin, end = summary.MARKERS["results"]
    inner = f"{begin}\nold results\n{end}\n"
    text = readme.read_text().replace(begin, "").replace(end, "")
    commands = summary.MARKERS["commands"][0]
    readme.write_text(text.replace(commands, f"{commands}\n{inner}"))
    says(refused_summary(scratch_summary, capsys), "README.md", "results",
         "inside the commands table", "apart", "git checkout -- README.md")


def test_the_summary_writes_the_readme_it_checks_against(scratch_summary):
    summary.main(["--write"])
    assert (scratch_summary / "README.md").read_text() == (ROOT / "README.md").read_text()
    assert sorted(p.name for p in scratch_summary.iterdir()) == ["README.md", "results"]


def test_a_folder_given_as_a_results_file_is_named_a_folder_with_no_restore(scratch_summary,
                                                                            capsys):
    from experiments import gpu_schedule
    with pytest.raises(SystemExit):
        gpu_schedule.main(["--timings", str(scratch_summary / "results"), "--out-dir",
                           str(scratch_summary / "out")])
    line = says(capsys.readouterr().err.strip(), "results", "a folder", "the file itself")
    assert "git checkout" not in line


def test_the_tables_with_stdout_closed_are_one_line_not_lost(tmp_path):
    done = subprocess.run([sys.executable, "-m", "experiments.summary"], cwd=ROOT,
                          capture_output=True, text=True, preexec_fn=lambda: os.close(1))
    assert done.returncode == 1
    says(done.stderr.strip(), "stdout", "--write")


def test_the_tables_into_a_full_device_say_what_is_full():
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, "-m", "experiments.summary"], cwd=ROOT,
                              stdout=full, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    says(done.stderr.strip(), "no space left", "stdout", "write elsewhere")


@pytest.mark.parametrize("n_average, alpha", [(5, 0.6), (1, 0.6), (5, 0.0), (1, 0.0)])
def test_the_row_the_summary_quotes_is_the_decoding_the_scoring_chose(n_average, alpha):
    """results_files.chosen_decoding finds by name the row that experiments.scoring names
    after its chosen decoding, with or without an average, whatever the alpha."""
    from pathlib import Path
    from experiments.results_files import chosen_decoding
    from experiments.scoring import scored_decodings
    rows = scored_decodings(Path("average.pt"), n_average, Path("ckpt_0004408.pt"),
                            {"beam_size": 4, "alpha": alpha})
    assert chosen_decoding(list(reversed(rows))) == next(iter(rows))
