"""Named configurations (annotated.configs): the paper's presets, Table 3's parameter column,
and the one place where every setting is parsed and validated."""
from dataclasses import fields

import pytest
from conftest import says

from annotated import configs
from annotated.model import EncoderDecoder


def test_table3_params_command_prints_every_row(capsys):
    configs.main([])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" | ")[0] for line in lines[3:]] == [f"| {r}" for r in configs.TABLE3_ROWS]
    assert "| base | 63.08 | 65 | -1.92 |" in lines and "| big | 214.25 | 213 | +1.25 |" in lines
    assert "| A1 | 63.08 |  |  |" in lines                 # no printed count: left blank


def test_presets_have_table3_values():
    base, big = configs.get("base"), configs.get("big")
    assert (base.N, base.d_model, base.d_ff, base.h, base.d_k, base.d_v) == (6, 512, 2048, 8, 64, 64)
    assert (base.P_drop, base.eps_ls, base.train_steps) == (0.1, 0.1, 100_000)
    assert (big.d_model, big.d_ff, big.h, big.P_drop, big.train_steps) == (1024, 4096, 16, 0.3, 300_000)
    assert configs.get("A1").h == 1 and configs.get("A1").d_k == 512
    assert configs.get("B1").d_k == 16 and configs.get("B1").d_v == 64
    assert configs.get("C4").d_model == 256 and configs.get("C4").d_k == 32
    assert configs.get("D3").eps_ls == 0.0 and configs.get("D2").P_drop == 0.2
    assert configs.get("E").positional == "learned"
    for row in configs.TABLE3_ROWS:
        assert configs.PAPER[row].ppl > 0 and configs.PAPER[row].bleu > 0
    assert configs.PAPER["big"] == configs.Paper(ppl=4.33, bleu=26.4, params_M=213)


def test_unknown_config_key_lists_the_valid_ones():
    with pytest.raises(configs.ConfigError) as error:
        configs.get("base").override(d_modle=3)
    says(error, "d_modle", "valid keys", "N, d_model")
    with pytest.raises(configs.ConfigError, match="choose one of"):
        configs.get("huge")


def test_overrides_are_parsed_by_field_type():
    config = configs.apply_overrides(configs.get("copy"), [
        "P_drop=0.3", "N=3", "compile=true", "amp=bf16", "d_k=none"])
    assert (config.P_drop, config.N, config.compile, config.amp) == (0.3, 3, True, "bf16")
    text = configs.apply_overrides(configs.get("sample"), ["lowercase=yes"])
    assert text.lowercase is True and configs.get("sample").lowercase is False
    assert config.d_k == config.d_model // config.h                  # None: d_model / h
    with pytest.raises(configs.ConfigError) as error:
        configs.apply_overrides(configs.get("copy"), ["N=three"])
    says(error, "N = 'three'", "not an int", "1 <= N <= 256")
    with pytest.raises(configs.ConfigError) as error:
        configs.apply_overrides(configs.get("copy"), ["compile=maybe"])
    says(error, "compile = 'maybe'", "not a bool")
    with pytest.raises(configs.ConfigError) as error:
        configs.apply_overrides(configs.get("copy"), ["N"])
    says(error, "key=value", "'N'")
    with pytest.raises(configs.ConfigError) as error:               # N= 1: a space after =
        configs.apply_overrides(configs.get("copy"), ["N=", "1"])
    says(error, "N= has no value", "'1' follows it", "N=1")
    with pytest.raises(configs.ConfigError) as error:               # not read letter by letter
        configs.apply_overrides(configs.get("copy"), "N=2")
    says(error, "one string", "'N=2'", "['N=2']")


@pytest.mark.parametrize("item,names", [
    ("P_drop=-1", ("P_drop = -1.0", "0 <= P_drop < 1")),
    ("eps_ls=1", ("eps_ls = 1.0", "0 <= eps_ls < 1")),
    ("N=0", ("N = 0", "1 <= N <= 256")),
    ("h=0", ("h = 0", "1 <= h <= 1,024")),
    ("d_model=1000000", ("d_model = 1000000", "2 <= d_model <= 65,536")),
    ("P_drop=nan", ("P_drop = nan", "finite", "0 <= P_drop < 1")),
    ("lr_factor=inf", ("lr_factor = inf", "finite", "> 0")),
    ("alpha=inf", ("alpha = inf", "finite", "0 <= alpha <= 10")),
    ("alpha=11", ("alpha = 11.0", "0 <= alpha <= 10")),
    ("seed=18446744073709551616", ("seed = 18446744073709551616", "0 <= seed")),
    ("max_extra=1000000000", ("max_extra = 1000000000", "0 <= max_extra")),
    ("beam_size=0", ("beam_size = 0", "1 <= beam_size <= 1,000")),
    ("vocab_size=4", ("vocab_size = 4", "special ids")),
    ("warmup_steps=0", ("warmup_steps = 0", ">= 1")),
    ("log_every=0", ("log_every = 0", ">= 1")),
    ("d_model=511", ("d_model = 511", "odd", "sinusoidal", "even d_model")),
    ("dataset=imagenet", ("dataset = 'imagenet'", "copy", "multi30k_sample", "wmt14", "files")),
    ("amp=fp8", ("amp = 'fp8'", "none", "bf16", "fp16")),
    ("positional=rotary", ("positional = 'rotary'", "sinusoidal or learned")),
    ("lr_factor=0", ("lr_factor = 0.0", "> 0")),
    ("cooldown_steps=-1", ("cooldown_steps = -1", ">= 0")),
    ("cooldown_steps=100001", ("cooldown_steps = 100001", "train_steps = 100000")),
    ("max_tokens=100", ("max_tokens = 100", "max_sentence_len = 256")),
    ("positional=learned max_len=100", ("max_len = 100", "max_sentence_len = 256", "learned")),
    ("P_drop=0.1 P_drop=0.3", ("P_drop", "twice", "P_drop=0.1", "P_drop=0.3", "once")),
    ("N=1.5", ("N = '1.5'", "not an int")),
    ("N=1_0", ("N = '1_0'", "digits 0-9", "no _")),
    ("N=\u0661", ("N = '\u0661'", "digits 0-9", "other script")),
    ("P_drop=0.\u0661", ("P_drop", "digits 0-9")),
    ("target_lang=English", ("target_lang = 'English'", "language code")),
    ("target_lang=DE", ("target_lang = 'DE'", "lower case", "train.en")),
    ("target_lang=pt_BR", ("target_lang = 'pt_BR'", "hyphen", "pt-BR")),
    ("copy_len=5", ("copy_len", "no effect", "dataset=wmt14", "copy task", "leave it out")),
    ("max_len=5", ("max_len=5", "no effect", "positional=sinusoidal", "positional=learned")),
    ("dataset=copy lowercase=true source_lang=fr", ("lowercase, source_lang", "no effect",
                                                    "dataset=copy", "text corpora")),
    ("target_lang=fr", ("wmt14", "two different languages", "de, en")),
    ("target_lang=en", ("wmt14", "two different languages")),
    ("dataset=files source_lang=en target_lang=en", ("files", "two different languages",
                                                      "its own language code")),
])
def test_every_invalid_setting_is_one_line_naming_field_value_and_what_is_allowed(item, names):
    with pytest.raises(configs.ConfigError) as error:
        configs.apply_overrides(configs.get("base"), item.split(" "))
    says(error, *names)


