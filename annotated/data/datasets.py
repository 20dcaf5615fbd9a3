"""The datasets a run can train on, in one table that the settings (annotated.configs) check
`dataset`, `source_lang` and `target_lang` against and the data code (annotated.data.corpus)
loads from.

    copy             synthetic: random symbol sequences to repeat (no languages, no files)
    multi30k         Multi30k image captions: English, German, French; the data location, or
                     downloaded into the cache
    multi30k_sample  the first Multi30k pairs, shipped inside the package: offline
    wmt14            the paper's WMT 2014 English-German, as prepare_wmt14 writes it
    files            your own parallel corpus in the data location, in any two languages
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Dataset:
    languages: frozenset | None   # the languages it has; None: any two (files) or none (copy)
    location: bool                # read from the data location (--data-dir)


DATASETS = {
    "copy": Dataset(None, location=False),
    "multi30k": Dataset(frozenset({"en", "de", "fr"}), location=True),
    "multi30k_sample": Dataset(frozenset({"en", "de", "fr"}), location=False),
    "wmt14": Dataset(frozenset({"en", "de"}), location=True),
    "files": Dataset(None, location=True),
}
