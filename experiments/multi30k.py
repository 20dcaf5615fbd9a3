"""A real Multi30k model (English->German, or another pair with target_lang=fr ...), trained,
averaged, decoded and scored with this project's own commands on this machine.

    python -m experiments.multi30k [--config multi30k] [--max-minutes 60] [--nproc 1]
        [--data-dir D] [--run-dir runs/CONFIG] [--skip-train] [--average 5] [--beam-size 4]
        [--alpha 0.6] [key=value ...]

key=value overrides fields of the preset, as in `python -m annotated.train` (the tests train a
tiny model on the shipped sample: dataset=multi30k_sample N=1 ...).

Without --skip-train the run folder must hold no run yet (training into an earlier run would
continue it, and the results would report one sitting's time); the settings and the data
location are checked before it is made, and a run folder inside the committed results/ or
annotated/ is refused. --skip-train scores an existing run again, as it was trained: the preset
(which names the results files) and every setting come from the run (its train.json, which the
training step writes, and its checkpoint), so --max-minutes, --nproc and key=value are refused
with it, and so is a --config that names another preset than the run's, or none where the
run's cannot be told (no train.json, and a model shaped like neither preset). A smoke test
(--limit) never writes into the committed results/.

1. trains the preset (default `multi30k`) for --max-minutes of wall time
   (python -m annotated.train; with --nproc N, torchrun runs N processes of it);
2. averages its last --average checkpoints (python -m annotated.checkpoint average, §6.1);
3. decodes the full test2016 set (1,000 sentences) with beam search (by default the paper's
   beam 4 and alpha 0.6; experiments.multi30k_sweep chooses them on val) and scores it with
   sacreBLEU (cased, detokenized; and lowercased, the Multi30k literature's metric; with their
   signatures), then compares on the same model: greedy, alpha 0, the last checkpoint alone;
4. writes multi30k.md (every number with its command), multi30k.json (for chapter 8) and
   multi30k_attention.npz (attention maps of test sentences) into runs/results/, or with
   --out-dir results over the committed files that chapter 8 reads; another preset or
   language pair writes its own files (multi30k_tiny.md, multi30k_en_fr.md, ...), and so does
   a run on lowercased text (lowercase=true: multi30k_tiny_lowercase.md).
"""
import io
import json
import shlex
from pathlib import Path

import numpy as np

from annotated.base.cli import ArgumentParser, command, number, path, positive
from annotated.base.errors import DataError
from annotated.base.files import atomic_open, write_files
from annotated.base.settings import at_least
from annotated.configs import apply_overrides, get, option
from annotated.data.corpus import cache_folder, corpus_files, data_location
from annotated.inference.search import attention_maps
from annotated.store.checkpoint_file import checkpoints, load_model, step_in_name
from experiments.commands import check_no_trainer, invocation, train
from experiments.folders import (ROOT, add_training_arguments, check_out_dir, check_run_folder,
                                 committed_folder)
from experiments.report import file_stem, markdown_table, pair_name, published
from experiments.scoring import (evaluate_run, multi30k_config, train_record,
                                 trained_checkpoints)

PRESETS = ("multi30k", "multi30k_tiny")


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m experiments.multi30k",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", choices=PRESETS,
                        help="the preset to train (default multi30k); it also names the results "
                             "files (with --skip-train the run's own preset does)")
    parser.add_argument("--max-minutes", type=positive,
                        help="minutes of training (default 60)")
    parser.add_argument("--nproc", type=number(at_least(1)),
                        help="train as this many processes under torchrun, one CPU thread or "
                             "GPU each (default 1; 2 fills a 2-core CPU)")
    add_training_arguments(parser, "override fields of the multi30k preset")
    parser.add_argument("--run-dir", type=path, help="the training run (default runs/CONFIG); "
                        "without --skip-train, a folder that holds no run yet")
    parser.add_argument("--skip-train", action="store_true", help="score an existing run")
    parser.add_argument("--average", type=number(at_least(1)), default=5,
                        help="checkpoints to average")
    parser.add_argument("--beam-size", type=option("beam_size"), default=4,
                        help="beam size (default 4)")
    parser.add_argument("--alpha", type=option("alpha"), default=0.6,
                        help="length penalty alpha (default 0.6)")
    parser.add_argument("--limit", type=number(at_least(3)), default=None,
                        help="score only the first N test sentences, at least the 3 whose "
                             "attention maps are saved (a smoke test)")
    args = parser.parse_intermixed_args(argv)
    unused = [name for name, value in (("--max-minutes", args.max_minutes),
                                       ("--nproc", args.nproc)) if value is not None]
    unused += args.overrides
    if args.skip_train and unused:
        parser.error(f"--skip-train scores the run as it was trained, so {' '.join(unused)} "
                     f"would not be applied; leave {'it' if len(unused) == 1 else 'them'} out "
                     f"(the run's settings come from its checkpoint)")
    args.max_minutes = 60.0 if args.max_minutes is None else args.max_minutes
    args.nproc = args.nproc or 1
    args.run_dir = args.run_dir or ROOT / "runs" / (args.config or "multi30k")
    return args