def test_the_copy_tasks_batch_and_positions_are_measured_by_its_own_longest_sentence():
    """copy_len + 1 tokens, or max_sentence_len where that is fewer: not max_sentence_len
    alone, which the copy task never reaches."""
    copy = configs.get("copy")
    assert copy.override(max_tokens=copy.copy_len + 1).max_tokens == 11
    with pytest.raises(configs.ConfigError) as error:
        copy.override(max_tokens=copy.copy_len)
    says(error, f"max_tokens = {copy.copy_len}", "copy_len + 1 = 11", "raise max_tokens")
    assert copy.override(positional="learned", max_len=copy.copy_len + 1).max_len == 11
    with pytest.raises(configs.ConfigError) as error:
        copy.override(positional="learned", max_len=copy.copy_len)
    says(error, f"max_len = {copy.copy_len}", f"copy_len + 1 = {copy.copy_len + 1}",
         "lower copy_len")
    assert copy.override(positional="learned", max_len=8, max_sentence_len=8) \
        .longest_sentence() == 8


def test_a_config_cannot_be_made_invalid_in_code_either():
    with pytest.raises(configs.ConfigError, match="N = 0"):
        configs.Config(N=0)
    with pytest.raises(configs.ConfigError) as error:
        configs.get("copy").override(N=2.0)
    says(error, "N = 2.0", "not an int")
    with pytest.raises(configs.ConfigError) as error:
        configs.get("copy").override(compile=1)
    says(error, "compile = 1", "not a bool")
    assert configs.get("copy").override(P_drop=0).P_drop == 0      # an int is a float's value
    for name in configs.PRESETS:                                    # every preset is valid
        assert configs.get(name) == configs.Config.from_dict(vars(configs.get(name)))


def test_a_saved_config_with_a_field_this_code_does_not_know_is_refused():
    saved = dict(vars(configs.get("copy")), colour="red")
    with pytest.raises(configs.ConfigError) as error:
        configs.Config.from_dict(saved)
    says(error, "colour", "unknown")


def test_a_saved_config_with_the_paper_s_numbers_of_older_versions_loads():
    """Older versions saved Table 3's reported numbers in every config (the shipped model's
    file has them); they are read past, and live in configs.PAPER now."""
    saved = dict(vars(configs.get("copy")), paper_params_M=None, paper_ppl=4.9, paper_bleu=None)
    assert configs.Config.from_dict(saved) == configs.get("copy")


def test_each_field_declares_its_rule_and_role_beside_itself():
    """The lists of what --resume may change and what defines the weights are read from the
    fields, not kept apart from them."""
    assert configs.SHAPE == ("N", "d_model", "d_ff", "h", "d_k", "d_v", "positional",
                             "max_len", "dataset", "vocab_size")
    assert "lr_factor" in configs.RESUMABLE and "seed" not in configs.RESUMABLE
    assert set(configs.SHAPE).isdisjoint(configs.RESUMABLE)
    model_fields = [f.name for f in fields(configs.ModelConfig)]
    assert [f.name for f in fields(configs.Config)][:len(model_fields)] == model_fields


def test_the_model_is_built_from_its_config_passed_whole():
    config = configs.get("copy")
    model = EncoderDecoder(config, 11)                      # a run's Config is a ModelConfig
    shape = configs.ModelConfig(N=1, d_model=64, d_ff=128, h=4, d_k=16, d_v=16, P_drop=0.0)
    assert [p.shape for p in model.parameters()] == \
        [p.shape for p in EncoderDecoder(shape, 11).parameters()]
    assert configs.ModelConfig(d_model=32, h=4).d_k == 8         # d_k = d_model / h (§3.2.2)
    assert config.parameter_count() == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("item", ["N =1", " N=1"])
def test_a_key_with_a_space_beside_it_is_named_with_the_space_shown(item):
    """'N ' read as unknown beside a list of valid keys that holds N would hide the mistake."""
    with pytest.raises(configs.ConfigError) as error:
        configs.apply_overrides(configs.get("copy"), [item])
    says(str(error.value), repr(item.partition("=")[0]), "spaces", "N=VALUE")
