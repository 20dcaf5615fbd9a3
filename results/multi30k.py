"""A real Multi30k model (English->German, or another pair with target_lang=fr ...), trained,
averaged, decoded and scored with this project's own commands on this machine.

    python -m results.multi30k [--config multi30k] [--max-minutes 60] [--nproc 1]
        [--data-dir D] [--run-dir runs/CONFIG] [--skip-train] [--average 5] [--beam-size 4]
        [--alpha 0.6] [key=value ...]

key=value overrides fields of the preset, as in `python -m annotated.train` (the tests train a
tiny model on the shipped sample: dataset=multi30k_sample N=1 ...).

--skip-train scores an existing run again; the training command and wall time come from the
run's train.json, which the training step writes.

1. trains the preset (default `multi30k`) for --max-minutes of wall time
   (python -m annotated.train; with --nproc N, torchrun runs N processes of it);
2. averages its last --average checkpoints (python -m annotated.checkpoint average, §6.1);
3. decodes the full test2016 set (1,000 sentences) with beam search (by default the paper's
   beam 4 and alpha 0.6; results.multi30k_sweep chooses them on val) and scores it with
   sacreBLEU (cased, detokenized; and lowercased, the Multi30k literature's metric; with their
   signatures), then compares on the same model: greedy, alpha 0, the last checkpoint alone;
4. writes multi30k.md (every number with its command), multi30k.json (for chapter 8) and
   multi30k_attention.npz (attention maps of test sentences) into runs/results/, or with
   --out-dir results over the committed files that chapter 8 reads; another preset or
   language pair writes its own files (multi30k_tiny.md, multi30k_en_fr.md, ...), and so does
   a run on lowercased text (lowercase=true: multi30k_tiny_lowercase.md).
"""
import argparse
import io
import json
from pathlib import Path

import numpy as np

from annotated.data.corpus import load_corpus
from annotated.inference.search import attention_maps
from annotated.tools.cli import at_least, command, path, positive
from annotated.training.checkpoint import (CheckpointError, checkpoints, config_from, load,
                                           load_model)
from results.common import (ROOT, add_training_arguments, average, invocation, markdown_table,
                            perplexity, read_metrics, score, train, write_files)

PRESETS = ("multi30k", "multi30k_tiny")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m results.multi30k",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", choices=PRESETS, default="multi30k",
                        help="the preset to train; it also names the results files")
    parser.add_argument("--max-minutes", type=positive, default=60.0,
                        help="minutes of training (default 60)")
    parser.add_argument("--nproc", type=at_least(1), default=1,
                        help="train as this many processes under torchrun, one CPU thread or "
                             "GPU each (default 1; 2 fills a 2-core CPU)")
    add_training_arguments(parser, "override fields of the multi30k preset")
    parser.add_argument("--run-dir", type=path, help="the training run (default runs/CONFIG)")
    parser.add_argument("--skip-train", action="store_true", help="score an existing run")
    parser.add_argument("--average", type=at_least(1), default=5, help="checkpoints to average")
    parser.add_argument("--beam-size", type=at_least(1, high=1000), default=4,
                        help="beam size (default 4)")
    parser.add_argument("--alpha", type=at_least(0.0, float), default=0.6,
                        help="length penalty alpha (default 0.6)")
    parser.add_argument("--limit", type=at_least(3), default=None,
                        help="score only the first N test sentences, at least the 3 whose "
                             "attention maps are saved (a smoke test)")
    args = parser.parse_intermixed_args(argv)
    args.run_dir = args.run_dir or ROOT / "runs" / args.config
    return args


@command
def main(argv=None):
    args = parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    if not args.skip_train:
        seconds, cmd = train(args.config, args.run_dir, max_minutes=args.max_minutes,
                             data_dir=args.data_dir, overrides=args.overrides, nproc=args.nproc)
        record = {"wall_minutes": round(seconds / 60, 1), "command": cmd}
        (args.run_dir / "train.json").write_text(json.dumps(record))
    beam = dict(beam_size=args.beam_size, alpha=args.alpha, max_extra=50, batch_tokens=2000)
    result, sentences = evaluate_run(args.run_dir, args.average, beam, args.data_dir, args.limit)
    result["preset"] = args.config
    stem = file_stem(args.config, result["config"])
    write_files({
        args.out_dir / f"{stem}.json": json.dumps(result, indent=1),
        args.out_dir / f"{stem}_attention.npz": attention_file(args.run_dir / "average.pt",
                                                               result["examples"][:3]),
        args.out_dir / f"{stem}.md": render_markdown(result, invocation("results.multi30k", argv),
                                                     sentences)})
    print(f"wrote {args.out_dir / f'{stem}.md'}")


