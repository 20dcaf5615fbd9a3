"""Is our lowercased BLEU the one the Multi30k literature reports? One model's test2016
translations scored both ways.

    python -m experiments.multi30k_metric --checkpoint CKPT [--beam-size B] [--alpha A]
        [--data-dir D] [--out-dir results] [--limit N]

We report lowercased BLEU as sacreBLEU -lc with its 13a tokenizer, on detokenized text. The
published Multi30k baselines (fairseq systems such as Wu et al., 2021) score text prepared the
way the Multi30k authors distribute it in their `tok/` folders: lowercased, punctuation
normalised and tokenized by the Moses scripts (quotes and apostrophes escaped as `&quot;` and
`&apos;`, hyphenated words kept whole), then BLEU on those tokens as they stand. This script
translates test2016 with a checkpoint, prepares hypotheses and references the Moses way
(sacremoses, the Python port of the Moses scripts) and scores them both ways, so that the
difference between the two metrics is measured rather than assumed. Writes multi30k_metric.md
and .json (runs/results by default; a smoke test, --limit, never into the committed results/).
"""
import json

from sacrebleu.metrics import BLEU
from sacremoses import MosesPunctNormalizer, MosesTokenizer

from annotated.base.cli import ArgumentParser, command, number, path
from annotated.base.files import write_files
from annotated.base.settings import at_least
from annotated.configs import option
from experiments.commands import invocation
from experiments.folders import add_out_dir, check_out_dir, relative
from experiments.report import first_sentences, markdown_table
from experiments.scoring import multi30k_config, score, split_text


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m experiments.multi30k_metric",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=path, required=True,
                        help="a Multi30k model (e.g. annotated/pretrained/multi30k_en_de.pt)")
    parser.add_argument("--beam-size", type=option("beam_size"), default=4,
                        help="beam size (default 4)")
    parser.add_argument("--alpha", type=option("alpha"), default=1.4,
                        help="length penalty alpha (default 1.4, the shipped model's)")
    parser.add_argument("--data-dir", type=path, help="folder with the corpora (default: env "
                                           "ANNOTATED_DATA_DIR)")
    parser.add_argument("--limit", type=number(at_least(10)), default=None,
                        help="only the first N sentences (a smoke test)")
    add_out_dir(parser)
    return parser.parse_args(argv)


def moses_prepare(lines: list[str], lang: str) -> list[str]:
    """Lowercase, normalise punctuation and tokenize as the Multi30k `tok/` files are made."""
    normalizer, tokenizer = MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)
    return [tokenizer.tokenize(normalizer.normalize(line.lower()), return_str=True, escape=True)
            for line in lines]


def moses_bleu(hyps: list[str], refs: list[str], lang: str):
    """Corpus BLEU on Moses-prepared text, taking its tokens as they are and without smoothing
    (multi-bleu.perl's and fairseq's way); returns sacreBLEU's score object and signature. The
    text is lowercased already; lowercase=True only makes the signature say so."""
    metric = BLEU(tokenize="none", lowercase=True, smooth_method="none", force=True)
    result = metric.corpus_score(moses_prepare(hyps, lang), [moses_prepare(refs, lang)])
    return result, str(metric.get_signature())


@command
def main(argv=None):
    args = parse_args(argv)
    config = multi30k_config(args.checkpoint)
    sources, references = split_text(config, args.data_dir, "test")
    check_out_dir(args.out_dir, args.limit)
    total = len(sources)
    sources, references = sources[:args.limit], references[:args.limit]
    ours = score(args.checkpoint, sources, references, beam_size=args.beam_size,
                 alpha=args.alpha)
    moses, moses_signature = moses_bleu(ours.pop("hypotheses"), references, config.target_lang)
    result = dict(checkpoint=relative(args.checkpoint), pair=f"{config.source_lang}-"
                  f"{config.target_lang}", sentences=len(sources), beam_size=args.beam_size,
                  alpha=args.alpha, ours=ours,
                  moses=dict(lowercase_bleu=round(moses.score, 2), signature=moses_signature,
                             ref_tokens=moses.ref_len, hyp_tokens=moses.sys_len))
    if len(sources) < total:                          # a smoke test (--limit) says so
        result["limited"] = first_sentences(len(sources), total)
    text = render_markdown(result, invocation("experiments.multi30k_metric", argv))
    write_files({args.out_dir / "multi30k_metric.json": json.dumps(result, indent=1),
                 args.out_dir / "multi30k_metric.md": text})
    print(text)


def render_markdown(result: dict, command_line: str) -> str:
    ours, moses = result["ours"], result["moses"]
    scored = result.get("limited", f"the {result['sentences']:,} sentences")
    rows = [["sacreBLEU -lc, 13a tokenizer, detokenized text (ours)", ours["lowercase_bleu"],
             f"{ours['lowercase_ref_tokens']:,}", f"`{ours['lowercase_signature']}`"],
            ["Moses-prepared text, BLEU on its tokens (the published baselines')",
             moses["lowercase_bleu"], f"{moses['ref_tokens']:,}", f"`{moses['signature']}`"]]
    return "\n".join([
        "# Multi30k: our lowercased BLEU against the literature's", "",
        f"Written by `{command_line}` (do not edit by hand).", "",
        f"`{result['checkpoint']}` ({result['pair']}) translated {scored} of test2016 with "
        f"beam {result['beam_size']}, alpha {result['alpha']}; the "
        "same translations are scored twice. Moses-prepared means lowercased, punctuation "
        "normalised and tokenized by sacremoses (the Python port of the Moses scripts), quotes "
        "and apostrophes escaped, as the Multi30k authors' `tok/` files are.", "",
        *markdown_table(["lowercased BLEU", "score", "reference tokens", "signature"], rows), "",
        f"Difference: {moses['lowercase_bleu'] - ours['lowercase_bleu']:+.2f} BLEU.", ""])


if __name__ == "__main__":
    main()
