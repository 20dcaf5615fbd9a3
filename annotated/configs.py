"""The settings of a run: the model's shape, the data, training, decoding; the paper's base and
big models, every row of Table 3, and the presets this project trains on small machines.

The model's shape and dropout are annotated.model's `ModelConfig`, passed whole to the model
(`EncoderDecoder(config, vocab)`); `Config` extends it with the data, training and decoding,
so a preset is one line. What the paper reports for each row of Table 3 is beside the presets
(`TABLE3`, `PAPER`), not in any Config. Each field says, beside itself, what it allows and its
role (annotated.base.settings): `shape` (it defines the model's weights: checkpoints that
differ in it cannot be averaged) and `resumable` (a resumed run may change it); SHAPE and
RESUMABLE are read from them. This is the one place where settings are parsed and checked:
`apply_overrides(config, ["P_drop=0.3", ...])` reads `key=value` text by each field's type,
`option(name)` does the same for a command-line option that sets a field (--alpha), and every
Config is validated when it is made, so a bad value (P_drop=-1, N=0, an odd d_model with
sinusoids, an unknown dataset) stops the command before anything is built or written, with
one line naming the field, the value and what is allowed. Run `python -m annotated.configs`
to print Table 3's parameter column beside the paper's.
"""
import argparse
import types
from dataclasses import dataclass, fields, replace
from typing import NamedTuple

from annotated.base.cli import ArgumentParser, command, require_stdout, show
from annotated.base.errors import ConfigError
from annotated.base.settings import (ANY, LANGUAGE, POSITIVE, PROBABILITY, at_least, between, check,
                                     names_with, one_of, plain_type, rule_of, setting, shown)
from annotated.data.datasets import DATASETS
from annotated.model import ModelConfig

MAX_EXTRA = 1000          # tokens an output may run past its input (§6.3's parsing used 300)
MAX_ALPHA = 10            # length penalty exponent (§6.1 uses 0.6); lp(Y) stays a float
# The copy task's pairs are drawn in memory, one array each, before training starts: its size
# is bounded so that they are made in seconds, not for minutes before running out of memory.
MAX_COPY_PAIRS, MAX_COPY_SYMBOLS = 10 ** 6, 10 ** 8
# Fields that older versions of this code saved in every Config, and that a saved config may
# still carry: the paper's reported numbers, now in TABLE3.
RETIRED = ("paper_params_M", "paper_ppl", "paper_bleu")