LANGUAGES = {"en": "English", "de": "German", "fr": "French"}
# Published from-scratch text-only results on test2016, for the pair they were reported on:
# (system, BLEU, metric, reference length in tokens as the published evaluation log gives it).
PUBLISHED = {
    ("en", "de"): [
        ("Transformer-tiny, text only (Wu et al., 2021, ACL, \"Good for Misconceived Reasons\"): "
         "4+4 layers, d_model 128, d_ff 256, 4 heads, dropout 0.3, shared 10k BPE, 8,000 updates "
         "of 4,096 tokens on 2 GPUs, last 10 checkpoints averaged, beam 5", 41.02,
         "BLEU on lowercased, tokenized text (fairseq's scorer)", 12_103),
    ],
}


def file_stem(preset: str, config: dict) -> str:
    """The preset's name for English->German, the paper's pair (multi30k, multi30k_tiny);
    multi30k_en_fr and so on for other pairs; _lowercase after it for a lowercased run."""
    pair = (config["source_lang"], config["target_lang"])
    stem = preset if pair == ("en", "de") else f"{preset}_{pair[0]}_{pair[1]}"
    return stem + ("_lowercase" if config.get("lowercase") else "")


def pair_name(config: dict) -> str:
    return "->".join(LANGUAGES.get(config[k], config[k]) for k in ("source_lang", "target_lang"))


def trained_checkpoints(run: Path) -> list[Path]:
    """The checkpoints of the run to score; an error naming the folder if there are none."""
    found = checkpoints(run)
    if not found:
        what = "holds no checkpoint" if run.is_dir() else "does not exist"
        raise CheckpointError(f"the run folder {run} {what}; give --run-dir of a trained run, "
                              f"or train one (leave out --skip-train)")
    return found


def evaluate_run(run: Path, n_average: int, beam: dict, data_dir, limit) -> tuple[dict, int]:
    """Average the run's last checkpoints, then score them on test2016 and val: the contents
    of multi30k.json, and how many test sentences were scored."""
    found = trained_checkpoints(run)
    last = found[-1]
    result = {}
    if (run / "train.json").is_file():                  # how the run was made
        result["train"] = json.loads((run / "train.json").read_text())
    result["metrics"] = read_metrics(run)
    averaged, average_cmd = average(run, min(n_average, len(found)))
    result["average"] = {"command": average_cmd,
                         "checkpoints": [p.name for p in found[-n_average:]]}
    config = config_from(load(last), last)               # what the run trained
    result["config"] = {k: v for k, v in vars(config).items() if not k.startswith("paper_")}
    corpus = load_corpus(config, data_dir=data_dir, log=lambda *_: None)
    src, ref = corpus.test_src[:limit], corpus.test_ref[:limit]
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


def decode_test(averaged: Path, n_average: int, last: Path, src, ref, beam: dict) -> dict:
    """The averaged model decoded with `beam` (first), then greedy, alpha 0 and the last
    checkpoint (with n_average 1 the last checkpoint is the model, and that row is not
    repeated): each one's scores, mean output length and hypotheses."""
    k, alpha = beam["beam_size"], beam["alpha"]
    paper = " (the paper's setting)" if (k, alpha) == (4, 0.6) else ""
    chosen = f"average of {n_average}" if n_average > 1 else f"last checkpoint ({last.name})"
    which = "averaged" if n_average > 1 else "last checkpoint"
    runs = {
        f"beam {k}, alpha {alpha}, {chosen}{paper}": (averaged, beam),
        f"greedy, {which}": (averaged, dict(beam, greedy=True)),
        f"beam {k}, alpha 0, {which}": (averaged, dict(beam, alpha=0.0)),
    }
    if n_average > 1:                     # what averaging (§6.1) added on test2016
        runs[f"beam {k}, alpha {alpha}, last checkpoint ({last.name})"] = (last, beam)
    scores = {}
    for name, (ckpt, decode) in runs.items():
        s = score(ckpt, src, ref, **decode)
        s["mean_output_words"] = mean_words(s["hypotheses"])
        scores[name] = s
        print(f"{name}: sacreBLEU {s['bleu']}  ({s['signature']})", flush=True)
    return scores


def mean_words(lines) -> float:
    return round(float(np.mean([len(line.split()) for line in lines])), 2)


