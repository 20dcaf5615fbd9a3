"""The trained model shipped with the project (annotated/pretrained/): an averaged Multi30k
English->German checkpoint with its weights stored in float16, checked against its source.

    python -m experiments.pretrained CHECKPOINT --data-dir D [--beam-size 4] [--alpha 0.6]
        [--out-dir runs/pretrained]

1. makes the float16 file as `python -m annotated.checkpoint half` does (float16 weights, no
   optimizer state: under half the size of the float32 file), in a temporary folder;
2. translates test2016 (1,000 sentences) with the float32 source and with the shipped file,
   counts the translations that are identical, and scores both (cased sacreBLEU, lowercased
   BLEU);
3. writes the float16 file as multi30k_en_de.pt and, beside it, multi30k_en_de.json (where the
   model comes from, the file's sha256 and size, both scores, the number of identical
   translations, and EXAMPLES test sentences as the float32 source translates them, which the
   tests check the shipped file reproduces word for word) and README.md, for people, into
   runs/pretrained; `--out-dir annotated/pretrained` replaces the shipped model.

Every input is checked before anything is written: the checkpoint must hold an English->German
model trained on Multi30k (the sample, multi30k_sample, only outside annotated/pretrained) with
float32 weights, as the file name and the README say; a smoke test (--limit) never writes into
annotated/pretrained; and an --out-dir whose README.md, multi30k_en_de.pt or .json this script
did not write is refused rather than overwritten. The three files are replaced together at the
end, or not at all.
"""
import json
import tempfile
from pathlib import Path

from annotated.base.cli import ArgumentParser, command, number, path
from annotated.base.errors import DataError
from annotated.base.files import sha256_file, write_files
from annotated.base.settings import at_least
from annotated.configs import option
from annotated.data.corpus import load_corpus
from annotated.inference.batched import translate_lines
from annotated.store.checkpoint_file import atomic_save, config_from, half, load, load_model
from experiments.commands import invocation, recorded
from experiments.folders import ROOT, check_out_dir, committed_folder, relative
from experiments.report import first_sentences, pair_name
from experiments.results_files import BLEU, COUNT, Record
from experiments.scoring import score

SHIPPED = ROOT / "annotated" / "pretrained" / "multi30k_en_de.pt"
EXAMPLES = 8
PAIR = ("en", "de")                                 # what the file name says
DATASETS = {"multi30k": "Multi30k (Elliott et al., 2016)",
            "multi30k_sample": "the sample of Multi30k (Elliott et al., 2016) shipped with the "
                               "project (multi30k_sample: its first 3,000 training pairs)"}
WRITTEN_BY = "Written by `python -m experiments.pretrained"     # the README's mark
SWEEP = ROOT / "results" / "multi30k_sweep.json"


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m experiments.pretrained",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=path, help="the averaged float32 checkpoint to ship")
    parser.add_argument("--data-dir", type=path, help="folder with the corpora (default: env "
                                                      "ANNOTATED_DATA_DIR)")
    parser.add_argument("--beam-size", type=option("beam_size"), default=4,
                        help="beam size (default 4)")
    parser.add_argument("--alpha", type=option("alpha"), default=0.6,
                        help="length penalty (default 0.6)")
    parser.add_argument("--limit", type=number(at_least(EXAMPLES)), default=None,
                        help="compare on the first N test sentences only (a smoke test)")
    parser.add_argument("--out-dir", type=path, default=ROOT / "runs" / "pretrained",
                        help="where to write the files (default runs/pretrained; "
                             "--out-dir annotated/pretrained replaces the shipped model)")
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    source = load(args.checkpoint)                  # every input checked before any write
    config = config_from(source, args.checkpoint)
    corpus = load_corpus(config, data_dir=args.data_dir, log=lambda *_: None)
    check_out_dir(args.out_dir, args.limit)
    check_source(args.checkpoint, source, config, args.out_dir)
    check_own_files(args.out_dir)
    origin = provenance(relative(args.checkpoint), source["step"], source["config"])
    shipped = args.out_dir / SHIPPED.name
    decode = dict(beam_size=args.beam_size, alpha=args.alpha, max_extra=50, batch_tokens=2000)
    with tempfile.TemporaryDirectory() as tmp:
        halved = Path(tmp) / SHIPPED.name           # made and checked here, shipped at the end
        atomic_save(half(args.checkpoint, beam_size=args.beam_size, alpha=args.alpha), halved)
        record = compare(args.checkpoint, halved, corpus, decode, args.limit)
        half_cmd = recorded(["python", "-m", "annotated.checkpoint", "half",
                             relative(args.checkpoint), "--out", relative(shipped),
                             "--beam-size", str(args.beam_size), "--alpha", str(args.alpha)])
        record = {"source": relative(args.checkpoint), "command": half_cmd,
                  "averaged_from": source.get("averaged_from"), "run_id": source["run_id"],
                  "step": source["step"], "sha256": sha256_file(halved),
                  "bytes": halved.stat().st_size, "decode": decode, **record}
        readme = render_readme(record, source["config"], origin,
                               invocation("experiments.pretrained", argv))
        write_files({shipped: halved.read_bytes(),
                     shipped.with_suffix(".json"): json.dumps(record, indent=1,
                                                              ensure_ascii=False) + "\n",
                     args.out_dir / "README.md": readme})
    print(f"wrote {relative(shipped)} ({record['bytes'] / 2**20:.1f} MiB), "
          f"{relative(shipped.with_suffix('.json'))} and README.md: {record['identical']} of "
          f"{record['sentences']} test translations identical")
    if shipped.resolve() == SHIPPED.resolve():
        print("note: the README's first row describes the model that ships: python -m "
              "experiments.summary checks that the row's results file "
              "(results/multi30k_tiny.json) scores this one, and refuses to write the README "
              "until it does")


