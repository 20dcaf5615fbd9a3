"""The translate and evaluate commands: order, empty lines, batching, averaged checkpoints,
clear errors for bad checkpoints, and BLEU on hand-computable examples."""
import io
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import says

from annotated import checkpoint as checkpoint_command
from annotated import configs
from annotated.base.files import read_lines
from annotated.data.tokenizer import EOS, CopyTokenizer
from annotated.evaluate import main as evaluate_main
from annotated.inference.batched import translate_lines
from annotated.inference.bleu import (bleu_of, lowercase_bleu, paired_bootstrap, paper_bleu,
                                      paper_tokenize, sacre_bleu, sentence_stats, split_compounds)
from annotated.inference.search import beam_search, greedy_decode, source_batch
from annotated.model import EncoderDecoder
from annotated.store import checkpoint_file
from annotated.translate import main as translate_main

CONFIG = configs.get("copy")                      # vocabulary 11: symbols 4..10
LINES = ["4 5 6", "", "7 8 9 10 4 5 6 7", "9", "   ", "10 10 4 5", "6 7 8 9 10 4 5 6 7 8 9"]


def save_checkpoint(path, seed=0, step=1):
    """A random copy-task model whose outputs are not all empty: EOS's (tied) embedding row is
    zero, so EOS never stands out, and larger other rows make the choices clear-cut."""
    torch.manual_seed(seed)
    model = EncoderDecoder(CONFIG, 11)
    with torch.no_grad():
        model.src_embed.lut.weight.mul_(2.0)
        model.src_embed.lut.weight[EOS] = 0.0
    return checkpoint_file.save(path, model=model, config=CONFIG, tokenizer=CopyTokenizer(11),
                           step=step)


@pytest.fixture
def ckpt(tmp_path):
    return save_checkpoint(tmp_path / "ckpt_0000001.pt")


def run_translate(monkeypatch, capsys, argv, stdin=""):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    translate_main(argv)
    return capsys.readouterr()


def test_translate_keeps_order_and_empty_lines_and_equals_one_by_one(ckpt):
    model, _, tokenizer = checkpoint_file.load_model(ckpt)
    out = translate_lines(model, tokenizer, LINES, max_extra=5, batch_tokens=12)  # 4 batches
    assert [o == "" for o in out] == [not line.strip() for line in LINES]
    alone = [tokenizer.decode(beam_search(model, source_batch([tokenizer.encode(line)]),
                                          max_extra=5)[0].tokens)
             for line in LINES if line.strip()]
    assert [o for o, line in zip(out, LINES) if line.strip()] == alone


def test_translate_command_stdin_to_stdout_with_progress(ckpt, monkeypatch, capsys):
    model, _, tokenizer = checkpoint_file.load_model(ckpt)
    captured = run_translate(monkeypatch, capsys, ["--checkpoint", str(ckpt), "--greedy",
                                                   "--max-extra", "3", "--batch-tokens", "10"],
                             stdin="\n".join(LINES) + "\n")
    src = source_batch([tokenizer.encode(x) for x in LINES])
    expected = [tokenizer.decode(h.tokens) for h in greedy_decode(model, src, max_extra=3)]
    expected = [e if line.strip() else "" for e, line in zip(expected, LINES)]
    assert captured.out == "".join(e + "\n" for e in expected)
    assert "greedy search" in captured.err and "translated 5/5 sentences" in captured.err


def test_translate_command_files_beam_options_and_bleu(ckpt, tmp_path, monkeypatch, capsys):
    (tmp_path / "in.txt").write_text("\n".join(LINES) + "\n")
    (tmp_path / "ref.txt").write_text("\n".join(LINES) + "\n")
    captured = run_translate(monkeypatch, capsys, [
        "--checkpoint", str(ckpt), "--input", str(tmp_path / "in.txt"), "--out",
        str(tmp_path / "out.txt"), "--beam-size", "3", "--alpha", "0.3", "--max-extra", "2",
        "--ref", str(tmp_path / "ref.txt")])
    model, _, tokenizer = checkpoint_file.load_model(ckpt)
    expected = translate_lines(model, tokenizer, LINES, beam_size=3, alpha=0.3, max_extra=2)
    assert (tmp_path / "out.txt").read_text() == "".join(e + "\n" for e in expected)
    assert captured.out == ""
    says(next(line for line in captured.err.splitlines() if "beam" in line), "beam 3",
         "alpha 0.3", "input + 2")
    assert "sacreBLEU" in captured.err and "compound splitting" in captured.err