def attention_file(checkpoint: Path, examples: list[dict]) -> bytes:
    """The model's attention maps on these examples (source and translation), for chapter 8:
    the bytes of an .npz file."""
    model, _, tokenizer = load_model(checkpoint)
    maps = {}
    for j, example in enumerate(examples):
        src_ids = tokenizer.encode(example["source"])
        out_ids = tokenizer.encode(example["translation"])
        for kind, array in attention_maps(model, src_ids, out_ids).items():
            maps[f"{j}_{kind}"] = array
        maps[f"{j}_src_pieces"] = np.array([tokenizer.decode([t]) for t in src_ids] + ["</s>"])
        maps[f"{j}_out_pieces"] = np.array(["<s>"] + [tokenizer.decode([t]) for t in out_ids])
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **maps)
    return buffer.getvalue()


def published_section(result: dict, ours: dict) -> list[str]:
    """Our first decoding beside the published numbers for this language pair, if any."""
    published = PUBLISHED.get((result["config"]["source_lang"], result["config"]["target_lang"]))
    if not published:
        return []
    rows = [[system, bleu, metric, f"{tokens:,}"] for system, bleu, metric, tokens in published]
    ref_tokens = ours.get("lowercase_ref_tokens")
    text = ", trained on lowercased text" if result["config"].get("lowercase") else ""
    rows.append([f"this model ({result['preset']}{text}), {next(iter(result['test2016']))}",
                 ours.get("lowercase_bleu", "-"), "sacreBLEU -lc, 13a tokenizer, on detokenized "
                 f"output (cased sacreBLEU: {ours['bleu']})", f"{ref_tokens:,}" if ref_tokens
                 else "-"])
    return (["## Beside published text-only results", "",
             "The Multi30k literature reports BLEU on lowercased, tokenized text; our lowercased "
             "BLEU is the closest match, not an identical one (the tokenizers differ). The "
             "reference length in tokens shows how closely the two tokenizations agree on the "
             "same test2016 references.", ""]
            + markdown_table(["system", "test2016 BLEU", "metric", "reference tokens"], rows)
            + [""])


def render_markdown(result: dict, command_line: str, sentences: int) -> str:
    """multi30k.md from multi30k.json's contents; `command_line` is the invocation that wrote
    it and `sentences` the number of test sentences scored."""
    paper_setting = next(iter(result["test2016"].values()))
    lines = [f"# Multi30k {pair_name(result['config'])}: trained and scored on this machine", "",
             f"Written by `{command_line}` (do not edit by hand).", ""]
    trained = [m for m in result["metrics"] if m["split"] == "train"]
    if "train" in result:
        lines += [f"Training: `{result['train']['command']}`: "
                  f"{result['train']['wall_minutes']} minutes of wall time, "
                  f"{result['metrics'][-1].get('step', '?')} steps.", ""]
    elif trained:                     # trained by `python -m annotated.train` directly
        lines += [f"Training (from the run's metrics.jsonl): {trained[-1]['step']:,} steps in "
                  f"{trained[-1]['elapsed'] / 60:.1f} minutes of training.", ""]
    if result["config"].get("lowercase"):
        lines += ["Trained on lowercased text (`lowercase=true`, not in the paper), as the "
                  "published Multi30k baselines are: the model writes lowercase, so lowercased "
                  "BLEU is its score; its cased sacreBLEU compares lowercase output with cased "
                  "references and is shown only for completeness.", ""]
    lines += [f"Averaging (§6.1): `{result['average']['command']}`", "",
              f"## test2016 ({sentences:,} sentences), sacreBLEU", "",
              f"Signatures: cased `{paper_setting['signature']}`; lowercased "
              f"`{paper_setting.get('lowercase_signature', 'not measured')}` (the Multi30k "
              f"literature's metric).", ""]
    lines += markdown_table(
        ["decoding", "sacreBLEU", "lowercased BLEU", "paper-style tokenized BLEU",
         "mean output words", "sentences/s"],
        [[k, v["bleu"], v.get("lowercase_bleu", "-"), v["paper_bleu"], v["mean_output_words"],
          v["sentences_per_s"]] for k, v in result["test2016"].items()])
    lines += ["", f"Reference mean length: {result['reference_mean_words']:.2f} words.", ""]
    lines += published_section(result, paper_setting)
    lines += ["## Validation (val, 1,014 sentences)", ""]
    lines += markdown_table(["checkpoint", "smoothed loss", "perplexity", "token accuracy"],
                            [[k, v["loss"], v["ppl"], v["accuracy"]]
                             for k, v in result["valid"].items()])
    lines += ["", "## Translations beside their references", ""]
    for e in result["examples"]:
        lines += [f"- EN: {e['source']}", f"  - ours: {e['translation']}",
                  f"  - reference: {e['reference']}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
