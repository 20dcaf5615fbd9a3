"""Scoring, the way §6.1 does (beam 4, alpha 0.6, max length input + 50), with sacreBLEU: a
checkpoint's translations (`score`) and its perplexity (`perplexity`); a trained run's averaged
checkpoints on test2016 and val, as multi30k.json records them (`evaluate_run`); and a run on
val across a grid of averagings and decodings, kept in its folder so that a run is never
scored twice for the same thing (`sweep_run`)."""
import json
import time
from pathlib import Path

import numpy as np
import torch

from annotated.base.errors import CheckpointError, DataError
from annotated.base.files import atomic_open
from annotated.configs import FIELDS, RESUMABLE
from annotated.data.corpus import (cache_folder, corpus_files, data_location, load_corpus,
                                   read_parallel)
from annotated.inference.batched import translate_lines
from annotated.inference.bleu import lowercase_bleu, paper_bleu, sacre_bleu
from annotated.store.checkpoint_file import checkpoints, config_from, header, load, load_model
from annotated.training.run_dir import read_metrics
from annotated.training.step import evaluate
from experiments.commands import average
from experiments.folders import relative
from experiments.report import first_sentences
from experiments.results_files import BLEU, COUNT, PERPLEXITY, Record, out_of_rule

# Where models are scored: the GPU when there is one (decoding is then a matter of seconds).
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# §6.1: beam 4 and alpha 0.6, on the average of the last 5 checkpoints (base) or 20 (big)
PAPER_DECODING = (4, 0.6)
PAPER_AVERAGES = (5, 20)


def split_text(config, data_dir, split: str) -> tuple[list[str], list[str]]:
    """A split ("valid", "test") of config's corpus as raw source and target sentences."""
    files = corpus_files(config, data_location(data_dir), cache_folder(), log=lambda *_: None)
    pairs, _ = read_parallel(*files[split])
    return [s for s, _ in pairs], [t for _, t in pairs]


def score(checkpoint: Path, sources: list[str], references: list[str], **decode) -> dict:
    """Translate with `translate_lines(**decode)`; sacreBLEU (cased), lowercased tokenized BLEU
    (sacreBLEU -lc, 13a: the Multi30k literature's metric) and paper-style BLEU."""
    model, config, tokenizer = load_model(checkpoint, map_location=DEVICE)
    start = time.time()
    hyps = translate_lines(model, tokenizer, sources, **decode)
    seconds = time.time() - start
    sacre, signature = sacre_bleu(hyps, references)
    lower, lower_signature = lowercase_bleu(hyps, references)
    return dict(bleu=round(sacre.score, 2), signature=signature,
                lowercase_bleu=round(lower.score, 2), lowercase_signature=lower_signature,
                lowercase_ref_tokens=lower.ref_len,
                paper_bleu=round(paper_bleu(hyps, references).score, 2),
                sentences_per_s=round(len(sources) / seconds, 1), hypotheses=hyps)


def perplexity(checkpoint: Path, pairs) -> dict:
    """Label-smoothed loss, perplexity and accuracy per target token on `pairs` (a split)."""
    model, config, _ = load_model(checkpoint, map_location=DEVICE)
    return rounded(evaluate(model, pairs, config, torch.device(DEVICE)))


def rounded(stats: dict) -> dict:
    """The loss, ppl and accuracy of a validation, to 4 decimals as the results files show them."""
    return {k: round(stats[k], 4) for k in ("loss", "ppl", "accuracy")}


def mean_words(lines) -> float:
    return round(float(np.mean([len(line.split()) for line in lines])), 2)


# ------------------------------------------------------------------ a run on test2016 and val

SCORE_A_RUN = "give --run-dir of a trained run, or train one (leave out --skip-train)"


def trained_checkpoints(run: Path, fix: str = SCORE_A_RUN) -> list[Path]:
    """The checkpoints of the run to score; an error naming the folder and `fix` (what the
    calling command offers) if there are none."""
    found = checkpoints(run)
    if not found:
        what = ("holds no checkpoint" if run.is_dir() else "is a file, not a folder"
                if run.exists() else "does not exist")
        raise CheckpointError(f"the run folder {run} {what}; {fix}")
    return found


def train_record(run: Path) -> dict | None:
    """How experiments.multi30k trained the run (its train.json: the command, its wall
    minutes, the step it reached), read checked for the report; None if the run has none."""
    path = run / "train.json"
    if not path.exists():
        return None
    record = Record(path, "python -m experiments.multi30k trains the run again; or delete it, "
                          "and the report reads the run's metrics.jsonl instead")
    record.get("command", kind=str)
    record.get("wall_minutes", rule=COUNT)
    if "step" in record.data:
        record.get("step", rule=COUNT)
    return record.data