@dataclass(frozen=True)
class Config(ModelConfig):
    """Everything a run needs: the model (ModelConfig's fields, first), its data, its training
    and its decoding. Frozen: `override` and `apply_overrides` make changed copies."""
    # data (§5.1)
    dataset: str = setting("wmt14", one_of(*DATASETS), shape=True)
    source_lang: str = setting("en", LANGUAGE)   # English->German, the paper's direction;
    target_lang: str = setting("de", LANGUAGE)   # Multi30k also has fr (the paper's en-fr)
    vocab_size: int = setting(37_000, ((lambda v: 5 <= v <= 10 ** 7), "5 (4 special ids and "
                              "one symbol) <= vocab_size <= 10,000,000"), shape=True)
    lowercase: bool = setting(False, ANY)        # not in the paper: the tokenizer lowercases
                                                 # all text, as the Multi30k literature does
    max_sentence_len: int = setting(256, ((lambda v: 2 <= v <= 10 ** 5), "2 (a token and "
                                    "EOS) <= value <= 100,000"))  # longer pairs are dropped
    copy_len: int = setting(10, between(1, 10 ** 5))    # copy task: 1..copy_len symbols
    copy_examples: int = setting(10_000, between(10, MAX_COPY_PAIRS))  # copy task: pairs
    # training (§5.2-5.4)
    eps_ls: float = setting(0.1, PROBABILITY)
    train_steps: int = setting(100_000, at_least(1), resumable=True)
    warmup_steps: int = setting(4000, at_least(1), resumable=True)
    lr_factor: float = setting(1.0, POSITIVE, resumable=True)   # 1 in §5.3
    cooldown_steps: int = setting(0, at_least(0), resumable=True)  # not in the paper: the rate
                                 # falls linearly to 0 over the last cooldown_steps (annotated.optim)
    max_tokens: int = setting(25_000, between(1, 10 ** 8))  # source tokens (and about as many
                                                            # target) per optimizer step
    accum_steps: int = setting(1, between(1, 10 ** 4), resumable=True)  # micro-batches a step
    seed: int = setting(1234, ((lambda v: 0 <= v < 2 ** 63), "0 <= seed < 2**63"))
    amp: str = setting("none", one_of("none", "bf16", "fp16"), resumable=True)   # bf16: CPU or GPU
    compile: bool = setting(False, ANY, resumable=True)       # torch.compile the model
    cuda_graphs: bool = setting(False, ANY, resumable=True)   # ... and replay it as CUDA graphs
    log_every: int = setting(100, at_least(1), resumable=True)    # steps between metric lines
    eval_every: int = setting(1000, at_least(1), resumable=True)  # ... validation passes
    ckpt_every: int = setting(1000, at_least(1), resumable=True)  # ... checkpoints
    ckpt_minutes: float = setting(10.0, POSITIVE, resumable=True)   # ... or minutes
    keep_last: int = setting(5, at_least(1), resumable=True)  # checkpoints kept on disk
    # decoding (§6.1)
    beam_size: int = setting(4, between(1, 1000), resumable=True)
    alpha: float = setting(0.6, between(0, MAX_ALPHA, "alpha"), resumable=True)  # lp(Y) =
                                                                 # ((5 + |Y|) / 6)^alpha
    max_extra: int = setting(50, between(0, MAX_EXTRA, "max_extra"), resumable=True)

    def __post_init__(self):
        super().__post_init__()
        languages = DATASETS[self.dataset].languages
        pair = {self.source_lang, self.target_lang}
        if self.dataset != "copy" and (len(pair) < 2 or languages and not pair <= languages):
            raise ConfigError(f"config: source_lang = {shown(self.source_lang)}, target_lang = "
                              f"{shown(self.target_lang)}: dataset {self.dataset} needs two "
                              f"different languages" + (f" of {', '.join(sorted(languages))}"
                                                        if languages else "")
                              + ("; dataset=files takes any pair" if languages else
                                 "; give each side its own language code"))
        if self.dataset == "copy" and self.copy_examples * self.copy_len > MAX_COPY_SYMBOLS:
            raise ConfigError(f"config: copy_examples x copy_len = {self.copy_examples:,} x "
                              f"{self.copy_len:,} symbols, above {MAX_COPY_SYMBOLS:,}: the copy "
                              f"task's pairs are made in memory before training; lower "
                              f"copy_examples or copy_len")
        if self.cooldown_steps > self.train_steps:
            raise ConfigError(f"config: cooldown_steps = {self.cooldown_steps} is above "
                              f"train_steps = {self.train_steps}; the cool-down is part of "
                              f"the run's train_steps")
        if self.cuda_graphs and (not self.compile or self.accum_steps > 1):
            raise ConfigError(f"config: cuda_graphs = true needs compile = true and accum_steps "
                              f"= 1 (here compile = {str(self.compile).lower()}, accum_steps = "
                              f"{self.accum_steps}): the graphs are the compiled step's, one "
                              f"micro-batch a step; set those, or cuda_graphs=false")
        bound = (f"copy_len + 1 = {self.copy_len + 1}" if self.longest_sentence()
                 < self.max_sentence_len else f"max_sentence_len = {self.max_sentence_len}")
        if self.max_tokens < self.longest_sentence():
            raise ConfigError(f"config: max_tokens = {self.max_tokens} is below {bound}, the "
                              f"longest sentence training keeps: a batch must hold it; raise "
                              f"max_tokens or lower {bound.split(' ')[0]}")
        if self.positional == "learned" and self.max_len < self.longest_sentence():
            raise ConfigError(f"config: max_len = {self.max_len} is below {bound}, the longest "
                              f"sentence training keeps: learned positions (Table 3 row E) cover "
                              f"only max_len positions; raise max_len or lower "
                              f"{bound.split(' ')[0]}")

    @staticmethod
    def from_dict(values: dict) -> "Config":
        """A Config from saved fields (a checkpoint, a results file); unknown fields are an
        error, RETIRED ones are passed over."""
        values = {k: v for k, v in values.items() if k not in RETIRED}
        unknown = sorted(set(values) - {f.name for f in fields(Config)})
        if unknown:
            raise ConfigError(f"config fields {', '.join(unknown)} are unknown to this version "
                              f"of the code (written by a newer version, or edited): update "
                              f"this copy of the project, or use a file this version wrote")
        return Config(**values)

    def longest_sentence(self) -> int:
        """The most tokens (EOS included) a training sentence of this config can have:
        max_sentence_len, beyond which training drops a pair, or the copy task's copy_len
        symbols and EOS where that is fewer."""
        if self.dataset == "copy":
            return min(self.copy_len + 1, self.max_sentence_len)
        return self.max_sentence_len

    def parameter_count(self, vocab: int | None = None) -> int:
        """The model's parameter count with one shared vocabulary of `vocab` (default
        vocab_size), from its shapes alone."""
        return super().parameter_count(vocab or self.vocab_size)

    def override(self, **changes) -> "Config":
        """A copy with some fields changed; an unknown field is an error naming the valid ones."""
        valid = [f.name for f in fields(self)]
        unknown = sorted(set(changes) - set(valid))
        if unknown:
            spaced = next((k for k in unknown if k.strip() in valid), None)
            if spaced is not None:            # "N =1": the key holds a space one cannot see
                raise ConfigError(f"config key {shown(spaced)} has spaces around it; write "
                                  f"{spaced.strip()}=VALUE, with no space before the =")
            raise ConfigError(f"unknown config key(s) "
                              f"{', '.join(shown(k, quote=False) for k in unknown)}; valid keys: "
                              f"{', '.join(valid)}")
        return replace(self, **changes)


