"""The page "Your own language pair" tells the truth: its commands, run as written on a tiny
English-Chinese corpus (only the folders changed, and the training cut short), train, average,
translate and score Chinese with sacreBLEU's zh tokenizer."""
import random
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow           # it trains

PAGE = Path(__file__).resolve().parent.parent / "book" / "own_language_pair.md"
#: Enough to run every command in seconds: a small model, a short run, frequent checkpoints,
#: and a vocabulary the size of the tiny corpus instead of the page's.
SHORT = ["--max-steps", "30", "ckpt_every=5", "d_model=32", "d_ff=64", "N=1", "h=2"]
TINY_VOCABULARY = ("vocab_size=8000", "vocab_size=200")


def commands() -> list[list[str]]:
    """The page's shell commands, in order, continuation lines joined."""
    blocks = re.findall(r"```bash\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    return [shlex.split(line) for block in blocks
            for line in block.replace("\\\n", " ").strip().split("\n")]


def tiny_corpus(folder: Path) -> None:
    """English sentences and their Chinese translations, made from a few word lists."""
    random.seed(0)
    people = [("The man", "那个男人"), ("The woman", "那个女人"), ("A child", "一个孩子")]
    verbs = [("sees", "看见"), ("likes", "喜欢"), ("follows", "跟着")]
    animals = [("cats", "猫"), ("dogs", "狗"), ("birds", "鸟"), ("horses", "马")]
    numbers = [("two", "两"), ("three", "三"), ("four", "四")]
    folder.mkdir()
    for split, n in (("train", 300), ("valid", 30), ("test", 30)):
        pairs = []
        for _ in range(n):
            (p, pz), (v, vz), (k, kz), (a, az) = map(random.choice,
                                                     (people, verbs, numbers, animals))
            pairs.append((f"{p} {v} {k} {a}.", f"{pz}{vz}{kz}只{az}。"))
        (folder / f"{split}.en").write_text("".join(e + "\n" for e, _ in pairs), "utf-8")
        (folder / f"{split}.zh").write_text("".join(z + "\n" for _, z in pairs), "utf-8")


def test_the_pages_commands_train_translate_and_score_chinese(tmp_path):
    tiny_corpus(tmp_path / "my-corpus")
    found = commands()
    assert [c[2] for c in found] == ["annotated.train", "annotated.checkpoint",
                                     "annotated.translate", "annotated.evaluate"]
    said = []
    for command in found:
        argv = [sys.executable] + command[1:]
        if command[2] == "annotated.train":
            assert TINY_VOCABULARY[0] in argv
            argv = [TINY_VOCABULARY[1] if a == TINY_VOCABULARY[0] else a for a in argv]
            argv += ["--cache-dir", str(tmp_path / "cache")] + SHORT
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, (command, done.stderr[-2000:])
        said.append(done.stdout + done.stderr)
    assert re.search(r"files train: 300 pairs read, 0 with a side that encodes to no token dropped", said[0])
    assert "averaged 5 checkpoints" in said[1]
    translated = (tmp_path / "test.zh").read_text(encoding="utf-8").split("\n")
    assert len(translated) == 31 and translated[-1] == ""
    assert "tok:zh" in said[3] and "BLEU = " in said[3]
