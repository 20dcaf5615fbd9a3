"""The results scripts end to end, on tiny budgets: what they write and what chapter 08 reads."""
import json
import shutil
import sys

import pytest
from conftest import says

from annotated import configs
from annotated.configs import apply_overrides, get
from annotated.store.checkpoint_file import checkpoints, load
from annotated.training.flops import training_flops
from experiments import (multi30k, multi30k_budget, multi30k_metric, multi30k_paired,
                         multi30k_sweep, paper_tables, pretrained, report, scoring, table3_small)
from experiments.folders import ROOT

RESULTS = ROOT / "results"                     # the committed results files


def run(module, *args):
    """The script's command line with these arguments (paths and numbers as text)."""
    module.main([str(a) for a in args])


def one_error_line(capsys) -> str:
    """What a command printed on stderr, checked to be one `error: ...` line."""
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_paper_tables_from_saved_timings(tmp_path):
    shutil.copy(RESULTS / "table1_timings.json", tmp_path)
    run(paper_tables, "--reuse-timings", "--out-dir", tmp_path)
    text = (tmp_path / "paper_tables.md").read_text()
    table2 = json.loads((tmp_path / "paper_tables.json").read_text())["table2"]
    assert text.splitlines()[2].startswith(
        "Written by `python -m experiments.paper_tables --reuse-timings --out-dir")
    base = configs.get("base")
    per_step = base.max_tokens / paper_tables.AVG_SENTENCE * training_flops(
        base, paper_tables.AVG_SENTENCE, paper_tables.AVG_SENTENCE, 37_000)
    assert table2["base"]["per_step"] == pytest.approx(per_step)
    assert table2["base"]["total"] == pytest.approx(per_step * base.train_steps)
    assert table2["base"]["paper_flops"] == pytest.approx(12 * 3600 * 8 * 9.5e12)   # 3.3e18
    assert table2["big"]["paper_flops"] == pytest.approx(3.5 * 24 * 3600 * 8 * 9.5e12)  # 2.3e19
    for name, cost in table2.items():         # the markdown shows the JSON's numbers
        assert f"| {name} | {cost['paper_flops']:.2e} | {cost['per_step']:.2e} |" in text
    published = json.loads((tmp_path / "paper_tables.json").read_text())["table2_published"]
    assert published[-1] == dict(model="Transformer (big)", en_de_bleu=28.4, en_fr_bleu=41.8,
                                 en_de_flops=2.3e19, en_fr_flops=None)   # as the paper prints it
    assert "utilisation" not in text            # no assumed MFU: the GPU time is measured
    assert "best of 5 runs, 2 threads of an x86_64 CPU)" in text        # where, not "this machine"


def test_paper_tables_reuse_without_timings_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        run(paper_tables, "--reuse-timings", "--out-dir", tmp_path)
    assert stopped.value.code == 1
    err = one_error_line(capsys)
    says(err, str(tmp_path / "table1_timings.json"), "--reuse-timings")


@pytest.mark.parametrize("edit,names", [
    (lambda rows: [r for r in rows if not (r["d"] == 1024 and r["n"] == 2048)],
     ["no row for n=2048, d=1024"]),
    (lambda rows: rows + rows[:1], ["n=16, d=128 twice", "rows[0]"])], ids=["ragged", "twice"])
def test_paper_tables_refuse_reused_timings_that_are_not_a_grid(edit, names, tmp_path, capsys):
    """A crossover "> 2048" claims every length up to 2048 was timed at that width."""
    timings = json.loads((RESULTS / "table1_timings.json").read_text())
    timings["rows"] = edit(timings["rows"])
    (tmp_path / "table1_timings.json").write_text(json.dumps(timings))
    with pytest.raises(SystemExit):
        run(paper_tables, "--reuse-timings", "--out-dir", tmp_path)
    says(one_error_line(capsys), str(tmp_path / "table1_timings.json"), *names,
         "without --reuse-timings")
    assert [p.name for p in tmp_path.iterdir()] == ["table1_timings.json"]


# Tiny models on the shipped Multi30k sample: the scripts' whole path in seconds, offline.
TINY = ["dataset=multi30k_sample", "vocab_size=500", "N=1", "d_model=32", "d_ff=64", "h=2",
        "d_k=16", "d_v=16", "max_tokens=500"]