@command
def main(argv=None):
    args = parse_args(argv)
    published()                        # the scores ours are set beside, checked before any work
    check_run_folder(args.run_dir)
    if args.skip_train:
        check_no_trainer(args.run_dir)            # its checkpoints would rotate away meanwhile
        preset = trained_preset(args.run_dir, args.config)
        dataset = multi30k_config(trained_checkpoints(args.run_dir)[-1]).dataset
    else:
        preset = args.config or "multi30k"
        check_fresh_run(args.run_dir, preset, args.overrides, args.data_dir)
        dataset = apply_overrides(get(preset), args.overrides).dataset
    check_out_dir(args.out_dir, args.limit)
    if dataset != "multi30k" and committed_folder(args.out_dir) is not None:
        raise DataError(f"refusing to write the results of a run on dataset={dataset} into "
                        f"{args.out_dir}: its files hold full Multi30k results, scored on all of "
                        f"test2016, which chapter 8 reads; give --out-dir a scratch folder (the "
                        f"default is one)")
    if not args.skip_train:
        seconds, cmd = train(preset, args.run_dir, max_minutes=args.max_minutes,
                             data_dir=args.data_dir, overrides=args.overrides, nproc=args.nproc)
        record = {"wall_minutes": round(seconds / 60, 1), "command": cmd,
                  "step": step_in_name(checkpoints(args.run_dir)[-1])}
        with atomic_open(args.run_dir / "train.json", "w") as f:
            f.write(json.dumps(record))
    beam = dict(beam_size=args.beam_size, alpha=args.alpha, max_extra=50, batch_tokens=2000)
    result, sentences = evaluate_run(args.run_dir, args.average, beam, args.data_dir, args.limit)
    result["preset"] = preset
    stem = file_stem(preset, result["config"])
    files = {
        args.out_dir / f"{stem}.md": render_markdown(result, invocation("experiments.multi30k", argv),
                                                     sentences),
        args.out_dir / f"{stem}.json": json.dumps(result, indent=1),
        args.out_dir / f"{stem}_attention.npz": attention_file(args.run_dir / "average.pt",
                                                               result["examples"][:3])}
    write_files(files)
    print(f"wrote {', '.join(map(str, files))}")


def on_multi30k(result: dict) -> bool:
    """Whether the run was trained and scored on Multi30k itself (not the shipped sample)."""
    return result["config"].get("dataset", "multi30k") == "multi30k"


def test_name(result: dict) -> str:
    """What the run's test split is: Multi30k's test2016, or the shipped sample's test split."""
    return "test2016" if on_multi30k(result) else f"the test split of {result['config']['dataset']}"


def check_fresh_run(run: Path, preset: str, overrides: list[str], data_dir):
    """Before training: the settings valid, the corpus there, and the run folder free of an
    earlier run (training into it would continue that run, and the results would report one
    sitting's time for a model trained in several). A run stopped before its first checkpoint
    left only its metrics log, which the trainer moves aside: it is trained afresh."""
    config = apply_overrides(get(preset), overrides)
    corpus_files(config, data_location(data_dir), cache_folder(), log=lambda *_: None)
    if checkpoints(run) or (run / "train.json").exists():
        raise DataError(f"the run folder {run} already holds a training run; score it with "
                        f"--skip-train, or give another --run-dir for a new run (python -m "
                        f"annotated.train --run-dir {run} --resume continues it)")


MODEL_SHAPE = ("N", "d_model", "d_ff", "h", "d_k", "d_v")


