"""A small-scale Table 3 on Multi30k (issue 7): rows A, D and E of the paper's ablation, each
trained with the same budget (the same number of optimizer steps on the same batches).

    python -m results.table3_small [--steps 2000] [--data-dir D]     # OMP_NUM_THREADS sets threads

The paper varies one thing at a time around its base model and reports perplexity and BLEU on
its development set; we do the same around a reduced model (`SMALL` below, smaller than the
`multi30k` preset so that the five runs of 2,000 steps take about an hour on a 2-core CPU) and
score on Multi30k's val split with the paper's beam search. Each row is one run with one seed,
so differences of about one BLEU point may be run-to-run noise; the paper's own differences in
rows A, D and E are of that size too.
"""
import argparse
import json
from pathlib import Path

from annotated.configs import get
from annotated.data import load_corpus
from results.common import ROOT, invocation, markdown_table, perplexity, score, train

HERE = Path(__file__).resolve().parent
SMALL = dict(N=2, d_model=128, d_ff=512, h=8, d_k=16, d_v=16, max_tokens=2048, warmup_steps=400,
             eval_every=10_000, ckpt_every=10_000, ckpt_minutes=10_000, keep_last=1)
ROWS = {   # name: (paper row, what changes, the paper's dev PPL and BLEU for that row)
    "base": ("base", {}, (4.92, 25.8)),
    "A: h=1": ("A1", dict(h=1, d_k=128, d_v=128), (5.29, 24.9)),
    "D: eps_ls=0": ("D3", dict(eps_ls=0.0), (4.67, 25.3)),
    "D: P_drop=0": ("D1", dict(P_drop=0.0), (5.77, 24.6)),
    "E: learned positions": ("E", dict(positional="learned", max_len=256), (4.92, 25.7)),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out-dir", type=Path, default=HERE, help="where to write the results")
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "table3_small")
    parser.add_argument("--limit", type=int, default=None, help="score only N val sentences")
    args = parser.parse_args()

    config = get("multi30k").override(**SMALL)
    corpus = load_corpus(config, data_dir=args.data_dir, log=lambda *_: None)
    tok = corpus.tokenizer
    sources = [tok.decode(s.tolist()) for s, _ in corpus.valid][:args.limit]
    references = [tok.decode(t.tolist()) for _, t in corpus.valid][:args.limit]

    results = {}
    for name, (row, changes, paper) in ROWS.items():
        run = args.runs / row
        overrides = [f"{k}={v}" for k, v in {**SMALL, **changes}.items()]
        seconds, cmd = train("multi30k", run, steps=args.steps, overrides=overrides,
                             data_dir=args.data_dir)
        ckpt = sorted(run.glob("ckpt_*.pt"))[-1]
        s = score(ckpt, sources, references, beam_size=4, alpha=0.6, max_extra=50)
        results[name] = dict(paper_row=row, paper_ppl=paper[0], paper_bleu=paper[1], command=cmd,
                             minutes=round(seconds / 60, 1), bleu=s["bleu"],
                             signature=s["signature"], **perplexity(ckpt, "valid", args.data_dir))
        print(f"{name}: BLEU {s['bleu']}  PPL {results[name]['ppl']}", flush=True)
    (args.out_dir / "table3_small.json").write_text(json.dumps(results, indent=1))

    lines = ["# Table 3, small scale, on Multi30k", "",
             f"Written by `{invocation('results.table3_small')}` (do not edit by "
             "hand). Every run: the `multi30k` preset with "
             + ", ".join(f"{k}={v}" for k, v in SMALL.items())
             + f", {args.steps} steps, then the row's change. Scored on Multi30k val "
             f"({len(sources):,} sentences; sacreBLEU of the detokenized BPE text, beam 4, "
             "alpha 0.6); perplexity per BPE token.", ""]
    lines += markdown_table(
        ["row", "change", "val PPL", "val BLEU", "paper row: PPL / BLEU", "minutes"],
        [[r["paper_row"], name, r["ppl"], r["bleu"],
          f"{r['paper_ppl']} / {r['paper_bleu']}", r["minutes"]]
         for name, r in results.items()])
    lines += ["", "Commands:", ""] + [f"- `{r['command']}`" for r in results.values()]
    (args.out_dir / "table3_small.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out_dir / 'table3_small.md'}")


if __name__ == "__main__":
    main()