def test_multi30k_script_trains_scores_rescores_and_ships(tmp_path):
    run_dir, out = tmp_path / "run", tmp_path / "out"
    out.mkdir()
    common = ["--out-dir", out, "--run-dir", run_dir, "--limit", 3]
    run(multi30k, "--max-minutes", 0.02, *common, *TINY, "ckpt_every=20")   # a few steps
    first = json.loads((out / "multi30k.json").read_text())
    assert first["train"]["command"].startswith("python -m annotated.train --config multi30k")
    assert len(first["test2016"]) == 4 and first["reference_mean_words"] > 0
    assert first["config"]["N"] == 1 and first["config"]["dataset"] == "multi30k_sample"
    assert all(s["signature"].startswith("nrefs:1|case:mixed") for s in first["test2016"].values())
    assert set(first["valid"]) == {"averaged", "last"}
    assert all(s["lowercase_ref_tokens"] > 0 for s in first["test2016"].values())
    assert "reference tokens |" not in (out / "multi30k.md").read_text()  # not test2016: alone
    on_multi30k = {**first, "config": {**first["config"], "dataset": "multi30k"}}
    assert "reference tokens |" in multi30k.render_markdown(on_multi30k, "cmd", 3)  # 41.02's 12,103
    assert (out / "multi30k_attention.npz").is_file() and (run_dir / "average.pt").is_file()

    run(multi30k, "--skip-train", *common)             # scored again, not retrained
    again = json.loads((out / "multi30k.json").read_text())
    assert again["train"] == first["train"]                          # from the run's train.json
    assert again["metrics"] == first["metrics"]
    assert [s["bleu"] for s in again["test2016"].values()] == \
        [s["bleu"] for s in first["test2016"].values()]
    assert (out / "multi30k.md").read_text().splitlines()[2].startswith(
        "Written by `python -m experiments.multi30k --skip-train")

    shipped = tmp_path / "shipped"                     # the trained model, halved to ship
    shipped.mkdir()
    run(pretrained, run_dir / "average.pt", "--limit", 10, "--out-dir", shipped)
    record = json.loads((shipped / "multi30k_en_de.json").read_text())
    assert record["sentences"] == 10 and 0 <= record["identical"] <= 10
    assert record["averaged_from"] and len(record["examples"]) == pretrained.EXAMPLES
    assert (shipped / "multi30k_en_de.pt").stat().st_size == record["bytes"]
    assert "translates" in (shipped / "README.md").read_text()

    run(multi30k, "--skip-train", "--average", 1, *common)    # the last checkpoint, unaveraged
    last = json.loads((out / "multi30k.json").read_text())
    assert len(last["test2016"]) == 3 and set(last["valid"]) == {"last"}
    assert all("averaged" not in name for name in last["test2016"])


@pytest.mark.parametrize("make", ["nothing", "empty folder"])
def test_multi30k_skip_train_without_a_trained_run_is_a_clear_error(tmp_path, capsys, make):
    run_dir = tmp_path / "run"
    if make == "empty folder":
        run_dir.mkdir()
    with pytest.raises(SystemExit) as stopped:
        run(multi30k, "--skip-train", "--run-dir", run_dir, "--out-dir", tmp_path / "out")
    assert stopped.value.code == 1
    err = one_error_line(capsys)
    says(err, str(run_dir), "--run-dir")