SHAPE = names_with(Config, "shape")          # checkpoints that differ here cannot be averaged
RESUMABLE = names_with(Config, "resumable")  # what --resume may change
FIELDS = {f.name: f for f in fields(Config)}


def parse_value(key: str, text: str):
    """`text` as a value of the Config field `key`, read by the field's type."""
    if isinstance(FIELDS[key].type, types.UnionType) and text.lower() == "none":
        return None                                          # e.g. float | None
    kind = plain_type(FIELDS[key].type)
    booleans = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
    # int() and float() read "1_0" as 10 and Arabic-Indic digits as digits: a typo would pass
    if kind in (int, float) and (not text.isascii() or "_" in text):
        raise ConfigError(f"config: {key} = {shown(text)}: write the number with the digits "
                          f"0-9 alone (no _ between them, no other script's digits)")
    try:
        return booleans[text.lower()] if kind is bool else kind(text)
    except (KeyError, ValueError):
        raise ConfigError(f"config: {key} = {shown(text)} is not a{'n' if kind is int else ''} "
                          f"{kind.__name__}; allowed: {rule_of(FIELDS[key])[1]}") from None


def option(name: str):
    """An argparse type for a command-line option that sets the Config field `name` (--alpha,
    --beam-size, --max-extra, --vocab): parsed by the field's type and checked by the field's
    rule, so an option and its key=value are one setting with one rule."""
    def parse(text: str):
        try:
            value = parse_value(name, text)
            check(FIELDS[name], value)
        except ConfigError as e:
            raise argparse.ArgumentTypeError(str(e).removeprefix("config: ")) from None
        return value
    parse.__name__ = name                   # argparse names the type in its messages
    return parse


def merged(*groups: list[str]) -> list[str]:
    """key=value items of several groups with each key once, a later group's value winning:
    for code that composes settings (a preset's, a candidate's, the user's). A command line
    gives each key once; apply_overrides refuses a key given twice."""
    values = {}
    for item in (item for group in groups for item in group):
        key, _, value = item.partition("=")
        values.pop(key, None)
        values[key] = value
    return [f"{key}={value}" for key, value in values.items()]


COPY_ONLY = ("copy_len", "copy_examples")               # read by the copy task alone
TEXT_ONLY = ("source_lang", "target_lang", "lowercase")  # read by text corpora alone