def evaluate_run(run: Path, n_average: int, beam: dict, data_dir, limit) -> tuple[dict, int]:
    """Average the run's last checkpoints (n_average, or all it has if fewer: the results say
    how many), then score them on test2016 and val: the contents of multi30k.json, and how
    many test sentences were scored."""
    found = trained_checkpoints(run)
    trained = train_record(run)
    last = found[-1]
    config = config_from(load(last), last)               # what the run trained
    corpus = load_corpus(config, data_dir=data_dir, log=lambda *_: None)
    if n_average > len(found):
        print(f"{run} holds {len(found)} checkpoints, not --average {n_average}: averaging "
              f"those {len(found)}", flush=True)
        n_average = len(found)
    result = {} if trained is None else {"train": trained}
    result["metrics"] = read_metrics(run)
    averaged, average_cmd = average(run, n_average)
    result["average"] = {"command": average_cmd,
                         "checkpoints": [p.name for p in found[-n_average:]]}
    result["config"] = dict(vars(config))
    src, ref = corpus.test_src[:limit], corpus.test_ref[:limit]
    if len(src) < len(corpus.test_src):
        result["limited"] = first_sentences(len(src), len(corpus.test_src))
    scores = decode_test(averaged, n_average, last, src, ref, beam)
    result["test2016"] = {k: {kk: vv for kk, vv in v.items() if kk != "hypotheses"}
                          for k, v in scores.items()}
    result["reference_mean_words"] = mean_words(ref)
    result["valid"] = {"last": perplexity(last, corpus.valid)}
    if n_average > 1:
        result["valid"] = {"averaged": perplexity(averaged, corpus.valid), **result["valid"]}
    paper = next(iter(scores.values()))["hypotheses"]
    result["examples"] = [dict(source=s, reference=r, translation=h)
                          for s, r, h in zip(src[:8], ref[:8], paper)]
    return result, len(src)


def chosen_label(beam: dict, n_average: int, last: Path) -> str:
    """The name of the chosen decoding's row: its beam and alpha, the model decoded, and
    whether that is the paper's setting (§6.1) or only its beam and alpha."""
    k, alpha = beam["beam_size"], beam["alpha"]
    paper = ("" if (k, alpha) != PAPER_DECODING else " (the paper's setting)"
             if n_average in PAPER_AVERAGES else " (the paper's beam and alpha)")
    chosen = f"average of {n_average}" if n_average > 1 else f"last checkpoint ({last.name})"
    return f"beam {k}, alpha {alpha}, {chosen}{paper}"


def scored_decodings(averaged: Path, n_average: int, last: Path, beam: dict) -> dict:
    """The rows decode_test scores, by name: (checkpoint, decoding settings) each, the chosen
    decoding first (chosen_label; results_files.chosen_decoding finds it again by name)."""
    k, alpha = beam["beam_size"], beam["alpha"]
    which = "averaged" if n_average > 1 else "last checkpoint"
    runs = {
        chosen_label(beam, n_average, last): (averaged, beam),
        f"greedy, {which}": (averaged, dict(beam, greedy=True)),
        f"beam {k}, alpha 0, {which}": (averaged, dict(beam, alpha=0.0)),
    }
    if n_average > 1:                     # what averaging (§6.1) added on test2016
        runs[f"beam {k}, alpha {alpha}, last checkpoint ({last.name})"] = (last, beam)
    return runs


def decode_test(averaged: Path, n_average: int, last: Path, src, ref, beam: dict) -> dict:
    """The averaged model decoded with `beam` (first), then greedy, alpha 0 and the last
    checkpoint (with n_average 1 the last checkpoint is the model, and that row is not
    repeated): each one's scores, mean output length and hypotheses."""
    scores = {}
    for name, (ckpt, decode) in scored_decodings(averaged, n_average, last, beam).items():
        s = score(ckpt, src, ref, **decode)
        s["mean_output_words"] = mean_words(s["hypotheses"])
        scores[name] = s
        print(f"{name}: sacreBLEU {s['bleu']}  ({s['signature']})", flush=True)
    return scores


# --------------------------------------------------------------------------- a run on a grid

TRAIN_FIRST = "train it first (--train)"                # a run to score is missing
# The settings of a run that its entry records (multi30k_sweep.json, val_sweep.json).
SHOWN = ("N", "d_model", "d_ff", "h", "P_drop", "vocab_size", "lr_factor", "warmup_steps")
# What a run's entry holds (multi30k_sweep.json, val_sweep.json), and each of its rows.
ENTRY = ("preset", "overrides", "steps", "minutes", "config", "rows")
ROW = ("average", "val_ppl", "beam", "alpha", "lowercase_bleu", "bleu")
SCORES = {"val_ppl": PERPLEXITY, "lowercase_bleu": BLEU, "bleu": BLEU}      # a row's numbers