def check_source(checkpoint: Path, source: dict, config, out_dir: Path) -> None:
    """Refuse a checkpoint that is not what the shipped file's name and README say: an
    English->German model trained on Multi30k (on the full corpus, for annotated/pretrained),
    with float32 weights (the README compares the float16 file with its float32 source)."""
    pair = (config.source_lang, config.target_lang)
    if pair != PAIR or config.dataset not in DATASETS:
        held = ("a copy-task model" if config.dataset == "copy" else
                f"a model of {pair_name(vars(config))} trained on {config.dataset}")
        raise DataError(f"{checkpoint} holds {held}; {SHIPPED.name} and its README say "
                        f"English->German on Multi30k: give a checkpoint of such a model")
    if config.dataset != "multi30k" and committed_folder(out_dir) is not None:
        raise DataError(f"{checkpoint} was trained on {config.dataset}, not the full Multi30k: "
                        f"it cannot replace the shipped model; give --out-dir a scratch folder")
    dtypes = sorted({str(v.dtype).removeprefix("torch.") for v in source["model"].values()
                     if v.is_floating_point()})
    if dtypes != ["float32"]:
        made = f" (made from {source['halved_from']})" if source.get("halved_from") else ""
        raise DataError(f"{checkpoint} holds {', '.join(dtypes)} weights{made}, not float32; "
                        f"give the float32 checkpoint it was made from")


def check_own_files(out_dir: Path) -> None:
    """Refuse an --out-dir holding a README.md, multi30k_en_de.pt or multi30k_en_de.json that
    this script did not write (a README without its mark, a model that is not the one its
    record seals): they would be replaced."""
    readme, model, record = (out_dir / "README.md", out_dir / SHIPPED.name,
                             out_dir / SHIPPED.with_suffix(".json").name)
    foreign = []
    if readme.exists() and WRITTEN_BY not in readme.read_text(errors="replace"):
        foreign.append(f"{readme.name} (not written by experiments.pretrained)")
    if model.exists() or record.exists():
        try:
            sealed = json.loads(record.read_text())["sha256"] == sha256_file(model)
        except (OSError, ValueError, KeyError, TypeError):
            sealed = False
        if not sealed:
            foreign.append(f"{' and '.join(p.name for p in (model, record) if p.exists())} (not "
                           f"a model and the record that seals it, as this script writes them)")
    if foreign:
        raise DataError(f"--out-dir {out_dir} holds {'; '.join(foreign)}: they would be "
                        f"replaced; move them away or choose another --out-dir")


def compare(source: Path, shipped: Path, corpus, decode: dict, limit=None) -> dict:
    """Both models on test2016: scores, identical translations, and the source's examples."""
    model, config, tokenizer = load_model(source)
    src, ref = corpus.test_src[:limit], corpus.test_ref[:limit]
    full, halved = score(source, src, ref, **decode), score(shipped, src, ref, **decode)
    same = sum(a == b for a, b in zip(full["hypotheses"], halved["hypotheses"]))
    examples = src[:EXAMPLES]
    translations = translate_lines(model, tokenizer, examples, **decode)
    keep = ("bleu", "lowercase_bleu", "signature", "lowercase_signature")
    limited = ({"limited": first_sentences(len(src), len(corpus.test_src), "test2016")}
               if len(src) < len(corpus.test_src) else {})
    return {"sentences": len(src), **limited, "identical": same,
            "float32": {k: full[k] for k in keep}, "float16": {k: halved[k] for k in keep},
            "examples": [dict(source=s, translation=t) for s, t in zip(examples, translations)]}