def apply_overrides(config: Config, items: list[str]) -> Config:
    """Config with `key=value` items applied, each parsed by its field's type; an unknown key
    is an error listing the valid ones, and so is a key that the config's dataset does not read
    (copy_len on a text corpus); the result is validated like every Config."""
    if isinstance(items, str):
        raise ConfigError(f"the overrides are one string, {items!r}, not a list of them; "
                          f"give a list: [{items!r}]")
    raw = {}
    for item, after in zip(items, [*items[1:], None]):
        key, sep, text = item.partition("=")
        if sep and key in FIELDS and not text:
            raise ConfigError(f"{item} has no value" + (f" ({after!r} follows it: a space after "
                              f"=? write {key}={after})" if after and "=" not in after else "")
                              + f"; e.g. {key}=VALUE")
        if not sep or not key.strip():
            raise ConfigError(f"expected key=value, got {shown(item)}: "
                              f"{'no =' if not sep else 'the key before = is missing'}; "
                              f"e.g. P_drop=0.3 (keys: {', '.join(FIELDS)})")
        if key in raw:
            raise ConfigError(f"{key} is given twice ({key}={raw[key]} and {item}); give it once")
        raw[key] = text
    config.override(**{k: None for k in raw if k not in FIELDS})    # raises for unknown keys
    result = config.override(**{k: parse_value(k, v) for k, v in raw.items()})
    copy = result.dataset == "copy"
    unused = [k for k in raw if k in (TEXT_ONLY if copy else COPY_ONLY)]
    if unused:
        raise ConfigError(f"{', '.join(unused)}: no effect with dataset={result.dataset} (they "
                          f"are for {'text corpora' if copy else 'the copy task, dataset=copy'}); "
                          f"leave {'it' if len(unused) == 1 else 'them'} out")
    if "max_len" in raw and result.positional != "learned":
        raise ConfigError(f"max_len={raw['max_len']}: no effect with positional="
                          f"{result.positional} (it bounds the learned positions' table; the "
                          f"sinusoids (§3.5) have no bound); leave it out, or give "
                          f"positional=learned")
    return result


class Paper(NamedTuple):
    """What Table 3 reports for a row (newstest2013, the development set): perplexity per
    wordpiece, BLEU, and parameters in millions (None where the paper leaves the cell blank)."""
    ppl: float
    bleu: float
    params_M: float | None = None


base = Config()

# Table 3, row by row: the row's model, as changes to the base one, and what the paper
# reports for it.
TABLE3: dict[str, tuple[dict, Paper]] = {
    "base": ({}, Paper(4.92, 25.8, 65)),
    # (A) heads, at constant computation: h * d_k = d_model
    "A1": (dict(h=1, d_k=512, d_v=512), Paper(5.29, 24.9)),
    "A2": (dict(h=4, d_k=128, d_v=128), Paper(5.00, 25.5)),
    "A3": (dict(h=16, d_k=32, d_v=32), Paper(4.91, 25.8)),
    "A4": (dict(h=32, d_k=16, d_v=16), Paper(5.01, 25.4)),
    # (B) smaller attention keys
    "B1": (dict(d_k=16), Paper(5.16, 25.1, 58)),
    "B2": (dict(d_k=32), Paper(5.01, 25.4, 60)),
    # (C) model size
    "C1": (dict(N=2), Paper(6.11, 23.7, 36)),
    "C2": (dict(N=4), Paper(5.19, 25.3, 50)),
    "C3": (dict(N=8), Paper(4.88, 25.5, 80)),
    "C4": (dict(d_model=256, d_k=32, d_v=32), Paper(5.75, 24.5, 28)),
    "C5": (dict(d_model=1024, d_k=128, d_v=128), Paper(4.66, 26.0, 168)),
    "C6": (dict(d_ff=1024), Paper(5.12, 25.4, 53)),
    "C7": (dict(d_ff=4096), Paper(4.75, 26.2, 90)),
    # (D) regularisation
    "D1": (dict(P_drop=0.0), Paper(5.77, 24.6)),
    "D2": (dict(P_drop=0.2), Paper(4.95, 25.5)),
    "D3": (dict(eps_ls=0.0), Paper(4.67, 25.3)),
    "D4": (dict(eps_ls=0.2), Paper(5.47, 25.7)),
    # (E) learned positional embeddings instead of sinusoids
    "E": (dict(positional="learned"), Paper(4.92, 25.7)),
    "big": (dict(d_model=1024, d_ff=4096, h=16, P_drop=0.3, train_steps=300_000, keep_last=20),
            Paper(4.33, 26.4, 213)),
}
TABLE3_ROWS = list(TABLE3)
PAPER: dict[str, Paper] = {row: paper for row, (_, paper) in TABLE3.items()}