def entry_problem(entry) -> str | None:
    """What an entry read back from a file lacks or holds that cannot be (a NaN or negative
    score), or None if it has all the sweep reads."""
    if not isinstance(entry, dict) or any(k not in entry for k in ENTRY):
        return f"an entry without {', '.join(ENTRY)}"
    if not isinstance(entry["rows"], list) or not all(
            isinstance(r, dict) and all(k in r for k in ROW) for r in entry["rows"]):
        return f"rows without {', '.join(ROW)}"
    return next((f"row {i + 1}: {key} {problem}" for i, row in enumerate(entry["rows"])
                 for key, rule in SCORES.items() if (problem := out_of_rule(row[key], rule))),
                None)


def kept_scores(kept: Path, key: dict) -> dict:
    """The rows a run's val_sweep.json keeps, by (average, beam, alpha), if they were scored
    with `key` (the same newest checkpoint and val sentences); a damaged file is treated as
    absent (the run is scored again, with a note)."""
    if not kept.is_file():
        return {}
    try:
        old = json.loads(kept.read_text())
        if old["key"] != key:
            return {}
        problem = entry_problem(old["entry"])
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        problem = f"{type(e).__name__}: {e}"
    if problem:
        print(f"{relative(kept)} is damaged ({problem}); scoring the run again", flush=True)
        return {}
    return {(r["average"], r["beam"], r["alpha"]): r for r in old["entry"]["rows"]}


def multi30k_config(checkpoint: Path):
    """The config of a checkpoint that a Multi30k script scores; a model trained on another
    corpus is refused, since its scores would be filed as Multi30k's."""
    config = config_from(header(checkpoint), checkpoint)
    if not config.dataset.startswith("multi30k"):
        raise DataError(f"{checkpoint} is a model trained on dataset={config.dataset}, not on "
                        f"Multi30k, which this script scores on its own test sets; score it "
                        f"with python -m annotated.translate and python -m annotated.evaluate "
                        f"instead")
    return config


def trained_as(run: Path, newest: Path, given):
    """The config the run's newest checkpoint was trained with, refused if it differs from the
    one `given` now in any setting a resumed run may not change: the scores would be filed
    under settings the model never had."""
    saved = config_from(header(newest), newest)
    differ = [f"{name}={getattr(saved, name)!r} there, {getattr(given, name)!r} now"
              for name in FIELDS if name not in RESUMABLE
              and getattr(saved, name) != getattr(given, name)]
    if differ:
        raise DataError(f"{run} was trained with other settings than those given now "
                        f"({'; '.join(differ)}); give the settings it was trained with, or "
                        f"train it again (--train, in a new --runs-dir)")
    return saved


def sweep_run(name: str, config, run: Path, sources, references, data_dir, made, decodings,
              averages) -> dict:
    """One run: how it trained, and val perplexity and BLEU for every averaging and decoding;
    kept in the run folder (val_sweep.json) and reused while the run's newest checkpoint and
    the val sentences are the same: only an averaging or decoding not scored yet is scored.
    made: (preset, overrides, processes) of the run; decodings, averages: the (beam, alpha)
    grid and the numbers of checkpoints averaged."""
    found = trained_checkpoints(run, TRAIN_FIRST)
    config = trained_as(run, found[-1], config)
    kept, key = run / "val_sweep.json", {"newest": found[-1].name, "sentences": len(sources)}
    done = kept_scores(kept, key)
    trained = read_metrics(run, "train")
    preset, overrides, nproc = made
    entry = {"preset": preset, "overrides": overrides, "processes": nproc,
             "steps": trained[-1]["step"],
             "minutes": round(trained[-1]["elapsed"] / 60, 1), "checkpoints": len(found),
             "config": {k: getattr(config, k) for k in SHOWN}}
    grid = [(n, beam, alpha) for n in averages if n <= len(found) for beam, alpha in decodings]
    print(f"{name}: {sum(g in done for g in grid)} of {len(grid)} scores kept in "
          f"{relative(kept)}", flush=True)
    valid = None
    for n in [n for n in averages if n <= len(found)]:
        todo = [(beam, alpha) for beam, alpha in decodings if (n, beam, alpha) not in done]
        if todo:
            valid = valid or load_corpus(config, data_dir=data_dir, log=lambda *_: None).valid
            ckpt = found[-1] if n == 1 else average(run, n, run / f"average_{n}.pt")[0]
            ppl = perplexity(ckpt, valid)["ppl"]
        for beam, alpha in todo:
            s = score(ckpt, sources, references, beam_size=beam, alpha=alpha, max_extra=50,
                      batch_tokens=2000)
            done[n, beam, alpha] = dict(average=n, val_ppl=ppl, beam=beam, alpha=alpha,
                                        lowercase_bleu=s["lowercase_bleu"], bleu=s["bleu"])
            print(f"{name}, average of {n}, beam {beam}, alpha {alpha}: val lowercased BLEU "
                  f"{s['lowercase_bleu']}, cased {s['bleu']}", flush=True)
    entry["rows"] = [done[g] for g in grid]
    with atomic_open(kept, "w") as f:
        f.write(json.dumps({"key": key, "entry": entry}, indent=1))
    return entry