def test_a_translation_that_is_empty_is_noted_as_such_not_as_a_part(ckpt, monkeypatch):
    """The search may end at once, EOS alone scoring best (alpha 0.3, beam 21): the note says
    the translation is empty, and why, not that it holds only part of its line."""
    from annotated.inference import batched
    from annotated.inference.search import Hypothesis
    model, _, tokenizer = checkpoint_file.load_model(ckpt)
    monkeypatch.setattr(batched, "beam_search", lambda model, src, **settings: [
        Hypothesis(tokens=[EOS], log_prob=-0.1, score=-0.1) for _ in range(len(src))])
    said = []
    out = translate_lines(model, tokenizer, ["4 5 6 7"], alpha=0.3, log=said.append)
    assert out == [""]
    note = next(line for line in said if line.startswith("note"))
    says(note, "1 translation(s) are empty", "line 1", "end of sentence alone", "alpha 0.3")


def test_translations_that_are_all_empty_are_noted_before_their_scores(ckpt, tmp_path,
                                                                      monkeypatch, capsys):
    """A model trained too briefly writes only </s>: BLEU 0 alone would not say why."""
    import annotated.translate as translate_module
    monkeypatch.setattr(translate_module, "translate_lines",
                        lambda model, tokenizer, lines, **kw: ["" for _ in lines])
    (tmp_path / "in.txt").write_text("\n".join(LINES) + "\n")
    captured = run_translate(monkeypatch, capsys, [
        "--checkpoint", str(ckpt), "--input", str(tmp_path / "in.txt"), "--out",
        str(tmp_path / "out.txt"), "--ref", str(tmp_path / "in.txt")])
    note = next(line for line in captured.err.splitlines() if "every translation" in line)
    says(note, "empty", "</s>", "trained too briefly", "score nothing")


@pytest.mark.parametrize("refs,names", [
    ("fr", ["ref.fr", "reads as fr", "translates into de", "references in de"]),
    ("zh", ["ref.fr", "reads as zh", "translates into de"]),
    ("escaped", ["ref.fr", "HTML character references", "line 1", "&quot;", "unescape"])])
def test_references_in_another_language_or_escaped_are_noted_before_decoding(refs, names,
                                                                             capsys):
    """As annotated.evaluate notes them: a score against such references means nothing."""
    from annotated.translate import check_references
    sample = Path(__file__).parents[1] / "annotated" / "data" / "sample" / "multi30k"
    lines = list(read_lines(sample / "test_2016_flickr_sample.en.gz"))[:30]
    given = {"fr": list(read_lines(sample / "test_2016_flickr_sample.fr.gz"))[:30],
             "zh": ["一个男人在街上走路。"] * 30,
             "escaped": ["Ein &quot;Mann&quot; geht."] * 30}[refs]
    check_references(lines, given, "src.en", "ref.fr", configs.get("multi30k"))
    says(capsys.readouterr().err, *names)
    check_references(lines, list(read_lines(sample / "test_2016_flickr_sample.de.gz"))[:30],
                     "src.en", "ref.de", configs.get("multi30k"))
    assert capsys.readouterr().err == ""                  # references in the target language


def test_blank_input_is_named_and_the_model_not_blamed(ckpt, monkeypatch, capsys):
    """Lines that hold no text translate to empty lines: the note names the input, and says
    nothing of the model writing only </s>."""
    captured = run_translate(monkeypatch, capsys, ["--checkpoint", str(ckpt)], stdin="\n \n\n")
    assert captured.out == "\n\n\n"
    note = next(line for line in captured.err.splitlines() if "blank" in line)
    says(note, "stdin", "every line")
    assert "</s>" not in captured.err and "trained" not in captured.err


def test_settings_far_beyond_the_papers_are_noted_before_decoding(ckpt, monkeypatch, capsys):
    """A huge beam or maximum length makes a batch go quiet for long: said before it starts."""
    captured = run_translate(monkeypatch, capsys, ["--checkpoint", str(ckpt), "--beam-size",
                                                   "100", "--max-extra", "500"], stdin="4 5\n")
    lines = captured.err.splitlines()
    note = next(i for i, line in enumerate(lines) if "far longer" in line)
    says(lines[note], "beam 100", "--max-extra 500", "progress")
    assert note < next(i for i, line in enumerate(lines) if "translated 1/1" in line)
    captured = run_translate(monkeypatch, capsys, ["--checkpoint", str(ckpt)], stdin="4 5\n")
    assert "far longer" not in captured.err