PRESETS: dict[str, Config] = {
    **{row: base.override(**changes) for row, (changes, _) in TABLE3.items()},
    # Small presets for one CPU (not in the paper). copy: learn to repeat the input, the
    # smallest check that the model learns anything; one layer a stack is enough.
    "copy": Config(dataset="copy", vocab_size=11, N=1, d_model=64, d_ff=128, h=4, d_k=16,
                   d_v=16, P_drop=0.0, eps_ls=0.0, train_steps=1000, warmup_steps=100,
                   lr_factor=0.25, max_tokens=3000, log_every=50, eval_every=250,
                   ckpt_every=500, keep_last=2),
    # sample: the first command a newcomer runs: English->German on the Multi30k pairs that
    # ship with the package, offline, in minutes; it learns the captions' common phrases, not
    # the language (a demonstration, not a result).
    "sample": Config(dataset="multi30k_sample", vocab_size=2000, N=2, d_model=128, d_ff=512,
                     h=4, d_k=32, d_v=32, P_drop=0.1, eps_ls=0.1, train_steps=700,
                     warmup_steps=200, lr_factor=0.5, max_tokens=1024, log_every=50,
                     eval_every=100, ckpt_every=100, keep_last=3),
    # multi30k: English->German image captions, a model small enough to train on a 2-core
    # CPU; a checkpoint every 3 minutes, so averaging the last 5 (§6.1) covers a quarter hour.
    "multi30k": Config(dataset="multi30k", vocab_size=8000, N=3, d_model=256, d_ff=1024,
                       h=8, d_k=32, d_v=32, P_drop=0.1, eps_ls=0.1, train_steps=20_000,
                       warmup_steps=600, lr_factor=0.4, max_tokens=2048, log_every=50,
                       eval_every=250, ckpt_every=250, ckpt_minutes=3.0, keep_last=5),
    # multi30k_tiny: the "Transformer-tiny" of the Multi30k literature (4 layers a stack, width
    # 128, 4 heads, a shared 10k vocabulary), with the paper's dropout, 0.1. Which variants of
    # it were tried, and which one ships, is in results/multi30k_sweep.md.
    "multi30k_tiny": Config(dataset="multi30k", vocab_size=10_000, N=4, d_model=128, d_ff=256,
                            h=4, d_k=32, d_v=32, P_drop=0.1, eps_ls=0.1, train_steps=20_000,
                            warmup_steps=1000, lr_factor=0.7, max_tokens=2048, log_every=50,
                            eval_every=500, ckpt_every=500, ckpt_minutes=2.0, keep_last=10),
}


def get(name: str) -> Config:
    if name not in PRESETS:
        raise ConfigError(f"unknown config {shown(name)}; choose one of: {', '.join(PRESETS)}")
    return PRESETS[name]


def table3_params_table(vocab: int = 37_000) -> str:
    """Table 3's parameter column as a Markdown table: for every row, our count with one
    shared vocabulary of `vocab` tokens and the paper's, in millions, and the gap."""
    lines = ["| row | ours (M) | paper (M) | ours - paper |", "| --- | ---: | ---: | ---: |"]
    for row in TABLE3_ROWS:
        ours, paper = get(row).parameter_count(vocab) / 1e6, PAPER[row].params_M
        gap = f"{ours - paper:+.2f}" if paper else ""
        lines.append(f"| {row} | {ours:.2f} | {paper if paper else ''} | {gap} |")
    return "\n".join(lines)


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m annotated.configs",
                            description="Table 3's parameter column from the presets")
    parser.add_argument("--vocab", type=option("vocab_size"), default=37_000,
                        help="shared BPE vocabulary size")
    return parser.parse_args(argv)


@command
def main(argv=None):
    """`python -m annotated.configs`: Table 3's parameter column beside the paper's."""
    args = parse_args(argv)
    require_stdout("the table")
    show(f"shared vocabulary V = {args.vocab:,}; one V x d_model matrix, tied three ways\n"
         + table3_params_table(args.vocab))


if __name__ == "__main__":
    main()