def trained_preset(run: Path, given: str | None) -> str:
    """The preset the run in `run` was trained with, which names its results files: from its
    train.json (written by this script), else the one preset of PRESETS whose model shape its
    checkpoint has, else --config as given. A --config that names another preset than the
    run's, none where the run's cannot be told, or a run on another corpus than Multi30k, is
    refused."""
    last = trained_checkpoints(run)[-1]
    config = multi30k_config(last)
    found, source = preset_in_train_json(run), f"{run / 'train.json'} says so"
    if found is not None:
        check_shape_recorded(run, found, config)
    if found is None:
        shapes = [name for name in PRESETS
                  if all(getattr(get(name), k) == getattr(config, k) for k in MODEL_SHAPE)]
        if len(shapes) == 1:
            found, source = shapes[0], f"its model has the shape of {shapes[0]}"
    if found is not None and given is not None and given != found:
        raise DataError(f"--config {given}: the run {run} was trained with --config {found} "
                        f"({source}); leave out --config, or give --config {found}")
    if found is None and given is None:
        shape = " ".join(f"{k}={getattr(config, k)}" for k in MODEL_SHAPE)
        raise DataError(f"--skip-train: the run {run} has no train.json naming its preset, and "
                        f"its model ({shape}) has the shape of none of {', '.join(PRESETS)}; "
                        f"its results files are named after a preset: give the one it should "
                        f"be filed under with --config")
    return found or given


def check_shape_recorded(run: Path, preset: str, config) -> None:
    """Refuse a train.json whose training command (its preset and key=value settings) builds
    another model than the run's checkpoint holds: it was edited, or came from another run."""
    words = shlex.split(train_record(run)["command"])
    settings = [w for w in words if "=" in w and not w.startswith("-")]
    try:
        recorded = apply_overrides(get(preset), settings)
    except (ValueError, TypeError):
        return                       # not settings of ours: the shape cannot be told from them
    differ = [f"{k}={getattr(recorded, k)} there, {getattr(config, k)} in the checkpoint"
              for k in MODEL_SHAPE if getattr(recorded, k) != getattr(config, k)]
    if differ:
        raise DataError(f"{run / 'train.json'}: its command (--config {preset}) builds another "
                        f"model than the run's checkpoints hold ({'; '.join(differ)}): it was "
                        f"edited or belongs to another run; restore it, or delete it and give "
                        f"--config")


def preset_in_train_json(run: Path) -> str | None:
    """The --config of the training command in the run's train.json, if it names one (the
    file read checked: a damaged one is an error naming it)."""
    record = train_record(run)
    try:
        words = shlex.split(record["command"]) if record else []
        name = words[words.index("--config") + 1]
    except (ValueError, IndexError):
        return None
    return name if name in PRESETS else None


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
    theirs = published().get((result["config"]["source_lang"], result["config"]["target_lang"]))
    if not theirs or not on_multi30k(result):          # their test2016 is not another corpus
        return []
    rows = [[system, bleu, metric, f"{tokens:,}"] for system, bleu, metric, tokens in theirs]
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
    corpus = "Multi30k" if on_multi30k(result) else f"dataset={result['config']['dataset']}"
    lines = [f"# {corpus} {pair_name(result['config'])}: trained and scored on this machine", "",
             f"Written by `{command_line}` (do not edit by hand).", ""]
    trained = [m for m in result["metrics"] if m["split"] == "train"]
    if "train" in result:
        sitting, last = result["train"], result["metrics"][-1].get("step", "?")
        continued = sitting.get("step") not in (None, last) and trained
        lines += [f"Training: `{sitting['command']}`: {sitting['wall_minutes']} minutes of wall "
                  f"time, {sitting.get('step', last)} steps."
                  + (f" The run was then continued, to step {last:,} "
                     f"({trained[-1]['elapsed'] / 60:.1f} minutes of training in all)."
                     if continued else ""), ""]
    elif trained:                     # trained by `python -m annotated.train` directly
        lines += [f"Training (from the run's metrics.jsonl): {trained[-1]['step']:,} steps in "
                  f"{trained[-1]['elapsed'] / 60:.1f} minutes of training.", ""]
    if result["config"].get("lowercase"):
        lines += ["Trained on lowercased text (`lowercase=true`, not in the paper), as the "
                  "published Multi30k baselines are: the model writes lowercase, so lowercased "
                  "BLEU is its score; its cased sacreBLEU compares lowercase output with cased "
                  "references and is shown only for completeness.", ""]
    lines += [f"Averaging (§6.1): `{result['average']['command']}`", "",
              f"## {test_name(result)} ({result.get('limited', f'{sentences:,} sentences')}), "
              f"sacreBLEU", "",
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
    lines += [f"## Validation ({'val, 1,014 sentences' if on_multi30k(result) else 'the val split'})",
              ""]
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