def test_table3_small_trains_rows_reuses_runs_and_keeps_recorded_rows(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    args = ["--steps", 2, "--seeds", 2, "--limit", 3, "--runs-dir", tmp_path / "runs",
            "--out-dir", out, *TINY]
    run(table3_small, "--rows", "base", "A1", "E", *args)
    first = json.loads((out / "table3_small.json").read_text())
    assert list(first) == ["base", "base, seed 1235", "A: h=1", "E: learned positions"]
    assert [r["seed"] for r in first.values()] == [1234, 1235, 1234, 1234]
    assert " dataset=multi30k_sample " in first["A: h=1"]["command"]
    assert first["A: h=1"]["command"].endswith(" h=1 d_k=128 d_v=128")   # the row's change last
    assert all(r["ppl"] > 1 and r["signature"].startswith("nrefs:1|case:mixed")
               and r["lowercase_signature"].startswith("nrefs:1|case:lc")
               and r["lowercase_bleu"] >= r["bleu"] for r in first.values())   # -lc only merges
    assert {r["source"] for r in first.values()} == {"trained"}
    md = (out / "table3_small.md").read_text()
    assert "The base row with 2 seeds" in md and "Not yet trained: A2, A3, A4, B1, B2, C1" in md
    title = md.splitlines()[0]                          # the corpus trained on, not Multi30k
    assert "dataset=multi30k_sample" in title and "Multi30k" not in title
    says(capsys.readouterr().out.splitlines()[-1], "wrote", str(out / "table3_small.md"),
         str(out / "table3_small.json"))                               # every file it wrote
    assert "dataset=multi30k_sample val" in md and "the first 3 of the 300 sentences" in md

    checkpoints = sorted((tmp_path / "runs").glob("*/ckpt_0000002.pt"))
    assert len(checkpoints) == 4
    written = [p.stat().st_mtime_ns for p in checkpoints]
    run(table3_small, "--reuse", "--rows", "base", "A1", "E", *args)      # taken as recorded
    assert {r["source"] for r in json.loads((out / "table3_small.json").read_text()).values()} \
        == {"recorded"}
    older = {k: {f: v for f, v in r.items() if not f.startswith("lowercase_")}
             if k == "A: h=1" else r for k, r in first.items()}    # as scored before -lc was
    (out / "table3_small.json").write_text(json.dumps(older))
    run(table3_small, "--rows", *args)                  # the table again; the json is not touched
    assert (out / "table3_small.json").read_text() == json.dumps(older)
    assert "Lowercased BLEU was not recorded for 1 of the 4 runs" in \
        (out / "table3_small.md").read_text()
    run(table3_small, "--reuse", "--rows", "A1", *args)       # that row is scored again
    kept = json.loads((out / "table3_small.json").read_text())
    sources = {k: r["source"] for k, r in kept.items()}
    assert sources == {"base": "recorded", "base, seed 1235": "recorded", "A: h=1": "reused",
                       "E: learned positions": "recorded"}     # the others, as kept from the json
    assert [p.stat().st_mtime_ns for p in checkpoints] == written
    (out / "table3_small.json").unlink()
    run(table3_small, "--reuse", "--rows", "base", "A1", "E", *args)      # scored, not retrained
    assert [p.stat().st_mtime_ns for p in checkpoints] == written
    again = json.loads((out / "table3_small.json").read_text())
    assert {r["source"] for r in again.values()} == {"reused"}
    assert {k: (r["ppl"], r["bleu"], r["lowercase_bleu"]) for k, r in again.items()} == \
        {k: (r["ppl"], r["bleu"], r["lowercase_bleu"]) for k, r in first.items()}

    run(table3_small, "--reuse", "--rows", "D3", *args)          # one more row; the rest kept
    last = json.loads((out / "table3_small.json").read_text())
    assert list(last) == ["base", "base, seed 1235", "A: h=1", "D: eps_ls=0",
                          "E: learned positions"]
    assert last["D: eps_ls=0"]["source"] == "trained"
    assert last["base"] == {**again["base"], "source": "recorded"}
    capsys.readouterr()
    run(table3_small, "--reuse", "--rows", "A1", *args, "eps_ls=0.2")   # other settings: retrained
    out_lines = capsys.readouterr().out.splitlines()
    note = next(line for line in out_lines if "held" in line)
    says(note, "runs/A1", "earlier run", "ckpt_0000002.pt", "replaced by a fresh run")
    mixed = next(line for line in out_lines if "trained otherwise" in line)
    says(mixed, "3 row(s)", "eps_ls=0.2", "base, seed 1235", "E: learned positions",
         "another --out-dir")
    assert "Trained otherwise than the base row: A: h=1." in (out / "table3_small.md").read_text()


def test_table3_small_names_only_the_rows_trained_otherwise():
    """The committed rows all trained alike, their own change aside, though many change a key
    the base row's command also gives; one row given other steps is named alone."""
    results = json.loads((ROOT / "results" / "table3_small.json").read_text())
    assert table3_small.trained_otherwise(results) == []
    results["A: h=1"]["command"] = results["A: h=1"]["command"].replace(
        f"--max-steps {table3_small.steps_of(results['A: h=1'])}", "--max-steps 7")
    assert table3_small.trained_otherwise(results) == ["A: h=1"]


def test_table3_small_without_its_base_row_says_so_and_claims_no_row_trained_otherwise(tmp_path):
    """The base row deleted from the json, its further seeds kept: the table names the base row
    as not yet trained, and sets no row apart, since there is no base row to set it beside."""
    results = json.loads((ROOT / "results" / "table3_small.json").read_text())
    del results["base"]
    (tmp_path / "table3_small.json").write_text(json.dumps(results))
    run(table3_small, "--rows", "--out-dir", tmp_path, *TINY)
    md = (tmp_path / "table3_small.md").read_text()
    assert "Not yet trained: base " in md and "Trained otherwise" not in md


def test_table3_small_says_why_row_c2_is_left_out(capsys):
    with pytest.raises(SystemExit) as exit_:
        table3_small.main(["--rows", "C2"])
    assert exit_.value.code == 2
    says(capsys.readouterr().err.strip().splitlines()[-1], "C2 is left out", "N=4",
         "no whole number", "base A1")


def test_table3_small_with_no_rows_and_no_table_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        run(table3_small, "--rows", "--out-dir", tmp_path, *TINY)
    assert stopped.value.code == 1
    err = one_error_line(capsys)
    says(err, "table3_small.json", "does not exist", "--rows ROW")


def test_table3_small_notes_a_setting_a_chosen_row_changes_itself(capsys):
    """h=3 with row A1 (h=1): the row's change wins, and a note says so, naming both."""
    chosen = [job for job in table3_small.jobs(1234, 1) if job[1] in ("base", "A1")]
    table3_small.note_clashes(["h=3", "N=2"], chosen)
    out = capsys.readouterr().out.strip()
    assert len(out.splitlines()) == 1
    says(out, "'A: h=1'", "changes h itself", "h=1 d_k=128", "does not take h=3")


def test_table3_small_has_every_paper_row_scaled_to_a_valid_config():
    small = get("multi30k").override(**table3_small.SMALL)
    assert set(table3_small.PAPER_ROWS) == set(configs.TABLE3_ROWS) - {"C2", "big"}
    for name, (row, changes) in table3_small.ROWS.items():
        config = apply_overrides(get("multi30k"), table3_small.row_overrides([], changes))
        paper = configs.PRESETS[row]
        for key in changes:          # the small row moves the way the paper's row moves
            if key in ("h", "d_k", "d_v", "N", "d_model", "d_ff"):
                assert (getattr(config, key) > getattr(small, key)) == \
                    (getattr(paper, key) > getattr(configs.base, key)), (name, key)
        assert configs.PAPER[row].ppl and configs.PAPER[row].bleu, row


def test_another_preset_or_language_pair_writes_its_own_results_files():
    config = dict(source_lang="en", target_lang="fr")
    assert report.file_stem("multi30k", config) == "multi30k_en_fr"
    assert report.pair_name(config) == "English->French"
    en_de = dict(source_lang="en", target_lang="de")
    assert report.file_stem("multi30k", en_de) == "multi30k"
    assert report.file_stem("multi30k_tiny", en_de) == "multi30k_tiny"
    assert report.file_stem("multi30k_tiny", dict(en_de, lowercase=True)) == \
        "multi30k_tiny_lowercase"


def test_a_lowercased_run_writes_its_own_files_and_says_what_its_cased_score_means(tmp_path):
    out = tmp_path / "out"
    run(multi30k, "--max-minutes", 0.02, "--out-dir", out, "--run-dir", tmp_path / "run",
        "--limit", 3, *TINY, "lowercase=true")
    assert not (out / "multi30k.json").exists()           # the cased model's record stays
    result = json.loads((out / "multi30k_lowercase.json").read_text())
    assert result["config"]["lowercase"] is True
    assert all(e["translation"] == e["translation"].lower() for e in result["examples"])
    assert result["examples"][0]["reference"].startswith("Ein Mann")     # scored as written
    md = (out / "multi30k_lowercase.md").read_text()
    assert "Trained on lowercased text (`lowercase=true`" in md
    as_multi30k = {**result, "config": {**result["config"], "dataset": "multi30k"}}
    assert "(multi30k, trained on lowercased text)" in multi30k.render_markdown(as_multi30k, "c", 3)


def test_paired_comparison_on_val_and_test_and_only_on_the_same_sentences(tmp_path, capsys):
    en_de, en_fr, out = tmp_path / "en_de", tmp_path / "en_fr", tmp_path / "out"
    for run_dir, pair in ((en_de, []), (en_fr, ["target_lang=fr"])):
        run(multi30k, "--max-minutes", 0.02, "--run-dir", run_dir, "--out-dir", tmp_path / "x",
            "--limit", 3, *TINY, *pair)
    model = checkpoints(en_de)[-1]
    run(multi30k_paired, "--system", "beam", model, 4, 0.6, "--system", "greedy-ish", model, 1,
        0, "--limit", 40, "--out-dir", out)
    result = json.loads((out / "multi30k_paired.json").read_text())
    assert [s["name"] for s in result["systems"]] == ["beam", "greedy-ish"]
    for split in ("val", "test2016"):
        assert set(result[split]) == {"lowercased BLEU", "sacreBLEU (cased)"}
        for r in result[split].values():
            assert r["sentences"] == 40 and r["samples"] == 1000 and 0 <= r["p"] <= 1
            assert r["difference"] == pytest.approx(r["bleu"] - r["baseline_bleu"], abs=0.011)
    md = (out / "multi30k_paired.md").read_text()
    assert "## test2016 (40 sentences)" in md and "Wu et al., 2021" in md   # beside 41.02

    capsys.readouterr()
    with pytest.raises(SystemExit):              # one system twice: refused before decoding
        run(multi30k_paired, "--system", "a", model, 4, 0.6, "--system", "b", model, 4, 0.6,
            "--limit", 10, "--out-dir", out)
    says(one_error_line(capsys), "--system a", "--system b", "same checkpoint", "same beam")
    shutil.copy(model, tmp_path / "copy.pt")     # a copy of it: a tie, and a note that says so
    run(multi30k_paired, "--system", "a", model, 4, 0.6, "--system", "b", tmp_path / "copy.pt",
        4, 0.6, "--limit", 10, "--out-dir", out)
    tie = json.loads((out / "multi30k_paired.json").read_text())["val"]["lowercased BLEU"]
    assert tie["difference"] == 0 and tie["p"] == 1.0
    says(capsys.readouterr().err.splitlines()[0], "val", "the two systems write the same")

    with pytest.raises(SystemExit) as stopped:                  # other sentences: nothing paired
        run(multi30k_paired, "--system", "de", model, 4, 0.6, "--system", "fr",
            checkpoints(en_fr)[-1], 4, 0.6, "--out-dir", out)
    assert stopped.value.code == 1
    says(one_error_line(capsys), "the same sentences")


def test_moses_preparation_writes_text_as_the_multi30k_tok_files_do():
    line = 'Ein Jugendlicher im T-Shirt mit dem Aufdruck "Asian Pacific 2007" und Kids\' Food.'
    assert multi30k_metric.moses_prepare([line], "de") == [
        "ein jugendlicher im t-shirt mit dem aufdruck &quot; asian pacific 2007 &quot; und "
        "kids &apos; food ."]
    same, _ = multi30k_metric.moses_bleu([line, "Zwei Hunde."], [line, "Zwei Hunde."], "de")
    assert same.score == pytest.approx(100)
    # No 4-gram in common: 0, as multi-bleu.perl gives; a smoothed BLEU would stay above 0.
    none, _ = multi30k_metric.moses_bleu(["Zwei Hunde laufen heute weg."],
                                         ["Zwei Hunde rennen heute weg."], "de")
    assert none.score == 0


def test_metric_check_scores_one_model_s_test_translations_both_ways(tmp_path):
    run(multi30k, "--max-minutes", 0.02, "--run-dir", tmp_path / "run", "--out-dir",
        tmp_path / "x", "--limit", 3, *TINY)
    model, out = checkpoints(tmp_path / "run")[-1], tmp_path / "out"
    run(multi30k_metric, "--checkpoint", model, "--limit", 20, "--out-dir", out)
    result = json.loads((out / "multi30k_metric.json").read_text())
    assert result["pair"] == "en-de" and result["sentences"] == 20
    assert "|case:lc|" in result["ours"]["lowercase_signature"]
    moses_signature = result["moses"]["signature"]
    assert "|case:lc|" in moses_signature and "|tok:none|" in moses_signature
    assert result["moses"]["ref_tokens"] > 20 and "hypotheses" not in result["ours"]
    md = (out / "multi30k_metric.md").read_text()
    gap = result["moses"]["lowercase_bleu"] - result["ours"]["lowercase_bleu"]
    assert f"Difference: {gap:+.2f} BLEU." in md


def test_sweep_trains_candidates_side_by_side_and_chooses_on_val_never_over_the_budget(
        tmp_path, monkeypatch):
    monkeypatch.setattr(multi30k_sweep, "AVERAGES", (1, 2))             # a smaller grid
    monkeypatch.setattr(multi30k_sweep, "DECODINGS", ((4, 0.6), (5, 1.0)))
    # the kinds of candidate (one process, two side by side; two processes; lowercased) and
    # the runs that build on them, not all twelve
    kept = ("tiny", "tiny_p03", "tiny_2proc_p02_v6k", "tiny_2proc_p02_v6k_lc")
    monkeypatch.setattr(multi30k_sweep, "CANDIDATES",
                        {name: multi30k_sweep.CANDIDATES[name] for name in kept})
    out = tmp_path / "out"
    run(multi30k_sweep, "--train", "--max-minutes", 0.02, "--runs-dir", tmp_path / "runs",
        "--limit", 4, "--out-dir", out, *TINY, "ckpt_every=1")
    result = json.loads((out / "multi30k_sweep.json").read_text())
    assert set(result["candidates"]) == set(multi30k_sweep.CANDIDATES)
    for c in result["candidates"].values():
        averages = {r["average"] for r in c["rows"]}
        assert 1 in averages and averages <= set(multi30k_sweep.AVERAGES)
        assert len(c["rows"]) == len(averages) * len(multi30k_sweep.DECODINGS)
    rows = [r for c in result["candidates"].values() for r in c["rows"]]
    best = result["best"]
    assert best["lowercase_bleu"] == max(r["lowercase_bleu"] for r in rows)
    assert best["test_command"].startswith("python -m experiments.multi30k --skip-train --config ")
    assert f"--beam-size {best['beam']} --alpha {best['alpha']}" in best["test_command"]
    assert best["candidate"] in multi30k_sweep.CANDIDATES       # a second hour is never chosen
    assert best["results_file"] == ("multi30k_tiny_lowercase.md" if "lowercase=true" in
                                     multi30k_sweep.CANDIDATES[best["candidate"]][1]
                                     else f"{best['preset']}.md")
    assert "Best on val: **" in (out / "multi30k_sweep.md").read_text()
    for name, source in multi30k_sweep.SECOND_HOUR.items():      # the candidate's run, continued
        longer, hour = result["second_hour"][name], result["candidates"][source]
        assert longer["steps"] > hour["steps"]
        assert len(longer["rows"]) == len(hour["rows"])
    assert "## Over the budget: a second hour" in (out / "multi30k_sweep.md").read_text()
    for name, (source, seed) in multi30k_sweep.OTHER_SEED.items():    # trained afresh, seed only
        other, candidate = result["other_seed"][name], result["candidates"][source]
        assert other["overrides"] == candidate["overrides"] + [f"seed={seed}"]
        assert len(other["rows"]) == len(candidate["rows"])
        seeds = [load(checkpoints(tmp_path / "runs" / run)[-1])["config"]["seed"]
                 for run in (name, source)]
        assert seeds == [seed, get("multi30k_tiny").seed] and seed != seeds[1]
    assert "## Noise: a candidate with another seed" in (out / "multi30k_sweep.md").read_text()
    run(multi30k_sweep, "--runs-dir", tmp_path / "runs", "--limit", 4, "--out-dir", out, *TINY,
        "ckpt_every=1")                                    # scored again: the scores are kept
    assert json.loads((out / "multi30k_sweep.json").read_text()) == result
    shutil.rmtree(tmp_path / "runs" / "tiny")             # a run folder is gone: its scores
    run(multi30k_sweep, "--runs-dir", tmp_path / "runs", "--limit", 4, "--out-dir", out, *TINY,
        "ckpt_every=1")                                    # stand as the sweep recorded them
    assert json.loads((out / "multi30k_sweep.json").read_text()) == result
    widened_grid_scores_only_the_new_decodings(multi30k_sweep, monkeypatch, tmp_path, result)


def widened_grid_scores_only_the_new_decodings(sweep, monkeypatch, tmp_path, before):
    """The sweep of the test above with one more (beam, alpha): every run still there decodes
    just that one per averaging; the run whose folder is gone keeps its rows and is named."""
    monkeypatch.setattr(sweep, "DECODINGS", (*sweep.DECODINGS, (4, 1.4)))
    calls, real_score = [], scoring.score
    monkeypatch.setattr(scoring, "score", lambda *a, **k: calls.append(k) or real_score(*a, **k))
    out = tmp_path / "out"
    run(sweep, "--runs-dir", tmp_path / "runs", "--limit", 4, "--out-dir", out, *TINY,
        "ckpt_every=1")
    after = json.loads((out / "multi30k_sweep.json").read_text())
    new_rows = 0
    for group in sweep.GROUPS:
        for name, entry in before[group].items():
            rows = after[group][name]["rows"]
            if name == "tiny":                             # gone: as recorded
                assert rows == entry["rows"]
                continue
            assert [r for r in rows if r["alpha"] != 1.4] == entry["rows"]
            assert {(r["beam"], r["alpha"]) for r in rows if r["alpha"] == 1.4} == {(4, 1.4)}
            new_rows += len(rows) - len(entry["rows"])
    assert len(calls) == new_rows > 0 and all(k["alpha"] == 1.4 for k in calls)
    assert "narrower grid of beam sizes and alphas (their run folders were gone when the grid " \
        "grew): tiny." in (out / "multi30k_sweep.md").read_text().replace("\n", " ")


def test_more_than_one_process_trains_under_torchrun_with_this_python():
    from experiments.commands import resume_command, train_command, with_this_python
    cmd = train_command("multi30k_tiny", ROOT / "runs" / "x", max_minutes=60, nproc=2)
    assert cmd[:5] == ["torchrun", "--standalone", "--nproc_per_node=2", "-m", "annotated.train"]
    again = resume_command(ROOT / "runs" / "x", max_minutes=60, nproc=2)
    assert again[:5] == cmd[:5] and again[5:] == ["--run-dir", "runs/x", "--resume",
                                                  "--max-minutes", "60"]
    assert with_this_python(cmd)[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert with_this_python(train_command("multi30k_tiny", ROOT / "runs" / "x"))[:3] == \
        [sys.executable, "-m", "annotated.train"]


def test_recorded_commands_write_the_data_location_as_the_readme_placeholder():
    from experiments.commands import invocation, recorded
    assert (recorded("python -m annotated.train --config multi30k --data-dir ../shared/data N=2"
                     .split()) == "python -m annotated.train --config multi30k --data-dir DIR N=2")
    assert (recorded(["torchrun", "--nproc_per_node=2", "-m", "annotated.train",
                      "--data-dir=/srv/corpora"])
            == "torchrun --nproc_per_node=2 -m annotated.train --data-dir=DIR")
    assert (invocation("experiments.multi30k", ["--data-dir", "/home/me/data", "--out-dir", "results"])
            == "python -m experiments.multi30k --data-dir DIR --out-dir results")


def test_committed_results_name_no_data_location_outside_the_repository():
    import re
    files = [*RESULTS.glob("*.md"), *RESULTS.glob("*.json"),
             ROOT / "annotated" / "pretrained" / "README.md"]
    for path in files:
        for found in re.finditer(r"--data-dir[ =]([^\s`\"]+)", path.read_text()):
            assert not found.group(1).startswith(("..", "/", "~")), f"{path.name}: {found.group(0)}"


def test_every_committed_multi30k_bleu_comes_with_lowercased_bleu():
    """Each BLEU a Multi30k results file records has the literature's lowercased BLEU beside it."""
    def records(node):
        if isinstance(node, dict):
            if "bleu" in node:
                yield node
            for value in node.values():
                yield from records(value)
        elif isinstance(node, list):
            for value in node:
                yield from records(value)

    paired = json.loads((RESULTS / "multi30k_paired.json").read_text())
    assert all(set(paired[split]) == {"lowercased BLEU", "sacreBLEU (cased)"}
               for split in ("val", "test2016"))
    files = [p for p in [*RESULTS.glob("multi30k*.json"), RESULTS / "table3_small.json"]
             if p.name != "multi30k_paired.json"]
    for path in files:
        found = list(records(json.loads(path.read_text())))
        assert found, path.name
        for record in found:
            assert "lowercase_bleu" in record, f"{path.name}: a BLEU without lowercased BLEU"
            assert "|case:lc|" in record.get("lowercase_signature", "|case:lc|"), path.name


def test_budget_trains_both_pairs_chooses_on_german_val_and_scores_test_once(
        tmp_path, monkeypatch):
    """experiments.multi30k_budget, tiny, on the CPU: every candidate and its French twin
    trained; the winner is the best German val row; test2016 scored for the winner's two runs
    only, with the winner's averaging and decoding; decoding speed measured."""
    monkeypatch.setattr(multi30k_budget, "CANDIDATES", {"a": ["P_drop=0.3"], "b": ["P_drop=0.0"]})
    monkeypatch.setattr(multi30k_budget, "AVERAGES", (1, 2))
    monkeypatch.setattr(multi30k_budget, "DECODINGS", ((4, 0.6), (5, 1.0)))
    monkeypatch.setattr(multi30k_budget.torch.cuda, "is_available", lambda: False)
    out, runs = tmp_path / "out", tmp_path / "runs"
    run(multi30k_budget, "--train", "--device", "cpu", "--nproc", 1, "--runs-dir", runs,
        "--limit", 4, "--out-dir", out, *TINY, "train_steps=2", "ckpt_every=1",
        "warmup_steps=1")
    result = json.loads((out / "multi30k_budget.json").read_text())
    trained = result["training"]["runs"]
    assert sorted(trained) == ["a_en_de", "a_en_fr", "b_en_de", "b_en_fr"]
    assert all(trained[k]["steps"] == 2 for k in trained)
    assert "one after another on the CPU" in result["training"]["how"]
    assert result["machine"]["cores"] >= 1 and result["machine"]["cpu"]
    rows = {name: c["rows"] for name, c in result["candidates"].items()}
    assert set(rows) == {"a", "b"} and all(len(r) == 4 for r in rows.values())   # 2 x 2 grid
    best = result["best"]
    assert best["lowercase_bleu"] == max(r["lowercase_bleu"] for rs in rows.values() for r in rs)
    for target in ("de", "fr"):
        scored = result["test2016"][target]
        assert scored["config"]["target_lang"] == target
        assert scored["config"]["P_drop"] == (0.3 if best["candidate"] == "a" else 0.0)
        first = next(iter(scored["test2016"]))
        assert first.startswith(f"beam {best['beam']}, alpha {best['alpha']}")
    assert len(result["decode_speed"]) == 2 and all(v > 0 for v in result["decode_speed"].values())
    report = (out / "multi30k_budget.md").read_text()
    assert "Best on val: **" in report
    every_run = next(line for line in report.splitlines() if line.startswith("Every run:"))
    settings = every_run.split("`")[3].split()          # Every run: `PRESET` with `...`
    assert {"train_steps=2", "warmup_steps=1", "vocab_size=500"} <= set(settings)   # the user's
    assert not {"train_steps=8000", "warmup_steps=2000"} & set(settings)


def test_budget_on_the_cpu_stops_at_max_minutes_and_goes_on_where_it_stopped(
        tmp_path, monkeypatch, capsys):
    """--max-minutes stops training and writes no results; the same command again resumes
    the run begun (--resume), starts the rest, and ends with every run at train_steps,
    the resumed one exactly as a run trained in one go; --only trains one candidate of two."""
    monkeypatch.setattr(multi30k_budget, "CANDIDATES", {"a": ["P_drop=0.1"], "b": []})
    monkeypatch.setattr(multi30k_budget, "AVERAGES", (1,))
    monkeypatch.setattr(multi30k_budget, "DECODINGS", ((4, 0.6),))
    monkeypatch.setattr(multi30k_budget.torch.cuda, "is_available", lambda: False)
    out, runs = tmp_path / "out", tmp_path / "runs"
    tiny = [*TINY, "train_steps=6", "ckpt_every=1", "warmup_steps=1"]
    args = ["--train", "--device", "cpu", "--only", "a", "--nproc", 1, "--runs-dir", runs,
            "--limit", 4, "--out-dir", out, *tiny]
    run(multi30k_budget, *args, "--max-minutes", 1e-9)      # stops after the first step
    said = next(line for line in capsys.readouterr().out.splitlines() if "stopped" in line)
    says(said, "--max-minutes", "a_en_de at step", "same command")
    assert not out.exists()
    assert not (runs / "a_en_fr").exists()                # no time was left to start it
    assert [c.name for c in checkpoints(runs / "a_en_de")] == ["ckpt_0000001.pt"]
    run(multi30k_budget, *args)
    assert "--resume" in capsys.readouterr().out
    trained = json.loads((out / "multi30k_budget.json").read_text())["training"]["runs"]
    assert sorted(trained) == ["a_en_de", "a_en_fr"] and not (runs / "b_en_de").exists()
    assert trained["a_en_de"]["steps"] == trained["a_en_fr"]["steps"] == 6
    assert "(--only); not trained here: b." in (out / "multi30k_budget.md").read_text()
    run(multi30k_budget, "--train", "--device", "cpu", "--only", "a", "--nproc", 1,
        "--runs-dir", tmp_path / "again", "--limit", 4, "--out-dir", tmp_path / "out2", *tiny)
    for target in ("de", "fr"):
        resumed = load(runs / f"a_en_{target}" / "ckpt_0000006.pt")["model"]
        whole = load(tmp_path / "again" / f"a_en_{target}" / "ckpt_0000006.pt")["model"]
        assert all(resumed[name].equal(tensor) for name, tensor in whole.items()), target


def test_only_the_papers_beam_alpha_and_average_are_called_its_setting():
    """§6.1 decodes the average of the last 5 (base) or 20 (big) checkpoints with beam 4 and
    alpha 0.6: another average is only the paper's beam and alpha."""
    chosen_label = scoring.chosen_label
    beam, last = {"beam_size": 4, "alpha": 0.6}, ROOT / "ckpt_0000900.pt"
    assert chosen_label(beam, 5, last).endswith("average of 5 (the paper's setting)")
    assert chosen_label(beam, 10, last).endswith("average of 10 (the paper's beam and alpha)")
    assert chosen_label(beam, 1, last).endswith("(ckpt_0000900.pt) (the paper's beam and alpha)")
    assert "paper" not in chosen_label({"beam_size": 4, "alpha": 1.0}, 5, last)