def test_averaged_checkpoint_translates(tmp_path, monkeypatch, capsys):
    paths = [save_checkpoint(tmp_path / checkpoint_file.checkpoint_name(s), seed=s, step=s)
             for s in (1, 2)]
    checkpoint_command.main(["average", "--out", str(tmp_path / "avg.pt"), *map(str, paths)])
    capsys.readouterr()
    captured = run_translate(monkeypatch, capsys, ["--checkpoint", str(tmp_path / "avg.pt"),
                                                   "--max-extra", "3"],
                             stdin="4 5 6\n\n7 8\n")
    first, empty, last, end = captured.out.split("\n")
    assert first and not empty and last and not end


def _rewrite(path, **changes):
    payload = torch.load(path, weights_only=True)
    payload.update(changes)
    checkpoint_file.atomic_save(payload, path)


@pytest.mark.parametrize("damage,names", [
    ("missing", ("does not exist",)),
    ("garbage", ("corrupt",)),
    ("truncated", ("corrupt",)),
    ("version", ("format version 999", "newer", "git pull")),
    ("old version", ("format version 1", "that wrote it")),
    ("config", ("n_experts", "unknown")),
    ("missing weight", ("1 weight(s) missing", "W_1.weight", "changed after training")),
    ("extra weight", ("1 weight(s) the model has no place for", "extra.weight",
                      "another checkpoint")),
    ("tokenizer", ("tokenizer cannot be read", "7 bytes", "another checkpoint")),
])
def test_bad_checkpoints_give_a_clear_error(ckpt, tmp_path, monkeypatch, capsys, damage, names):
    target = tmp_path / "bad.pt"
    if damage == "garbage":
        target.write_bytes(b"not a checkpoint at all" * 10)
    elif damage == "truncated":
        target.write_bytes(ckpt.read_bytes()[:5000])
    elif damage != "missing":
        target.write_bytes(ckpt.read_bytes())
        saved = torch.load(ckpt, weights_only=True)
        weights = dict(saved["model"])
        ffn = next(k for k in weights if k.endswith("W_1.weight"))
        _rewrite(target, **{
            "version": dict(version=999), "old version": dict(version=1),
            "config": dict(config={**saved["config"], "n_experts": 8}),
            "missing weight": dict(model={k: v for k, v in weights.items() if k != ffn}),
            "extra weight": dict(model={**weights, "extra.weight": torch.zeros(2)}),
            "tokenizer": dict(tokenizer={**saved["tokenizer"], "bytes": b"garbage"})}[damage])
    with pytest.raises(SystemExit) as exit_:
        run_translate(monkeypatch, capsys, ["--checkpoint", str(target)], stdin="4 5\n")
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err and err.count("\n") == 1, err
    says(err.strip(), "bad.pt", *names)


@pytest.mark.slow
@pytest.mark.parametrize("given", ["stdin", "file"])
def test_a_line_the_model_cannot_read_is_named_with_its_input(ckpt, tmp_path, monkeypatch,
                                                              capsys, given):
    (tmp_path / "in.txt").write_text("4 5\nA dog runs.\n")
    argv = ["--checkpoint", str(ckpt)] + (["--input", str(tmp_path / "in.txt")]
                                          if given == "file" else [])
    with pytest.raises(SystemExit):
        run_translate(monkeypatch, capsys, argv, stdin="4 5\nA dog runs.\n")
    says(capsys.readouterr().err.strip(), "stdin, line 2" if given == "stdin" else
         "in.txt, line 2", "numbers separated by spaces", "'A'")


