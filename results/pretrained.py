"""The trained model shipped with the project (annotated/pretrained/): an averaged Multi30k
English->German checkpoint with its weights stored in float16, checked against its source.

    python -m results.pretrained CHECKPOINT --data-dir D [--beam-size 4] [--alpha 0.6]
        [--out-dir annotated/pretrained]

1. makes the float16 file as `python -m annotated.checkpoint half` does (float16 weights, no
   optimizer state: under half the size of the float32 file), in a temporary folder;
2. translates test2016 (1,000 sentences) with the float32 source and with the shipped file,
   counts the translations that are identical, and scores both (cased sacreBLEU, lowercased
   BLEU);
3. writes the float16 file as annotated/pretrained/multi30k_en_de.pt and, beside it,
   multi30k_en_de.json (where the model comes from, the file's sha256 and size, both scores,
   the number of identical translations, and EXAMPLES test sentences as the float32 source
   translates them, which the tests check the shipped file reproduces word for word) and
   README.md, for people.

Every input (the checkpoint, the data location) is checked before anything is written, and the
three files are replaced together at the end, or not at all.
"""
import argparse
import json
import tempfile
from pathlib import Path

from annotated.data.corpus import load_corpus
from annotated.data.files import sha256_file
from annotated.tools.cli import at_least, command, path
from annotated.training.checkpoint import atomic_save, config_from, half, load, load_model
from annotated.inference.translate import translate_lines
from results.common import ROOT, invocation, recorded, relative, score, write_files

SHIPPED = ROOT / "annotated" / "pretrained" / "multi30k_en_de.pt"
EXAMPLES = 8


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m results.pretrained",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=path, help="the averaged float32 checkpoint to ship")
    parser.add_argument("--data-dir", type=path, help="folder with the corpora (default: env "
                                                      "ANNOTATED_DATA_DIR)")
    parser.add_argument("--beam-size", type=at_least(1, high=1000), default=4,
                        help="beam size (default 4)")
    parser.add_argument("--alpha", type=at_least(0.0, float), default=0.6,
                        help="length penalty (default 0.6)")
    parser.add_argument("--limit", type=at_least(EXAMPLES), default=None,
                        help="compare on the first N test sentences only (a smoke test)")
    parser.add_argument("--out-dir", type=path, default=SHIPPED.parent,
                        help="where to write the files (default annotated/pretrained)")
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    source = load(args.checkpoint)                  # every input checked before any write
    config = config_from(source, args.checkpoint)
    corpus = load_corpus(config, data_dir=args.data_dir, log=lambda *_: None)
    shipped = args.out_dir / SHIPPED.name
    decode = dict(beam_size=args.beam_size, alpha=args.alpha, max_extra=50, batch_tokens=2000)
    with tempfile.TemporaryDirectory() as tmp:
        halved = Path(tmp) / SHIPPED.name           # made and checked here, shipped at the end
        atomic_save(half(args.checkpoint), halved)
        record = compare(args.checkpoint, halved, corpus, decode, args.limit)
        half_cmd = recorded(["python", "-m", "annotated.checkpoint", "half",
                             relative(args.checkpoint), "--out", relative(shipped)])
        record = {"source": relative(args.checkpoint), "command": half_cmd,
                  "averaged_from": source.get("averaged_from"), "run_id": source["run_id"],
                  "step": source["step"], "sha256": sha256_file(halved),
                  "bytes": halved.stat().st_size, "decode": decode, **record}
        readme = render_readme(record, source["config"], invocation("results.pretrained", argv))
        write_files({shipped: halved.read_bytes(),
                     shipped.with_suffix(".json"): json.dumps(record, indent=1,
                                                              ensure_ascii=False) + "\n",
                     args.out_dir / "README.md": readme})
    print(f"wrote {relative(shipped)} ({record['bytes'] / 2**20:.1f} MiB), "
          f"{relative(shipped.with_suffix('.json'))} and README.md: {record['identical']} of "
          f"{record['sentences']} test translations identical")


def compare(source: Path, shipped: Path, corpus, decode: dict, limit=None) -> dict:
    """Both models on test2016: scores, identical translations, and the source's examples."""
    model, config, tokenizer = load_model(source)
    src, ref = corpus.test_src[:limit], corpus.test_ref[:limit]
    full, halved = score(source, src, ref, **decode), score(shipped, src, ref, **decode)
    same = sum(a == b for a, b in zip(full["hypotheses"], halved["hypotheses"]))
    examples = src[:EXAMPLES]
    translations = translate_lines(model, tokenizer, examples, **decode)
    keep = ("bleu", "lowercase_bleu", "signature", "lowercase_signature")
    return {"sentences": len(src), "identical": same,
            "float32": {k: full[k] for k in keep}, "float16": {k: halved[k] for k in keep},
            "examples": [dict(source=s, translation=t) for s, t in zip(examples, translations)]}


def render_readme(record: dict, config: dict, command_line: str) -> str:
    f32, f16 = record["float32"], record["float16"]
    source = ("the average of " + ", ".join(record["averaged_from"])
              if record.get("averaged_from")
              else f"the checkpoint {Path(record['source']).name}, not averaged")
    lines = [
        "# A trained English->German model that ships with the project", "",
        f"Written by `{command_line}` (do not edit by hand).", "",
        f"`multi30k_en_de.pt` ({record['bytes'] / 2**20:.1f} MiB, sha256 `{record['sha256']}`) "
        f"comes from the Multi30k validation sweep (`results/multi30k_sweep.md`), the best "
        f"on val of the candidates that write German with its capitals (the one ranked first, "
        f"trained on lowercased text, writes lowercase and scores the same on test2016: "
        f"`results/multi30k_paired.md`): "
        f"N={config['N']}, d_model={config['d_model']}, d_ff={config['d_ff']}, h={config['h']}, "
        f"P_drop={config['P_drop']}, a shared BPE vocabulary of {config['vocab_size']:,}, "
        f"trained {record['step']:,} steps in an hour on a 2-core CPU; {source}.", "",
        f"Its weights are stored in float16 (`{record['command']}`), half the size of the "
        f"float32 file; loading casts them back to float32, so the model computes in float32 "
        f"with weights rounded once. On all {record['sentences']:,} sentences of test2016 "
        f"(beam {record['decode']['beam_size']}, alpha {record['decode']['alpha']}) it "
        f"translates {record['identical']:,} exactly as its float32 source does:", "",
        "| weights | sacreBLEU (cased) | lowercased BLEU |", "| --- | --- | --- |",
        f"| float32 (the source) | {f32['bleu']} | {f32['lowercase_bleu']} |",
        f"| float16 (this file) | {f16['bleu']} | {f16['lowercase_bleu']} |", "",
        f"Signatures: `{f16['signature']}`; `{f16['lowercase_signature']}`.", "",
        "Use it:", "", "```bash",
        "echo 'A man in an orange hat.' | python -m annotated.translate "
        "--checkpoint annotated/pretrained/multi30k_en_de.pt", "```", "",
        "The model was trained on Multi30k (Elliott et al., 2016), which its authors distribute "
        "for non-commercial research and educational use; the same terms apply to this model. "
        "The tests check that the file verifies against its seal and translates the examples "
        "in `multi30k_en_de.json` word for word as its float32 source did.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
