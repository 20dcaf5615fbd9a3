"""A real English->German model, trained, averaged, decoded and scored with this project's own
commands on this machine.

    python -m results.multi30k [--minutes 60] [--data-dir D] [--run runs/multi30k] [--skip-train]
        [key=value ...]

key=value overrides fields of the preset, as in `python -m annotated.train` (the tests train a
tiny model on the shipped sample: dataset=multi30k_sample N=1 ...).

--skip-train scores an existing run again; the training command and wall time come from the
run's train.json, which the training step writes.

1. trains the `multi30k` preset for --minutes of wall time (python -m annotated.train);
2. averages its last 5 checkpoints (python -m annotated.checkpoint average, §6.1);
3. decodes the full test2016 set (1,000 sentences) with the paper's beam search and scores it
   with sacreBLEU (cased, detokenized, signature printed), then compares on the same model:
   greedy vs beam 4, alpha 0 vs 0.6, averaged vs last checkpoint;
4. writes multi30k.md (every number with its command), multi30k.json (for chapter 08) and
   multi30k_attention.npz (attention maps of test sentences) into runs/results/, or with
   --out-dir results over the committed files that chapter 08 reads.
"""
import argparse
import json
from pathlib import Path

import numpy as np

from annotated.training.checkpoint import checkpoints, config_from, load, load_model
from annotated.data.corpus import load_corpus
from annotated.inference.search import attention_maps
from annotated.tools.cli import command
from results.common import ROOT, average, invocation, markdown_table, perplexity, score, train

BEAM = dict(beam_size=4, alpha=0.6, max_extra=50, batch_tokens=2000)


@command
def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m results.multi30k",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out-dir", type=Path, default=ROOT / "runs" / "results",
                        help="where to write the results (default runs/results; pass "
                             "--out-dir results to replace the committed ones)")
    parser.add_argument("--run", type=Path, default=ROOT / "runs" / "multi30k")
    parser.add_argument("--skip-train", action="store_true", help="score an existing run")
    parser.add_argument("--average", type=int, default=5, help="checkpoints to average")
    parser.add_argument("--limit", type=int, default=None,
                        help="score only the first N >= 3 test sentences (a smoke test)")
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="override fields of the multi30k preset")
    args = parser.parse_intermixed_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    if args.limit is not None and args.limit < 3:
        parser.error(f"--limit {args.limit}: at least 3 (the attention maps use 3 test sentences)")

    result = {"preset": "multi30k"}
    train_record = args.run / "train.json"      # how the run was made, for --skip-train
    if not args.skip_train:
        seconds, cmd = train("multi30k", args.run, minutes=args.minutes, data_dir=args.data_dir,
                             overrides=args.overrides)
        train_record.write_text(json.dumps({"wall_minutes": round(seconds / 60, 1),
                                            "command": cmd}))
    if train_record.is_file():
        result["train"] = json.loads(train_record.read_text())
    metrics = [json.loads(line) for line in (args.run / "metrics.jsonl").read_text().splitlines()]
    result["metrics"] = metrics
    found = checkpoints(args.run)
    last = found[-1]
    avg, avg_cmd = average(args.run, min(args.average, len(found)))
    result["average"] = {"command": avg_cmd, "checkpoints": [p.name for p in found[-args.average:]]}

    config = config_from(load(last), last)                 # what the run trained
    result["config"] = {k: v for k, v in vars(config).items() if not k.startswith("paper_")}
    corpus = load_corpus(config, data_dir=args.data_dir, log=lambda *_: None)
    src, ref = corpus.test_src[:args.limit], corpus.test_ref[:args.limit]
    runs = {
        "beam 4, alpha 0.6, averaged (the paper's setting)": (avg, BEAM),
        "greedy, averaged": (avg, dict(BEAM, greedy=True)),
        "beam 4, alpha 0, averaged": (avg, dict(BEAM, alpha=0.0)),
        f"beam 4, alpha 0.6, last checkpoint ({last.name})": (last, BEAM),
    }
    scores = {}
    for name, (ckpt, decode) in runs.items():
        s = score(ckpt, src, ref, **decode)
        s["mean_output_words"] = round(float(np.mean([len(h.split()) for h in s["hypotheses"]])), 2)
        scores[name] = s
        print(f"{name}: sacreBLEU {s['bleu']}  ({s['signature']})", flush=True)
    main_run = scores[next(iter(runs))]
    result["test2016"] = {k: {kk: vv for kk, vv in v.items() if kk != "hypotheses"}
                          for k, v in scores.items()}
    result["reference_mean_words"] = round(float(np.mean([len(r.split()) for r in ref])), 2)
    result["valid"] = {"averaged": perplexity(avg, corpus.valid),
                       "last": perplexity(last, corpus.valid)}
    result["examples"] = [dict(source=s, reference=r, translation=h) for s, r, h
                          in zip(src[:8], ref[:8], main_run["hypotheses"])]
    (args.out_dir / "multi30k.json").write_text(json.dumps(result, indent=1))

    # attention maps of the averaged model on three test sentences, for chapter 08
    model, _, tokenizer = load_model(avg)
    maps = {}
    for j, i in enumerate((0, 1, 2)):
        src_ids = tokenizer.encode(src[i])
        out_ids = tokenizer.encode(main_run["hypotheses"][i])
        for kind, array in attention_maps(model, src_ids, out_ids).items():
            maps[f"{j}_{kind}"] = array
        maps[f"{j}_src_pieces"] = np.array([tokenizer.decode([t]) for t in src_ids] + ["</s>"])
        maps[f"{j}_out_pieces"] = np.array(["<s>"] + [tokenizer.decode([t]) for t in out_ids])
    np.savez_compressed(args.out_dir / "multi30k_attention.npz", **maps)

    lines = ["# Multi30k English->German: trained and scored on this machine", "",
             f"Written by `{invocation('results.multi30k', argv)}`"
             " (do not edit by hand).", ""]
    if "train" in result:
        lines += [f"Training: `{result['train']['command']}`: "
                  f"{result['train']['wall_minutes']} minutes of wall time, "
                  f"{metrics[-1].get('step', '?')} steps.", ""]
    lines += [f"Averaging (§6.1): `{avg_cmd}`", "",
              f"## test2016 ({len(src):,} sentences), sacreBLEU", "",
              f"Signature: `{main_run['signature']}`", ""]
    lines += markdown_table(
        ["decoding", "sacreBLEU", "paper-style tokenized BLEU", "mean output words", "sentences/s"],
        [[k, v["bleu"], v["paper_bleu"], v["mean_output_words"], v["sentences_per_s"]]
         for k, v in scores.items()])
    lines += ["", f"Reference mean length: {result['reference_mean_words']:.2f} words.", "",
              "## Validation (val, 1,014 sentences)", ""]
    lines += markdown_table(["checkpoint", "smoothed loss", "perplexity", "token accuracy"],
                            [[k, v["loss"], v["ppl"], v["accuracy"]]
                             for k, v in result["valid"].items()])
    lines += ["", "## Translations beside their references", ""]
    for e in result["examples"]:
        lines += [f"- EN: {e['source']}", f"  - ours: {e['translation']}",
                  f"  - reference: {e['reference']}"]
    (args.out_dir / "multi30k.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out_dir / 'multi30k.md'}")


if __name__ == "__main__":
    main()