def test_translate_module_runs_as_a_command(ckpt):
    done = subprocess.run([sys.executable, "-m", "annotated.translate", "--checkpoint", str(ckpt),
                           "--greedy", "--max-extra", "3"], input="4 5 6\n\n9 10\n",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 3 and done.stdout.split("\n")[1] == ""


# --- evaluate -------------------------------------------------------------------------------

def test_identical_output_scores_100_both_ways():
    refs = ["Ein Mann fährt ein rot-weißes Fahrrad.", "Zwei Hunde spielen im Schnee!"]
    assert sacre_bleu(refs, refs)[0].score == pytest.approx(100.0)
    assert paper_bleu(refs, refs).score == pytest.approx(100.0)


def test_hand_computed_bleu():
    # precisions 5/6, 3/5, 2/4, 1/3 at equal length: BLEU = (1/12)^(1/4)
    score, signature = sacre_bleu(["the cat sat on the mat"], ["the cat sat on a mat"])
    assert score.score == pytest.approx(100 * (1 / 12) ** 0.25, abs=1e-9)
    assert "case:mixed" in signature and "tok:13a" in signature


def test_lowercased_bleu_forgives_case_and_says_so_in_its_signature():
    hyps, refs = ["The Cat sat on the mat"], ["the cat sat on a mat"]
    lower, signature = lowercase_bleu(hyps, refs)
    assert lower.score == pytest.approx(sacre_bleu([h.lower() for h in hyps], refs)[0].score)
    assert lower.score > sacre_bleu(hyps, refs)[0].score
    assert "case:lc" in signature and "tok:13a" in signature


def test_compound_splitting_as_in_get_ende_bleu():
    assert split_compounds("a-b-c x-y - z") == "a ##AT##-##AT## b-c x ##AT##-##AT## y - z"
    assert paper_tokenize("Das Mehrfamilien-Haus, 5-fach.") == \
        "Das Mehrfamilien ##AT##-##AT## Haus , 5 - fach ."
    # 4 tokens, all 1..4-grams matched, reference 5 tokens: BLEU = exp(1 - 5/4)
    score = paper_bleu(["ein Mehrfamilien-Haus"], ["ein Mehrfamilien-Haus steht"])
    assert score.score == pytest.approx(100 * math.exp(-0.25), abs=1e-9)


def captions(n, seed):
    """n made-up reference sentences, and two systems' outputs: one drops a word in ten, the
    other one in three."""
    rng = np.random.default_rng(seed)
    words = ("Ein Mann eine Frau Hund läuft geht auf der Straße im Park mit einem roten "
             "Ball").split()
    refs = [" ".join(rng.choice(words, size=rng.integers(5, 12))) + "." for _ in range(n)]
    drop = lambda p: [" ".join(w for w in r.split() if rng.random() > p) for r in refs]
    return refs, drop(0.1), drop(1 / 3)


def test_corpus_bleu_is_its_sentences_statistics_summed():
    refs, good, _ = captions(50, 0)
    hyps = [g.lower() for g in good]              # case errors: cased and lowercased BLEU differ
    for lowercase, score in ((False, sacre_bleu), (True, lowercase_bleu)):
        stats = sentence_stats(hyps, refs, lowercase)
        assert stats.shape == (50, 10)
        assert bleu_of(stats.sum(axis=0)) == pytest.approx(score(hyps, refs)[0].score, abs=1e-9)
    assert sacre_bleu(hyps, refs)[0].score < lowercase_bleu(hyps, refs)[0].score


def test_paired_bootstrap_tells_a_real_lead_from_a_tie():
    refs, good, bad = captions(300, 1)
    lead = paired_bootstrap(good, bad, refs, samples=300)
    lo, hi = lead["difference_interval"]
    assert lead["difference"] > 0 and 0 < lo < lead["difference"] < hi and lead["p"] == 0
    assert lead["interval"][0] < lead["bleu"] < lead["interval"][1]
    assert lead["bleu"] == round(sacre_bleu(good, refs)[0].score, 2)
    assert paired_bootstrap(good, bad, refs, samples=300) == lead             # seeded
    assert paired_bootstrap(bad, good, refs, samples=300)["p"] == 1.0
    tie = paired_bootstrap(good, good, refs, samples=300)
    assert tie["difference"] == 0 and tie["difference_interval"] == (0, 0) and tie["p"] == 1.0


def test_evaluate_command(tmp_path, capsys):
    (tmp_path / "hyp").write_text("the cat sat on the mat\n")
    (tmp_path / "ref").write_text("the cat sat on a mat\n")
    evaluate_main(["--hyp", str(tmp_path / "hyp"), "--ref", str(tmp_path / "ref")])
    out = capsys.readouterr().out
    assert "sacreBLEU (cased, detokenized): BLEU = 53.73" in out and "signature: nrefs:1" in out
    assert "paper-style tokenized BLEU with compound splitting" in out
    assert "lowercased tokenized BLEU (sacreBLEU -lc, 13a" in out and "case:lc" in out
    (tmp_path / "ref").write_text("one\ntwo\n")
    with pytest.raises(SystemExit):
        evaluate_main(["--hyp", str(tmp_path / "hyp"), "--ref", str(tmp_path / "ref")])
    assert "has 1 lines but " in capsys.readouterr().err


def test_evaluate_compares_with_a_baseline_and_checks_its_lines(tmp_path, capsys):
    refs, good, bad = captions(200, 2)
    for name, lines in (("ref", refs), ("good", good), ("bad", bad), ("short", bad[:-1])):
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    evaluate_main(["--hyp", str(tmp_path / "good"), "--ref", str(tmp_path / "ref"),
                   "--baseline", str(tmp_path / "bad")])
    out = capsys.readouterr().out.splitlines()
    assert out[-2].startswith("sacreBLEU (cased): ") and out[-1].startswith("lowercased BLEU: ")
    assert all("the baseline scores as well or better on 0.0% of 1,000 resampled test sets of "
               "200 sentences" in line for line in out[-2:])
    assert all(re.search(r": \d+\.\d\d \[\d+\.\d\d, \d+\.\d\d\] against the baseline's "
                         r"\d+\.\d\d \[\d+\.\d\d, \d+\.\d\d\];", line) for line in out[-2:]), out
    with pytest.raises(SystemExit):
        evaluate_main(["--hyp", str(tmp_path / "good"), "--ref", str(tmp_path / "ref"),
                       "--baseline", str(tmp_path / "short")])
    says(capsys.readouterr().err.strip(), str(tmp_path / "short"), "199 lines")


def test_evaluate_notes_what_bleu_cannot_see_in_one_line_each(tmp_path, capsys):
    """Translations (here the sample's German references less their first word) stored
    decomposed, shifted by a line (from the first, or from halfway), with umlauts spelled out
    (ae for ä), in full-width letters, tokenized (split by 13a, or holding a mark no model writes
    in a few lines: the paper's ##AT##, SentencePiece's \u2581, BPE's @@), or none at all: each is
    one note naming the fix; sacreBLEU's own warning never appears. Standard input that is empty is named as such."""
    import unicodedata
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
    from annotated.base.files import read_lines
    from annotated.data.corpus import SAMPLE, SAMPLE_SPLITS
    refs = list(read_lines(SAMPLE / f"{SAMPLE_SPLITS['test']}.de.gz"))
    hyps = [" ".join(ref.split()[1:]) for ref in refs]
    split = Tokenizer13a()
    files = {"ref": refs, "nfd": [unicodedata.normalize("NFD", h) for h in hyps],
             "shifted": hyps[1:] + hyps[:1],
             "half": hyps[:150] + hyps[151:] + hyps[150:151],
             "wide": [unicodedata.normalize("NFKC", h).translate(
                 {c: c + 0xFEE0 for c in range(0x21, 0x7F)}) for h in hyps],
             "spelled": [h.translate(str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"}))
                         for h in hyps],
             "tokenized": [split(h).replace("-", " ##AT##-##AT## ") for h in hyps],
             "compounds": [h.replace("-", " ##AT##-##AT## ") for h in hyps],
             "pieces": ["\u2581" + h.replace(" ", " \u2581") for h in hyps],
             "bpe": [h.replace("en ", "@@ en ", 1) if i % 20 == 0 else h
                     for i, h in enumerate(hyps)],
             "pairs": [f"{h}\t{h}" for h in hyps],
             "blank": [""] * len(refs)}
    for name, lines in files.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    expected = {"nfd": ("NFD", "NFC", "uconv"), "shifted": ("out of step", "rank correlation"),
                "half": ("out of step near line", "next or previous reference"),
                "wide": ("full-width forms", "NFKC"),
                "spelled": ("writes ä, ö, ü and ß as ae, oe, ue and ss", "the same way"),
                "tokenized": ("look tokenized", "##AT##", "not comparable"),
                "compounds": ("look tokenized", "##AT##", "join the compounds"),
                "pieces": ("look tokenized", "SentencePiece", "spm_decode"),
                "bpe": ("look tokenized", "'@@ '", "remove the BPE joins"),
                "pairs": ("hold a tab", "file of pairs", "cut -f2"),
                "blank": ("every line", "is empty")}         # and no 4-gram note besides
    for name, names in expected.items():
        evaluate_main(["--hyp", str(tmp_path / name), "--ref", str(tmp_path / "ref")])
        notes = [line for line in capsys.readouterr().err.splitlines() if line]
        assert len(notes) == 1 and "forgot to detokenize" not in notes[0], (name, notes)
        says(notes[0], str(tmp_path / name), *names)
        if name == "half":                       # the line lost is the 151st
            assert abs(int(re.search(r"near line (\d+)", notes[0])[1]) - 151) <= 30, notes
    stdin = sys.stdin
    try:
        sys.stdin = io.TextIOWrapper(io.BytesIO(b""))
        with pytest.raises(SystemExit):
            evaluate_main(["--hyp", "-", "--ref", str(tmp_path / "ref")])
    finally:
        sys.stdin = stdin
    says(capsys.readouterr().err.strip(), "standard input was empty", "pipe them in")


def test_a_small_test_set_out_of_step_is_noted_and_one_in_step_is_not(tmp_path, capsys):
    """Twenty sentences are too few for a corpus's check of its lines (MIN_PAIRS_IN_LINE), but
    not for a score's: in step, every 15 lines of the sample's test set and their German go
    together far above MIN_LENGTH_CORRELATION; shifted by one line, or reversed, they do not."""
    from annotated.base.files import read_lines
    from annotated.data.corpus import (MIN_LENGTH_CORRELATION, SAMPLE, SAMPLE_SPLITS,
                                       in_line_correlation)
    from annotated.evaluate import FEWEST_PAIRS_IN_STEP
    en, de = (list(read_lines(SAMPLE / f"{SAMPLE_SPLITS['test']}.{lang}.gz"))
              for lang in ("en", "de"))
    n = FEWEST_PAIRS_IN_STEP
    in_step = [in_line_correlation(list(zip(en[i:i + n], de[i:i + n])), n)
               for i in range(0, len(en) - n, 5)]
    in_step = [r for r in in_step if r is not None]
    assert len(in_step) > 40 and min(in_step) > MIN_LENGTH_CORRELATION + 0.1, min(in_step)
    refs = de[:20]
    hyps = [" ".join(ref.split()[1:]) for ref in refs]
    for name, lines, noted in (("in step", hyps, False), ("shifted", hyps[1:] + hyps[:1], True),
                               ("reversed", hyps[::-1], True)):
        (tmp_path / "hyp").write_text("\n".join(lines) + "\n")
        (tmp_path / "ref").write_text("\n".join(refs) + "\n")
        evaluate_main(["--hyp", str(tmp_path / "hyp"), "--ref", str(tmp_path / "ref")])
        notes = [line for line in capsys.readouterr().err.splitlines() if "out of step" in line]
        assert bool(notes) == noted, (name, notes)


def test_the_translate_command_runs_a_small_model_on_one_thread(tmp_path, monkeypatch):
    """The command decides the threads (annotated.base.threads): one for a small model."""
    from annotated.base.threads import SMALL_MODEL, threads_for
    assert threads_for(SMALL_MODEL - 1) == 1 and threads_for(SMALL_MODEL) is None
    assert threads_for(10, requested=3) == 3
    seen = []
    monkeypatch.setattr(torch, "set_num_threads", seen.append)
    (tmp_path / "in.txt").write_text("a dog runs .\n")
    shipped = Path(__file__).resolve().parents[1] / "annotated/pretrained/multi30k_en_de.pt"
    translate_main(["--checkpoint", str(shipped), "--input", str(tmp_path / "in.txt"), "--out",
                    str(tmp_path / "out.txt"), "--greedy"])
    assert seen == [1]


def test_evaluate_notes_a_language_the_references_are_not_in(tmp_path, capsys):
    """--lang picks the tokenizer: German references scored as French get a note naming
    both; the right code, with a region or without, gets none."""
    from annotated.base.files import read_lines
    from annotated.data.corpus import SAMPLE, SAMPLE_SPLITS
    refs = list(read_lines(SAMPLE / f"{SAMPLE_SPLITS['test']}.de.gz"))
    (tmp_path / "ref").write_text("\n".join(refs) + "\n")
    (tmp_path / "hyp").write_text("\n".join(" ".join(r.split()[1:]) for r in refs) + "\n")
    notes = {}
    for lang in ("fr", "de", "de-DE"):
        evaluate_main(["--hyp", str(tmp_path / "hyp"), "--ref", str(tmp_path / "ref"),
                       "--lang", lang])
        notes[lang] = [line for line in capsys.readouterr().err.splitlines() if "--lang" in line]
    assert len(notes["fr"]) == 1 and notes["de"] == notes["de-DE"] == [], notes
    says(notes["fr"][0], "--lang fr", "read as de", "tokenizer", "--lang de")
