"""The shipped model: small enough to ship, sealed, and translating as its float32 source did."""
import json
import re

from conftest import says

from annotated.base.files import sha256_file
from annotated.inference.batched import translate_lines
from annotated.pretrained import MULTI30K_EN_DE
from annotated.store.checkpoint_file import load, load_model, verify

RECORD = json.loads(MULTI30K_EN_DE.with_suffix(".json").read_text())


def test_shipped_model_is_under_8_mb_sealed_and_the_recorded_file():
    assert MULTI30K_EN_DE.stat().st_size < 8 * 2**20
    verify(MULTI30K_EN_DE)                              # raises unless the sha256 seal holds
    assert sha256_file(MULTI30K_EN_DE) == RECORD["sha256"]
    payload = load(MULTI30K_EN_DE)
    assert payload["training"] is None                         # weights only, no optimizer
    assert payload.get("averaged_from") == RECORD["averaged_from"]   # None: not an average
    assert {str(v.dtype) for v in payload["model"].values() if v.is_floating_point()} == \
        {"torch.float16"}


def test_shipped_model_translates_as_its_float32_source_did():
    model, config, tokenizer = load_model(MULTI30K_EN_DE)
    assert (config.source_lang, config.target_lang) == ("en", "de")
    examples = RECORD["examples"]
    got = translate_lines(model, tokenizer, [e["source"] for e in examples], **RECORD["decode"])
    assert got == [e["translation"] for e in examples]


def test_rounding_to_float16_costs_no_translation_quality():
    """Measured when the file was made (python -m experiments.pretrained), on all of test2016."""
    assert RECORD["identical"] >= 0.97 * RECORD["sentences"]
    for metric in ("bleu", "lowercase_bleu"):
        assert abs(RECORD["float16"][metric] - RECORD["float32"][metric]) < 0.3, metric


def test_translations_cut_at_the_maximum_length_are_counted_and_named():
    model, config, tokenizer = load_model(MULTI30K_EN_DE)
    lines = [e["source"] for e in RECORD["examples"]]
    said = []
    translate_lines(model, tokenizer, lines, beam_size=1, log=said.append)
    assert not [line for line in said if line.startswith("note")]       # room to end: no note
    cut = translate_lines(model, tokenizer, lines, beam_size=1, max_extra=0, log=said.append)
    [note] = [line for line in said if line.startswith("note")]
    count, first = map(int, re.search(r"(\d+) translation.*line (\d+)", note).groups())
    assert 0 < count <= len(lines) and cut[first - 1]
    says(note, "maximum length", "input + 0", "--max-extra")