def sweep_candidate(checkpoint: str, step: int) -> tuple[str, bool] | None:
    """(name, whether it is the best cased candidate after a lowercased one ranked first) if
    `checkpoint` (at `step`) is the final checkpoint (or average) of a run of the Multi30k
    sweep, as results/multi30k_sweep.json records it (the run folder's name and its steps);
    else None. The sweep's record is read checked (Record): a damaged one is one line."""
    sweep = Record(SWEEP, "python -m experiments.multi30k_sweep --data-dir DIR --out-dir "
                          "results")
    candidates, name = sweep.get("candidates", kind=dict), Path(checkpoint).parent.name
    if name not in candidates or sweep.get("candidates", name, "steps", rule=COUNT) != step:
        return None
    top = {n: max(sweep.get("candidates", n, "rows", i, "lowercase_bleu", rule=BLEU)
                  for i in range(len(sweep.get("candidates", n, "rows", kind=list))))
           for n in candidates}
    cased = [n for n in top if "lowercase=true" not in sweep.get("candidates", n, "overrides")]
    best_cased = max(cased, key=top.get) == name and \
        sweep.get("best", "candidate", kind=str) not in cased
    return name, best_cased


def provenance(checkpoint: str, step: int, config: dict) -> str:
    """Where the model comes from, as the checkpoint and the sweep's record say."""
    shape = (f"N={config['N']}, d_model={config['d_model']}, d_ff={config['d_ff']}, "
             f"h={config['h']}, P_drop={config['P_drop']}, a shared BPE vocabulary of "
             f"{config['vocab_size']:,}")
    found = sweep_candidate(checkpoint, step) if config["dataset"] == "multi30k" else None
    if found is None:
        return (f"comes from `{checkpoint}`: {shape}, trained {step:,} steps on "
                f"{DATASETS[config['dataset']]}")
    name, best_cased = found
    which = (", the best on val of the candidates that write German with its capitals (the "
             "one ranked first, trained on lowercased text, writes lowercase and scores the "
             "same on test2016: `results/multi30k_paired.md`)" if best_cased
             else f", its candidate {name}")
    return (f"comes from the Multi30k validation sweep (`results/multi30k_sweep.md`){which}: "
            f"{shape}, trained {step:,} steps in an hour on a 2-core CPU")


def render_readme(record: dict, config: dict, origin: str, command_line: str) -> str:
    """The README beside the shipped file; `origin`: provenance()'s words."""
    f32, f16 = record["float32"], record["float16"]
    source = ("the average of " + ", ".join(record["averaged_from"])
              if record.get("averaged_from")
              else f"the checkpoint {Path(record['source']).name}, not averaged")
    sentences = record.get("limited", f"all {record['sentences']:,} sentences of test2016")
    lines = [
        "# A trained English->German model that ships with the project", "",
        f"Written by `{command_line}` (do not edit by hand).", "",
        f"`multi30k_en_de.pt` ({record['bytes'] / 2**20:.1f} MiB, sha256 `{record['sha256']}`) "
        f"{origin}; {source}.", "",
        f"Its weights are stored in float16 (`{record['command']}`), half the size of the "
        f"float32 file; loading casts them back to float32, so the model computes in float32 "
        f"with weights rounded once. On {sentences} "
        f"(beam {record['decode']['beam_size']}, alpha {record['decode']['alpha']}) it "
        f"translates {record['identical']:,} exactly as its float32 source does:", "",
        "| weights | sacreBLEU (cased) | lowercased BLEU |", "| --- | --- | --- |",
        f"| float32 (the source) | {f32['bleu']} | {f32['lowercase_bleu']} |",
        f"| float16 (this file) | {f16['bleu']} | {f16['lowercase_bleu']} |", "",
        f"Signatures: `{f16['signature']}`; `{f16['lowercase_signature']}`.", "",
        f"The file carries that decoding (beam {record['decode']['beam_size']}, alpha "
        f"{record['decode']['alpha']}) as its defaults, so translating with it needs no options "
        f"to decode as it was scored:", "", "```bash",
        "echo 'A man in an orange hat.' | python -m annotated.translate "
        "--checkpoint annotated/pretrained/multi30k_en_de.pt", "```", "",
        f"The model was trained on {DATASETS[config['dataset']]}, which its authors distribute "
        "for non-commercial research and educational use; the same terms apply to this model. "
        "The tests check that the file verifies against its seal and translates the examples "
        "in `multi30k_en_de.json` word for word as its float32 source did.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
