"""A tired user's shell: outputs that are the input on stdin, stdout or a redirect, files with
other names (links, hard links) or private permissions, inputs that are pipes or devices,
standard streams closed or full. Each probe runs the command as a shell would and checks that
the user's files are what they should be and that any refusal is one line.

(tests/test_misuse.py holds the number options, run folders and interruptions.)
"""
import gzip
import lzma
import os
import shutil
import stat
import subprocess
import sys
import threading
import unicodedata
from pathlib import Path

import pytest
from conftest import says
import torch
from test_faults import error_line, exits_with_error, save

from annotated import checkpoint as checkpoint_command
from annotated import evaluate, translate
from annotated.base import files
from annotated.base.cli import command, peer_lost
from annotated.base.errors import DataError
from annotated.base.files import atomic_open, check_output, read_lines
from annotated.data.corpus import SAMPLE
from annotated.inference.bleu import tokenizer_for
from annotated.store import checkpoint_file

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "annotated" / "pretrained" / "multi30k_en_de.pt"
INPUT = "A dog runs on the beach.\nTwo cats sleep.\n"


def shell(script: str, folder: Path) -> subprocess.CompletedProcess:
    """Run `script` in bash in `folder`, with this Python as `python`."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run(["bash", "-c", f"python() {{ {sys.executable} \"$@\"; }}; {script}"],
                          cwd=folder, capture_output=True, timeout=300, env=env)


def translate_in_shell(folder: Path, redirect: str) -> subprocess.CompletedProcess:
    return shell(f"python -m annotated.translate --checkpoint {SHIPPED} --greedy {redirect}",
                 folder)


# --- outputs ----------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("redirect, stdin", [("--out x.txt < x.txt", "the file"),
                                             ("--out /dev/stdin < x.txt", "the file"),
                                             ("--out /dev/stdin < <(cat x.txt)", "the pipe")])
def test_an_output_that_is_the_file_or_pipe_on_stdin_is_refused(tmp_path, redirect, stdin):
    """Written there, the translations would go into what the command reads: lost."""
    (tmp_path / "x.txt").write_text(INPUT)
    done = translate_in_shell(tmp_path, redirect)
    assert done.returncode == 1 and f"it is {stdin} on stdin".encode() in done.stderr, \
        done.stderr
    assert (tmp_path / "x.txt").read_text() == INPUT


@pytest.mark.slow
@pytest.mark.parametrize("redirect,log", [
    ("--input in.txt --out /dev/stdout >> log.txt", "log.txt"),
    ("--input in.txt --out /dev/stderr 2>> log.txt", "log.txt"),
    ("--input in.txt --out /proc/self/fd/1 >> log.txt", "log.txt")])
def test_an_output_that_stdout_or_stderr_already_writes_is_appended_to_not_replaced(
        tmp_path, redirect, log):
    (tmp_path / "in.txt").write_text(INPUT)
    (tmp_path / log).write_text("my notes\n")
    done = translate_in_shell(tmp_path, redirect)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / log).read_text()
    assert text.startswith("my notes\n") and "Hund" in text
    assert b"replace" not in done.stderr, done.stderr          # nothing is replaced: no note


@pytest.mark.slow
def test_an_output_that_is_stdout_into_a_pipe_reaches_the_pipe(tmp_path):
    (tmp_path / "in.txt").write_text(INPUT)
    done = translate_in_shell(tmp_path, "--input in.txt --out /dev/stdout | cat")
    assert done.returncode == 0 and b"Hund" in done.stdout, done.stderr


def test_a_replaced_output_keeps_its_permissions_and_its_other_hard_links(tmp_path):
    private, twin = tmp_path / "private.txt", tmp_path / "twin.txt"
    private.write_text("secret\n")
    private.chmod(0o600)
    os.link(private, twin)
    with atomic_open(private, "w") as f:
        f.write("new\n")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert twin.read_text() == "new\n" and private.stat().st_nlink == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["private.txt", "twin.txt"]


def test_a_link_into_a_missing_folder_is_refused_and_creates_no_folder(tmp_path):
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere" / "out.txt")
    with pytest.raises(DataError) as error:
        check_output(tmp_path / "dangling")
    says(error, "a link to", "nowhere/out.txt", "no folder")
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("main,argv,names", [
    (translate.main, ["--checkpoint", str(SHIPPED), "--out", "folder/"],
     ("--out", "file name", "folder/")),
    (checkpoint_command.main, ["half", str(SHIPPED), "--out", "x.pt/"], ("--out", "file name")),
    (translate.main, ["--checkpoint", "", "--out", "x"], ("--checkpoint", "path", "empty")),
    (translate.main, ["--checkpoint", "~nosuchuser/x.pt"], ("--checkpoint", "no such user")),
])
def test_a_path_that_names_a_folder_or_nothing_is_an_argument_error(main, argv, names, capsys):
    exits_with_error(main, argv, code=2)
    says(capsys.readouterr().err.splitlines()[-1], "error: argument", *names)


def test_a_full_device_as_output_names_it(tmp_path, capsys):
    (tmp_path / "in.txt").write_text(INPUT)
    exits_with_error(translate.main, ["--checkpoint", str(SHIPPED), "--input",
                                      str(tmp_path / "in.txt"), "--out", "/dev/full",
                                      "--greedy"])
    says(error_line(capsys, alone=False), "/dev/full", "No space left")


@pytest.mark.parametrize("inputs,names", [
    ({"in.txt": "", "ref.txt": ""}, ("in.txt", "empty", "nothing to translate")),
    ({"in.txt": "\n\n", "ref.txt": "\n\n"}, ("2 references", "blank lines")),
])
def test_a_translation_that_fails_leaves_the_output_as_it_was(tmp_path, capsys, inputs, names):
    for name, text in inputs.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "out.txt").write_text("yesterday's work\n")
    exits_with_error(translate.main, ["--checkpoint", str(SHIPPED), "--input",
                                      str(tmp_path / "in.txt"), "--ref",
                                      str(tmp_path / "ref.txt"), "--out",
                                      str(tmp_path / "out.txt"), "--greedy"])
    says(error_line(capsys, alone=False), *names)
    assert (tmp_path / "out.txt").read_text() == "yesterday's work\n"


def test_checkpoint_outputs_refuse_stdout_and_a_link_to_a_training_checkpoint(tmp_path, capsys):
    source = save(tmp_path / "run" / "ckpt_0000001.pt")
    other = save(tmp_path / "other" / "ckpt_0000010.pt", seed=1, step=10)
    (tmp_path / "best.pt").symlink_to(other)
    before = other.read_bytes()
    exits_with_error(checkpoint_command.main, ["half", str(source), "--out", "-"])
    says(error_line(capsys), "binary file", "stdout")
    exits_with_error(checkpoint_command.main, ["average", "--out", str(tmp_path / "best.pt"),
                                               str(source)])
    assert "(a link to " in error_line(capsys) and other.read_bytes() == before


# --- inputs -----------------------------------------------------------------------------------

def test_a_pipe_is_read_from_its_first_byte(tmp_path):
    """The gzip test reads the first bytes; a pipe cannot be rewound, so they must be kept."""
    text = "".join(f"line {i}\n" for i in range(5000))
    for data in (text.encode(), gzip.compress(text.encode(), mtime=0)):
        read, write = os.pipe()
        writer = threading.Thread(target=lambda: (os.write(write, data), os.close(write)))
        writer.start()
        lines = list(read_lines(f"/dev/fd/{read}"))
        writer.join()
        os.close(read)
        assert lines == [f"line {i}" for i in range(5000)]


@pytest.mark.slow
def test_translate_reads_stdin_and_process_substitution_whole(tmp_path):
    (tmp_path / "in.txt").write_text("".join(f"{i} dogs run .\n" for i in range(300)))
    for redirect in ("--input <(cat in.txt)", "--input /dev/stdin < in.txt", "< in.txt"):
        done = translate_in_shell(tmp_path, redirect + " --max-extra 2")
        assert done.returncode == 0 and len(done.stdout.decode().splitlines()) == 300, redirect


@pytest.mark.parametrize("content,names", [
    (lzma.compress(b"a dog\n"), ("xz-compressed", "plain or gzip")),
    (b"\x00" * (files.MAX_LINE + 10), ("line 1", "longer than 1,048,576 bytes",
                                       "one sentence a line")),
    (gzip.compress("ein Hund läuft\n".encode() * 2000, mtime=0)[:-12] + b"\x00" * 12,
     ("gzip", "broken")),
], ids=["xz named .gz", "no line ends (a device)", "a damaged gzip, not a wrong encoding"])
def test_an_input_that_is_not_text_says_what_it_is(tmp_path, content, names):
    (tmp_path / "in.gz").write_bytes(content)
    with pytest.raises(DataError) as error:
        list(read_lines(tmp_path / "in.gz"))
    says(error, "in.gz", *names)


def test_a_damaged_gzip_whose_bad_bytes_decode_badly_is_still_called_damaged(tmp_path):
    data = bytearray(gzip.compress("ein Hund läuft über die Wiese\n".encode() * 3000, mtime=0))
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "in.gz").write_bytes(bytes(data))
    with pytest.raises(DataError) as error:
        list(read_lines(tmp_path / "in.gz"))
    assert "UTF-8" not in says(error, "in.gz", "gzip", "broken")


# --- standard streams ---------------------------------------------------------------------------

@pytest.mark.slow
def test_with_stderr_closed_the_translations_alone_reach_stdout(tmp_path):
    (tmp_path / "in.txt").write_text(INPUT)
    done = translate_in_shell(tmp_path, "--input in.txt --ref in.txt 2>&-")
    assert done.returncode == 0 and done.stdout.decode().count("\n") == 2, done.stdout


@pytest.mark.parametrize("command_line,names", [
    ("python -m annotated.configs >&-", ("stdout is closed", "the table")),
    ("python -m annotated.configs > /dev/full", ("stdout", "No space left")),
    ("python -m annotated.evaluate --hyp hyp.txt --ref in.txt >&-", ("stdout is closed", "scores")),
    ("python -m annotated.evaluate --hyp hyp.txt --ref in.txt > /dev/full",
     ("stdout", "No space left")),
    ("python -m benchmarks.adam_step --repeats 1 >&-", ("stdout is closed", "the timings")),
])
@pytest.mark.slow
def test_a_result_with_nowhere_to_go_is_an_error(tmp_path, command_line, names):
    (tmp_path / "in.txt").write_text(INPUT)
    (tmp_path / "hyp.txt").write_text(INPUT)
    done = shell(command_line, tmp_path)
    err = done.stderr.decode()
    assert done.returncode == 1 and "Traceback" not in err, err
    says(err.splitlines()[-1], "error:", *names)


@pytest.mark.slow
def test_a_table_read_by_head_ends_quietly(tmp_path):
    done = shell("set -o pipefail; python -m annotated.configs | head -1", tmp_path)
    assert done.returncode in (0, 141) and done.stderr == b"", done.stderr


@pytest.mark.slow
def test_a_closed_stream_is_filled_so_that_no_file_takes_its_number(tmp_path):
    """With stderr closed, the next file opened would get number 2, and a library's warning
    would be written into it."""
    done = shell(f"{sys.executable} -c 'from annotated.base.cli import command\n"
                 f"import os\n@command\ndef main(argv):\n"
                 f"    f = open(\"out.txt\", \"w\"); print(f.fileno())\nmain(None)' 2>&-",
                 tmp_path)
    assert done.stdout.decode().strip() not in ("0", "1", "2"), done.stdout


def test_another_torchrun_process_gone_is_one_line(monkeypatch, capsys):
    monkeypatch.setenv("RANK", "0")

    @command
    def main(argv):
        raise RuntimeError("[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Read error "
                           "[127.0.0.1]:29500: Connection reset by peer")
    exits_with_error(main, [])
    assert error_line(capsys).startswith("error: another process of this torchrun job stopped")
    assert peer_lost(RuntimeError("Connection closed by peer"))

    @command
    def chatty(argv):                                 # gloo's own advice, cut from the line
        raise RuntimeError("Connection closed by peer [127.0.0.1]:8859. This is typically "
                           "caused by a remote worker crashing. Check the logs of the remote "
                           "worker before reporting an error. GLHF! \U0001f3d6\ufe0f")
    exits_with_error(chatty, [])
    line = says(error_line(capsys), "Connection closed by peer [127.0.0.1]:8859",
                "if the run saved one")
    assert "GLHF" not in line and "typically" not in line


# --- checkpoints that are not what they seem ------------------------------------------------------

def test_a_checkpoint_with_weights_that_are_not_finite_is_refused_by_every_reader(tmp_path,
                                                                                  capsys):
    path = save(tmp_path / "ckpt_0000001.pt")
    payload = checkpoint_file.load(path)
    payload["model"]["generator.weight"][0, 0] = float("nan")
    checkpoint_file.atomic_save(payload, tmp_path / "nan.pt")
    exits_with_error(translate.main, ["--checkpoint", str(tmp_path / "nan.pt")])
    says(error_line(capsys), "not finite")                          # tied: 3 names
    for argv, purpose in ((["average", str(tmp_path / "nan.pt"), str(path)], "be averaged"),
                          (["half", str(tmp_path / "nan.pt")], "be shared")):
        exits_with_error(checkpoint_command.main, [*argv, "--out", str(tmp_path / "out.pt")])
        says(error_line(capsys), "nan.pt", "not finite", purpose, "before the run diverged")
        assert not (tmp_path / "out.pt").exists()


def test_halving_refuses_a_weight_beyond_float16(tmp_path, capsys):
    path = save(tmp_path / "ckpt_0000001.pt")
    payload = checkpoint_file.load(path)
    payload["model"]["generator.weight"][0, 0] = 1e6
    checkpoint_file.atomic_save(payload, tmp_path / "big.pt")
    exits_with_error(checkpoint_command.main, ["half", str(tmp_path / "big.pt"), "--out",
                                               str(tmp_path / "half.pt")])
    says(error_line(capsys), ".weight", "1e+06", "float16's range")
    assert not (tmp_path / "half.pt").exists()


@pytest.mark.parametrize("what", ["a dict", "a tensor"])
def test_verify_calls_intact_only_a_checkpoint(tmp_path, capsys, what):
    """A file can carry a valid seal and still not be a checkpoint (the seal is a checksum)."""
    checkpoint_file.atomic_save({"hello": "world"} if what == "a dict" else torch.zeros(3),
                           tmp_path / "x.pt")
    exits_with_error(checkpoint_command.main, ["verify", str(tmp_path / "x.pt")])
    says(error_line(capsys), "annotated-transformer checkpoint",
         "'hello'" if what == "a dict" else "a Tensor", "python -m annotated.train")


def test_verify_of_a_run_folder_checks_every_checkpoint_file_in_it(tmp_path, capsys):
    save(tmp_path / "ckpt_0000001.pt")
    (tmp_path / "average.pt").write_bytes(b"damaged")
    exits_with_error(checkpoint_command.main, ["verify", str(tmp_path)])
    out, err = capsys.readouterr()
    assert "ckpt_0000001.pt: intact" in out and "corrupt or truncated" in says(err.splitlines()[-1],
                                                                                "average.pt")


def test_an_average_is_not_averaged_again_with_one_of_its_own_sources(tmp_path, capsys):
    paths = [save(tmp_path / checkpoint_file.checkpoint_name(s), step=s, run_id="a" * 16, seed=s)
             for s in (1, 2)]
    checkpoint_command.main(["average", "--out", str(tmp_path / "avg.pt"), *map(str, paths)])
    capsys.readouterr()
    exits_with_error(checkpoint_command.main, ["average", "--out", str(tmp_path / "again.pt"),
                                               str(tmp_path / "avg.pt"), str(paths[1])])
    assert "would count" in error_line(capsys) and not (tmp_path / "again.pt").exists()


@pytest.mark.parametrize("device,names", [
    ("meta", ("meta", "cuda:N", "mps")), ("cpu:3", ("cpu:3", "cuda:N", "mps")),
    ("mps", ("Apple GPU", "mps")), ("tpu", ("tpu", "unknown device", "cpu, cuda")),
    ("cuda:-1", ("cuda:-1", "unknown device"))])
def test_a_device_this_machine_cannot_translate_on_is_a_usage_error(device, names, capsys):
    """Checked as the option is read (exit 2), in one line naming the devices to use, not
    torch's list of every device type it knows."""
    if device == "mps" and torch.backends.mps.is_available():
        pytest.skip("this machine has an Apple GPU")
    exits_with_error(translate.main, ["--checkpoint", str(SHIPPED), "--device", device], code=2)
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and "xla" not in err, err
    says(err.splitlines()[-1], "--device", *names)


@pytest.mark.parametrize("change,names", [
    (lambda p: p.update(tokenizer={"kind": "bpe", "bytes": b"garbage"}),
     ("tokenizer", "cannot be read")),
    (lambda p: p.update(config=["d_model", 5]), ("config", "not a dict")),
    (lambda p: p["tokenizer"].update(bytes=b"annotated.CopyTokenizer vocab_size=4000000000"),
     ("output layer", "(11, 16)", "(4,000,000,000, 16)")),
], ids=["garbage tokenizer", "config a string", "absurd vocabulary"])
def test_a_sealed_checkpoint_with_a_bad_record_is_one_line(tmp_path, capsys, change, names):
    payload = checkpoint_file.load(save(tmp_path / "ckpt_0000001.pt"))
    change(payload)
    checkpoint_file.atomic_save(payload, tmp_path / "bad.pt")
    exits_with_error(translate.main, ["--checkpoint", str(tmp_path / "bad.pt")])
    says(error_line(capsys), "bad.pt", *names)


@pytest.mark.parametrize("name", ["/dev/zero", "/dev/null"])
def test_a_device_given_as_checkpoint_is_not_called_missing(name, capsys):
    exits_with_error(translate.main, ["--checkpoint", name])
    says(error_line(capsys), name, "not a file", "checkpoint file")


# --- BLEU's language -----------------------------------------------------------------------------

CHINESE = ["我们今天去公园散步。", "这只猫在桌子上睡觉。"]


@pytest.mark.parametrize("lang", ["zh_CN", " zh", "ZH", "zho", "cmn", "zh-Hant"])
def test_every_spelling_of_a_language_code_finds_its_tokenizer(lang):
    assert tokenizer_for(lang, CHINESE) == "zh"


@pytest.mark.parametrize("lang", ["de", "xx"])
def test_references_in_a_script_without_spaces_given_another_language_are_refused(lang):
    with pytest.raises(DataError) as error:
        tokenizer_for(lang, CHINESE)
    says(error, "spaces", "(zh)", f"'{lang}'")


@pytest.mark.parametrize("lang", ["zh", "ja", "th"])
def test_references_in_another_script_given_a_language_without_spaces_are_refused(lang, tmp_path,
                                                                                 capsys):
    """German references scored --lang zh would carry the zh tokenizer in their signature."""
    for name in ("hyp", "ref"):
        (tmp_path / name).write_text("Ein Hund läuft am Strand.\nZwei Männer spielen Fußball.\n")
    exits_with_error(evaluate.main, ["--hyp", str(tmp_path / "hyp"), "--ref",
                                     str(tmp_path / "ref"), "--lang", lang])
    says(error_line(capsys), f"'{lang}'", "without spaces", "another script", "de")
    assert tokenizer_for(lang, ["12 34", ""]) in ("zh", "char")       # no letters: no guess


def test_references_that_are_all_blank_are_not_scored(tmp_path, capsys):
    (tmp_path / "blank").write_text("\n\n")
    (tmp_path / "hyp").write_text("a\nb\n")
    exits_with_error(evaluate.main, ["--hyp", str(tmp_path / "hyp"), "--ref",
                                     str(tmp_path / "blank")])
    says(error_line(capsys), "2 references", "blank lines")


# --- texts that are not lines of text; what evaluate and translate read ---------------------

@pytest.mark.parametrize("content, names", [
    (b"\0" * 20_000, ["NUL bytes", "not a text file", "copy or write it again"]),
    (b"Ein Hund.\rZwei Katzen.\rDrei.\r", ["CR alone", "LF"]),
])
def test_a_file_that_is_not_lines_of_text_is_named_for_what_it_is(tmp_path, capsys, content,
                                                                  names):
    """A file of NUL bytes, or one with old Mac line ends, reads as one long line: the
    message says what the file is, not that its lines do not align."""
    (tmp_path / "hyp.de").write_bytes(content)
    (tmp_path / "ref.de").write_text("Ein Hund.\nZwei Katzen.\nDrei.\n")
    exits_with_error(evaluate.main, ["--hyp", str(tmp_path / "hyp.de"),
                                     "--ref", str(tmp_path / "ref.de")])
    line = says(error_line(capsys), str(tmp_path / "hyp.de"), *names)
    assert "line-aligned" not in line


def test_evaluate_checks_every_input_before_it_prints_a_score(tmp_path, capsys):
    (tmp_path / "ref.de").write_text("Ein Hund.\nZwei Katzen.\n")
    (tmp_path / "hyp.de").write_text("Ein Hund.\nZwei Katze.\n")
    (tmp_path / "short.de").write_text("Ein Hund.\n")
    exits_with_error(evaluate.main, ["--hyp", str(tmp_path / "hyp.de"), "--ref",
                                     str(tmp_path / "ref.de"), "--baseline",
                                     str(tmp_path / "short.de")])
    assert capsys.readouterr().out == ""                 # no score before the refusal


def test_evaluate_refuses_the_references_as_the_translations(tmp_path, capsys):
    (tmp_path / "ref.de").write_text("Ein Hund.\nZwei Katzen.\n")
    os.link(tmp_path / "ref.de", tmp_path / "same.de")
    exits_with_error(evaluate.main, ["--hyp", str(tmp_path / "same.de"),
                                     "--ref", str(tmp_path / "ref.de")])
    says(error_line(capsys), str(tmp_path / "same.de"), "references", "--hyp", "--ref")


def test_evaluate_reads_the_translations_from_stdin_and_notes_invisible_characters(tmp_path):
    """--hyp - reads standard input; a zero-width space, which leaves a line looking the same
    and sinks its BLEU, is named by line on stderr."""
    (tmp_path / "ref.de").write_text("Ein Hund läuft über die Wiese.\nZwei Katzen.\n")
    done = subprocess.run([sys.executable, "-m", "annotated.evaluate", "--hyp", "-", "--ref",
                           str(tmp_path / "ref.de")],
                          input="Ein Hund läuft über die Wiese.\nZwei\u200b Katzen.\n",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("sacreBLEU")
    says(done.stderr.strip(), "line 2", "zero-width", "remove them")


def test_translate_from_a_terminal_says_it_waits_for_sentences(tmp_path):
    """With no --input and a terminal on stdin, translate says it reads the terminal and how to
    end, instead of seeming to hang (here the terminal sends end-of-file at once)."""
    import pty
    master, slave = pty.openpty()
    try:
        child = subprocess.Popen([sys.executable, "-m", "annotated.translate", "--checkpoint",
                                  str(SHIPPED)], stdin=slave, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        os.close(slave)
        os.write(master, b"\x04")                        # Ctrl-D: end of input
        out, err = child.communicate(timeout=120)
    finally:
        os.close(master)
    says(next(line for line in err.splitlines() if "terminal" in line), "Ctrl-D", "--input")
    assert "empty" in err and child.returncode == 1


@pytest.mark.parametrize("content, names", [
    (b"\0" * 300, ["NUL bytes", "not a text file"]),
    (b"A dog runs.\rA cat sleeps.\r", ["CR alone", "LF"]),
    (b"A man walks.\nA man\x1b[31mwalks.\n", ["U+001B", "line 2", "colour codes", "spaces"]),
    (b"A man\x0bwalks.\n", ["U+000B", "line 1", "spaces"]),
    ("A dog runs.\nA d\u200bog runs.\n".encode(), ["U+200B", "ZERO WIDTH SPACE", "line 2",
                                                     "looks the same", "sed"]),
    ("A dog ru\u00adns.\n".encode(), ["U+00AD", "SOFT HYPHEN", "line 1"]),
])
@pytest.mark.parametrize("given", ["--input", "stdin"])
def test_translate_refuses_input_that_is_not_lines_of_text(tmp_path, content, names, given):
    """NUL bytes would be translated into an invented sentence, CR-only line ends into one
    line for many, a control character (a terminal's colour code, a vertical tab) or an
    invisible one (a zero-width space, a soft hyphen) into another sentence: refused before
    decoding, from a file or from stdin, the output untouched."""
    (tmp_path / "in.en").write_bytes(content)
    (tmp_path / "out.de").write_text("kept\n")
    argv = [sys.executable, "-m", "annotated.translate", "--checkpoint", str(SHIPPED),
            "--out", str(tmp_path / "out.de")]
    with open(tmp_path / "in.en", "rb") as stdin:
        done = subprocess.run(argv + (["--input", str(tmp_path / "in.en")] if given == "--input"
                                      else []), stdin=stdin, capture_output=True, text=True,
                              timeout=300)
    assert done.returncode == 1
    says(done.stderr.strip().splitlines()[-1], *names)
    assert (tmp_path / "out.de").read_text() == "kept\n"


def test_evaluate_refuses_the_references_on_stdin_and_stdin_for_them(tmp_path):
    (tmp_path / "ref.de").write_text("Ein Hund.\nZwei Katzen.\n")
    for argv, names in [(["--hyp", "-", "--ref", str(tmp_path / "ref.de")],
                         ["standard input", str(tmp_path / "ref.de"), "--hyp -"]),
                        (["--hyp", str(tmp_path / "ref.de"), "--ref", "-"], ["--ref -", "file"])]:
        with open(tmp_path / "ref.de", "rb") as stdin:
            done = subprocess.run([sys.executable, "-m", "annotated.evaluate", *argv],
                                  stdin=stdin, capture_output=True, text=True, timeout=120)
        assert done.returncode == 1 and done.stdout == ""
        says(done.stderr.strip(), *names)


# --- what a user might hand translate and evaluate by mistake ---------------------------------

def test_evaluate_reading_a_closed_stdin_is_one_line(tmp_path):
    (tmp_path / "ref.de").write_text("Ein Hund.\n")
    done = subprocess.run([sys.executable, "-m", "annotated.evaluate", "--hyp", "-", "--ref",
                           str(tmp_path / "ref.de")], capture_output=True, text=True,
                          timeout=120, preexec_fn=lambda: os.close(0))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    says(done.stderr.strip(), "--hyp -", "stdin is closed", "--hyp FILE")


def test_a_checkpoint_given_as_text_is_named_a_checkpoint(tmp_path, capsys):
    (tmp_path / "hyp.de").write_text("Ein Hund.\n")
    exits_with_error(evaluate.main, ["--hyp", str(tmp_path / "hyp.de"), "--ref", str(SHIPPED)])
    line = says(error_line(capsys), str(SHIPPED), "PyTorch checkpoint", "text file")
    assert "decompress" not in line


def test_greedy_search_with_a_beam_size_or_alpha_is_refused(capsys):
    for extra in (["--beam-size", "8"], ["--alpha", "1.0"]):
        with pytest.raises(SystemExit) as stopped:
            translate.parse_args(["--checkpoint", str(SHIPPED), "--greedy", *extra])
        assert stopped.value.code == 2
        says(capsys.readouterr().err.strip().splitlines()[-1], "--greedy", "--beam-size",
             "--alpha")


def test_running_out_of_memory_while_translating_names_translates_own_settings(
        tmp_path, capsys, monkeypatch):
    def allocation_fails(*args, **kwargs):
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] err == 0. DefaultCPUAllocator: "
                           "can't allocate memory: you tried to allocate 92262400 bytes")
    monkeypatch.setattr(translate, "translate_lines", allocation_fails)
    (tmp_path / "in.en").write_text("A dog runs.\n")
    exits_with_error(translate.main, ["--checkpoint", str(SHIPPED), "--input",
                                      str(tmp_path / "in.en"), "--out", str(tmp_path / "o.de")])
    line = says(error_line(capsys, alone=False), "out of memory", "--batch-tokens", "--beam-size",
                "0.09 GiB")
    assert "max_tokens" not in line and "err ==" not in line and not (tmp_path / "o.de").exists()


def test_input_in_another_script_than_the_models_is_warned_about(tmp_path, capsys):
    (tmp_path / "in.txt").write_text("一只狗在海滩上跑。\n两只猫在睡觉。\n")
    translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.txt"), "--out",
                    str(tmp_path / "out.de")])
    says(next(line for line in capsys.readouterr().err.splitlines() if "warning" in line),
         "never saw", "en", "de")
    (tmp_path / "in.txt").write_text("A dog runs on the beach.\n")
    translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.txt"), "--out",
                    str(tmp_path / "out.de")])
    assert "warning" not in capsys.readouterr().err


def test_input_in_another_language_of_the_same_script_is_warned_about(tmp_path, capsys):
    """German sentences given to the English->German model: the same letters, so the model
    knows every piece; their commonest words say they are German."""
    import gzip
    sample = ROOT / "annotated" / "data" / "sample" / "multi30k"
    warnings = {}
    for lang in ("de", "en"):
        lines = gzip.open(sample / f"test_2016_flickr_sample.{lang}.gz", "rt").read()
        (tmp_path / "in.txt").write_text("".join(lines.splitlines(keepends=True)[:8]))
        translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.txt"),
                        "--out", str(tmp_path / "out.txt"), "--greedy"])
        warnings[lang] = [line for line in capsys.readouterr().err.splitlines()
                          if "warning" in line]
    assert len(warnings["de"]) == 1 and warnings["en"] == [], warnings
    says(warnings["de"][0], "reads as de", "en into de", "is the input in en")


@pytest.mark.parametrize("text, language", [
    ("Ein Mann faehrt Fahrrad auf der Strasse.", "de"), ("Le chien est dans la rue.", "fr"),
    ("Zwei Hunde spielen im Schnee.", "de"), ("Hunde spielen im Schnee.", "de"),
    ("Une fille très rapide.", "fr"), ("A dog runs.", None), ("Die Hard is a film.", None),
    ("In Rome.", None), ("Un chat noir.", None)])
def test_a_sentence_or_two_is_read_as_a_language_only_where_its_words_agree(text, language):
    """Under 20 words the share of common words says little: a short input is read as a
    language when two or more of its words are that language's common ones, at least twice
    as many as another language's (in "Die Hard is a film" no language stands out), or when
    one is and the text bears that language's mark too: a letter English does not write
    (très), a German noun capitalised inside the sentence. "Un" alone is French, Spanish or
    Italian."""
    from annotated.data.languages import guess_short_language, guess_spaced_language
    assert guess_short_language([text]) == language
    assert guess_spaced_language([text]) is None        # what a corpus check relies on


def test_a_line_without_a_letter_or_a_digit_is_named(tmp_path, capsys):
    (tmp_path / "in.en").write_text("A dog runs.\n... !!! ???\n")
    translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.en"),
                    "--out", str(tmp_path / "out.de"), "--greedy"])
    says(next(line for line in capsys.readouterr().err.splitlines() if "warning" in line),
         "line 2", "no letter or digit", "nothing to translate")


def test_a_number_the_translation_lacks_is_noted_and_an_other_compression_refused(tmp_path,
                                                                                  capsys):
    """The model writes numbers as word pieces and may change them: a translation that lacks
    its line's number is noted; an --out named .bz2 would be plain text under that name."""
    (tmp_path / "in.en").write_text("A dog runs.\n12345 67890\n")
    translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.en"),
                    "--out", str(tmp_path / "out.de"), "--greedy"])
    says(next(line for line in capsys.readouterr().err.splitlines() if "number" in line),
         "line 2", "12345 in, not out")
    exits_with_error(translate.main, ["--checkpoint", str(SHIPPED), "--input",
                                      str(tmp_path / "in.en"), "--out", str(tmp_path / "o.bz2")])
    says(error_line(capsys), "o.bz2", "plain text", ".gz")
    assert not (tmp_path / "o.bz2").exists()
    exits_with_error(translate.main, ["--checkpoint", str(SHIPPED), "--input",
                                      str(tmp_path / "in.en"), "--out", str(tmp_path / "o.XZ")])
    says(error_line(capsys), "o.XZ", "plain text")
    translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.en"),
                    "--out", str(tmp_path / "o.GZ"), "--greedy"])      # named gzip: it is gzip
    assert gzip.decompress((tmp_path / "o.GZ").read_bytes()).count(b"\n") == 2


def test_a_short_line_in_capitals_is_named_and_an_acronym_is_not():
    assert translate.in_capitals(["A DOG RUNS.", "I saw NASA today.", "OK", "A dog runs."]) == [0]


def test_one_line_in_another_script_among_the_input_is_named(tmp_path, capsys):
    """Too few of the input's pieces for the whole input's warning: the line is named."""
    import gzip
    sample = ROOT / "annotated" / "data" / "sample" / "multi30k"
    lines = gzip.open(sample / "test_2016_flickr_sample.en.gz", "rt").read().splitlines()[:8]
    (tmp_path / "in.txt").write_text("\n".join(lines + ["我们今天去公园散步吧，天气很好。"]) + "\n")
    translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.txt"), "--out",
                    str(tmp_path / "out.txt"), "--greedy"])
    warned = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warned) == 1, warned
    says(warned[0], "input line 9", "never saw", "is it in en")


def test_a_few_characters_the_model_never_saw_in_a_line_are_named(tmp_path, capsys):
    """Too few for the warnings above (an emoji in an English sentence): the model reads them
    as an unknown piece and may make up words for it; the note names the line and them."""
    (tmp_path / "in.txt").write_text("A dog runs.\nA dog runs on the grass. \U0001f436\n")
    translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.txt"), "--out",
                    str(tmp_path / "out.txt"), "--greedy"])
    noted = [line for line in capsys.readouterr().err.splitlines() if "never saw" in line]
    assert len(noted) == 1, noted
    says(noted[0], "input line 2", "'\U0001f436'", "make up words")


def test_html_tags_and_web_addresses_in_the_input_are_named_not_taken_for_a_language(
        tmp_path, capsys):
    """The tags' characters are rare pieces: the input-wide warning asked whether the input
    was English. The tags and the address are named instead, each with what to do."""
    (tmp_path / "in.txt").write_text("A <b>dog</b> runs in the <i>park</i>.\n"
                                     "See https://example.com/a?b=c for a dog.\nA man sits.\n")
    translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.txt"), "--out",
                    str(tmp_path / "out.txt"), "--greedy"])
    err = capsys.readouterr().err
    says(next(line for line in err.splitlines() if "HTML" in line), "input line 1", "'<b>'",
         "sed")
    says(next(line for line in err.splitlines() if "address" in line), "input line 2",
         "https://example.com/a?b=c", "by hand")
    assert "is the input in" not in err and "never saw in training (" not in err, err


def test_an_input_of_sentence_pairs_separated_by_tabs_is_warned_about(tmp_path, capsys):
    """A file of pairs (English, tab, German) given as input: each whole line would be
    translated, the German half too; the warning names the tab and the column to give."""
    import gzip
    sample = ROOT / "annotated" / "data" / "sample" / "multi30k"
    en, de = (gzip.open(sample / f"test_2016_flickr_sample.{lang}.gz", "rt").read().splitlines()
              for lang in ("en", "de"))
    warned = {}
    for name, lines in (("pairs", [f"{e}\t{d}" for e, d in zip(en[:6], de)]), ("en", en[:6])):
        (tmp_path / "in.txt").write_text("".join(line + "\n" for line in lines))
        translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.txt"),
                        "--out", str(tmp_path / "out.txt"), "--greedy"])
        warned[name] = [line for line in capsys.readouterr().err.splitlines() if "tab" in line]
    assert len(warned["pairs"]) == 1 and warned["en"] == [], warned
    says(warned["pairs"][0], "6 of the first 6", "tab", "en column", "cut -f1")


@pytest.mark.parametrize("source, out, refused", [
    ("test.en", "test.de", True), ("test.en", "test.de.gz", True),
    ("news.en.txt", "news.de.txt", True), ("test-en.txt", "test-de.txt", True),
    ("en/test.txt", "de/test.txt", True), ("test.eng", "test.deu", True),
    ("test2016.en", "test2016.German", True), ("test.src", "test.ref", True),
    ("newstest2014-ende-src.en", "newstest2014-ende-ref.de", True),
    ("test.en", "hyp.de", False), ("src.eng", "hyp.deu", False), ("test.src", "hyp.txt", False),
    ("test.en", "test.de.hyp", False)])
def test_an_output_named_like_the_references_of_the_input_is_refused(tmp_path, capsys, source,
                                                                     out, refused):
    """test.de beside test.en, or de/test.txt beside en/test.txt, however many lines it holds
    (a trailing blank line, a line short): the human references, which the translations would
    replace. An earlier output of another name is replaced as asked."""
    import gzip
    for name in (source, out):
        (tmp_path / name).parent.mkdir(exist_ok=True)
    (tmp_path / source).write_text("A dog runs.\nTwo cats.\n")
    held = "Der Hund.\nDie Katzen.\n\n".encode()
    (tmp_path / out).write_bytes(gzip.compress(held) if out.endswith(".gz") else held)
    before = (tmp_path / out).read_bytes()
    argv = ["--checkpoint", str(SHIPPED), "--input", str(tmp_path / source), "--out",
            str(tmp_path / out), "--greedy"]
    if refused:
        exits_with_error(translate.main, argv)
        says(error_line(capsys), f"--out {tmp_path / out}", source, "references",
             "another --out")
        assert (tmp_path / out).read_bytes() == before
    else:
        translate.main(argv)
        assert (tmp_path / out).read_bytes() != before


@pytest.mark.parametrize("link, named", [(os.link, "hard link"), (os.symlink, "is a link to")])
def test_an_output_that_is_a_link_to_the_references_is_refused(tmp_path, capsys, link, named):
    """hyp.de is a name the translations may take, but here it is another name of test.de, or
    a link to it: the refusal says which."""
    (tmp_path / "test.en").write_text("A dog runs.\nTwo cats.\n")
    (tmp_path / "test.de").write_text("Der Hund.\nDie Katzen.\n")
    link(tmp_path / "test.de", tmp_path / "hyp.de")
    exits_with_error(translate.main, ["--checkpoint", str(SHIPPED), "--input",
                                      str(tmp_path / "test.en"), "--out", str(tmp_path / "hyp.de"),
                                      "--greedy"])
    says(error_line(capsys), f"--out {tmp_path / 'hyp.de'}", named,
         str(tmp_path / "test.de"), "references", "another --out")
    assert (tmp_path / "test.de").read_text() == "Der Hund.\nDie Katzen.\n"


def test_a_baseline_that_is_the_same_translations_is_noted(tmp_path, capsys):
    (tmp_path / "ref.de").write_text("Ein Hund läuft.\nZwei Katzen.\n")
    (tmp_path / "hyp.de").write_text("Ein Hund.\nZwei Katzen.\n")
    evaluate.main(["--hyp", str(tmp_path / "hyp.de"), "--baseline", str(tmp_path / "hyp.de"),
                   "--ref", str(tmp_path / "ref.de")])
    says(capsys.readouterr().err.splitlines()[0], "note", "--baseline", "hyp.de",
         "same translations", "other system")


@pytest.mark.parametrize("spoil, names", [
    (lambda lines: [unicodedata.normalize("NFD", line) for line in lines], ["NFD", "NFC"]),
    (lambda lines: lines[1:] + lines[:1], ["out of step"]),
    (lambda lines: list(read_lines(SAMPLE / "test_2016_flickr_sample.en.gz"))[:100],
     ["read as en"]),
    (lambda lines: [line.replace("ü", "&uuml;") for line in lines], ["HTML character"])],
    ids=["nfd", "shifted", "english", "escaped"])
def test_a_baseline_gets_the_notes_the_translations_get(tmp_path, capsys, spoil, names):
    """A baseline spoiled in its form (NFD, escapes), its order or its language would lead the
    comparison by that alone: it is noted as --hyp would be, naming the baseline."""
    refs = list(read_lines(SAMPLE / "test_2016_flickr_sample.de.gz"))[:100]
    (tmp_path / "ref.de").write_text("\n".join(refs) + "\n")
    (tmp_path / "hyp.de").write_text("\n".join(refs) + "\n")
    (tmp_path / "base.de").write_text("\n".join(spoil(refs)) + "\n")
    evaluate.main(["--hyp", str(tmp_path / "hyp.de"), "--baseline", str(tmp_path / "base.de"),
                   "--ref", str(tmp_path / "ref.de")])
    notes = [line for line in capsys.readouterr().err.splitlines() if "base.de" in line]
    assert notes, "no note names the baseline"
    says(notes[0], "note", *names)


@pytest.mark.parametrize("name", ["ckpt_0000500.pt", "model.pth", "metrics.jsonl"])
def test_translations_are_not_written_under_a_checkpoints_name(tmp_path, capsys, name):
    """A text file named like a checkpoint would be taken for one by resume and average."""
    (tmp_path / "test.en").write_text("A dog runs.\n")
    exits_with_error(translate.main, ["--checkpoint", str(SHIPPED), "--input",
                                      str(tmp_path / "test.en"), "--out", str(tmp_path / name)])
    says(error_line(capsys), f"refusing to write {tmp_path / name}", "checkpoint",
         "another --out")
    assert not (tmp_path / name).exists()


def test_a_read_only_out_is_refused_whoever_runs_it(tmp_path, capsys):
    """Root may write a file without write permission; the command still refuses, by its
    mode, and the file stays."""
    (tmp_path / "test.en").write_text("A dog runs.\n")
    (tmp_path / "keep.txt").write_text("keep\n")
    (tmp_path / "keep.txt").chmod(0o444)
    exits_with_error(translate.main, ["--checkpoint", str(SHIPPED), "--input",
                                      str(tmp_path / "test.en"), "--out", str(tmp_path / "keep.txt")])
    says(error_line(capsys), str(tmp_path / "keep.txt"), "read-only", "chmod u+w",
         "another file")
    assert (tmp_path / "keep.txt").read_text() == "keep\n"


@pytest.mark.parametrize("option", ["--input", "--ref"])
def test_a_missing_input_is_named_with_its_option(tmp_path, capsys, option):
    (tmp_path / "test.en").write_text("A dog runs.\n")
    given = {"--input": str(tmp_path / "test.en"), "--ref": None, option: "nosuch.txt"}
    argv = ["--checkpoint", str(SHIPPED), "--out", str(tmp_path / "hyp.de")]
    argv += [word for key, value in given.items() if value for word in (f"{key}={value}",)]
    exits_with_error(translate.main, argv)
    says(error_line(capsys), f"{option} nosuch.txt", "no such file", "check the path")


def test_a_missing_file_given_by_two_options_names_both():
    """--out X --ref X with X missing: not --out alone, which is written, not read."""
    from annotated.base.cli import describe
    line = describe(FileNotFoundError(2, "No such file", "X"),
                    ["--input", "in.en", "--out", "X", "--ref=X"])
    says(line, "--out / --ref X", "no such file")


def test_an_out_that_is_the_references_says_to_write_elsewhere(tmp_path, capsys):
    (tmp_path / "test.en").write_text("A dog runs.\n")
    (tmp_path / "ref.de").write_text("Ein Hund.\n")
    exits_with_error(translate.main, ["--checkpoint", str(SHIPPED), "--input",
                                      str(tmp_path / "test.en"), "--ref", str(tmp_path / "ref.de"),
                                      "--out", str(tmp_path / "ref.de")])
    says(error_line(capsys), "refusing to write", str(tmp_path / "ref.de"), "reads it",
         "another file")
    assert (tmp_path / "ref.de").read_text() == "Ein Hund.\n"


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a checkout of the project")
def test_an_out_that_is_a_committed_file_of_the_project_is_refused(tmp_path, capsys):
    """The record beside the shipped model is no earlier translation: it stays as it was."""
    record = SHIPPED.with_suffix(".json")
    before = record.read_bytes()
    (tmp_path / "test.en").write_text("A dog runs.\n")
    exits_with_error(translate.main, ["--checkpoint", str(SHIPPED), "--input",
                                      str(tmp_path / "test.en"), "--out", str(record)])
    says(error_line(capsys), str(record), "file of this project", "another --out")
    assert record.read_bytes() == before


def test_translations_that_are_a_copy_of_the_references_are_noted(tmp_path, capsys):
    """A copy of the references: a note says it is a copy, not a system."""
    (tmp_path / "ref.de").write_text("Ein Hund läuft.\nZwei Katzen.\n")
    (tmp_path / "copy.de").write_text("Ein Hund läuft. \nZwei Katzen.\n")
    (tmp_path / "hyp.de").write_text("Ein Hund.\nZwei Katzen.\n")
    evaluate.main(["--hyp", str(tmp_path / "copy.de"), "--ref", str(tmp_path / "ref.de")])
    says(capsys.readouterr().err.splitlines()[0], "note", "--hyp", "copy.de", "ref.de", "copy")
    evaluate.main(["--hyp", str(tmp_path / "hyp.de"), "--baseline", str(tmp_path / "copy.de"),
                   "--ref", str(tmp_path / "ref.de")])
    says(capsys.readouterr().err.splitlines()[0], "note", "--baseline", "copy.de", "copy")


def test_sentences_too_short_for_a_4_gram_say_why_bleu_is_0(tmp_path, capsys):
    """A perfect copy of two-word lines scores 0: BLEU multiplies in the 4-gram precision."""
    for name in ("ref.de", "hyp.de"):
        (tmp_path / name).write_text("Ein Hund.\nZwei Katzen.\n")
    evaluate.main(["--hyp", str(tmp_path / "hyp.de"), "--ref", str(tmp_path / "ref.de")])
    out, err = capsys.readouterr()
    assert out.startswith("sacreBLEU") and "BLEU = 0.00" in out
    says(next(line for line in err.splitlines() if "4 tokens" in line), "note",
         "no translation holds 4 tokens", "0 however good")
    assert "scores 100" not in err
    for name in ("ref.de", "hyp.de"):
        (tmp_path / name).write_text("Ein Hund läuft über die Wiese.\nZwei Katzen.\n")
    evaluate.main(["--hyp", str(tmp_path / "hyp.de"), "--ref", str(tmp_path / "ref.de")])
    assert "4 tokens" not in capsys.readouterr().err


def test_text_escaped_for_the_web_is_named_with_its_line_and_the_fix(tmp_path, capsys):
    """&apos; and &amp; in the input of translate, or in the translations or references of
    evaluate, read as other words: each file is named with its first such line; plain text
    (an ampersand alone, "AT&T") gets no note."""
    (tmp_path / "in.en").write_text("A dog runs.\nIt&apos;s a dog &amp; a cat.\n")
    translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.en"),
                    "--out", str(tmp_path / "out.de"), "--greedy"])
    says(next(line for line in capsys.readouterr().err.splitlines() if "HTML" in line),
         "1 of the 2 lines", "in.en", "line 2", "&apos;", "html.unescape")
    (tmp_path / "ref.de").write_text("Ein Hund läuft.\nEin Hund &#39;und&#39; eine Katze.\n")
    (tmp_path / "hyp.de").write_text("Ein Hund läuft.\nEin Hund und eine Katze.\n")
    evaluate.main(["--hyp", str(tmp_path / "hyp.de"), "--ref", str(tmp_path / "ref.de")])
    says(next(line for line in capsys.readouterr().err.splitlines() if "HTML" in line),
         "ref.de", "line 2", "&#39;", "unescape")
    (tmp_path / "ref.de").write_text("Ein Hund läuft.\nEin Hund & eine Katze bei AT&T.\n")
    evaluate.main(["--hyp", str(tmp_path / "hyp.de"), "--ref", str(tmp_path / "ref.de")])
    assert "HTML" not in capsys.readouterr().err


def test_lowercase_translations_against_cased_references_point_to_the_lowercased_score(
        tmp_path, capsys):
    (tmp_path / "ref.de").write_text("Ein Hund läuft über die Wiese.\nZwei Katzen schlafen.\n")
    (tmp_path / "hyp.de").write_text("ein hund läuft über die wiese.\nzwei katzen schlafen.\n")
    evaluate.main(["--hyp", str(tmp_path / "hyp.de"), "--ref", str(tmp_path / "ref.de")])
    note = next(line for line in capsys.readouterr().err.splitlines() if "lowercase" in line)
    says(note, "hyp.de", "all lowercase", "capitals", "lowercased BLEU")
    (tmp_path / "ref.de").write_text("ein hund läuft über die wiese.\nzwei katzen schlafen.\n")
    evaluate.main(["--hyp", str(tmp_path / "hyp.de"), "--ref", str(tmp_path / "ref.de")])
    assert "all lowercase" not in capsys.readouterr().err
    (tmp_path / "hyp.de").write_text("EIN HUND LÄUFT ÜBER DIE WIESE.\nZWEI KATZEN SCHLAFEN.\n")
    evaluate.main(["--hyp", str(tmp_path / "hyp.de"), "--ref", str(tmp_path / "ref.de")])
    note = next(line for line in capsys.readouterr().err.splitlines() if "capitals" in line)
    says(note, "hyp.de", "all in capitals", "lowercase letters", "lowercased BLEU")


def test_a_model_writing_too_little_is_not_told_its_lines_are_good(tmp_path, capsys):
    """Two-word output against sentence references: the model writes too little, so the note
    says so and does not call the translations good."""
    (tmp_path / "ref.de").write_text("Ein Hund läuft über die grüne Wiese.\n"
                                     "Zwei Katzen schlafen auf dem Sofa.\n")
    (tmp_path / "hyp.de").write_text("Ein Hund\nZwei\n")
    evaluate.main(["--hyp", str(tmp_path / "hyp.de"), "--ref", str(tmp_path / "ref.de")])
    note = next(line for line in capsys.readouterr().err.splitlines() if "4 tokens" in line)
    says(note, "references average", "too short", "trained too briefly")
    assert "however good" not in note


def test_empty_translations_among_others_are_noted(tmp_path, capsys):
    (tmp_path / "ref.de").write_text("Ein Hund läuft.\nZwei Katzen.\nDrei Vögel.\n")
    (tmp_path / "hyp.de").write_text("Ein Hund.\n\nDrei Vögel.\n")
    evaluate.main(["--hyp", str(tmp_path / "hyp.de"), "--ref", str(tmp_path / "ref.de")])
    says(capsys.readouterr().err.splitlines()[0], "note", "hyp.de", "line 2", "1 of 3",
         "empty translation")


def test_a_bootstrap_over_a_handful_of_sentences_says_it_means_little(tmp_path, capsys):
    (tmp_path / "ref.de").write_text("Ein Hund läuft über die Wiese.\nZwei Katzen.\n")
    (tmp_path / "hyp.de").write_text("Ein Hund läuft über eine Wiese.\nZwei Katzen.\n")
    (tmp_path / "base.de").write_text("Eine Katze läuft über die Wiese.\nZwei Katzen.\n")
    evaluate.main(["--hyp", str(tmp_path / "hyp.de"), "--baseline", str(tmp_path / "base.de"),
                   "--ref", str(tmp_path / "ref.de")])
    says(capsys.readouterr().err.strip(), "note", "2 sentence", "hundreds")


def test_translate_never_writes_over_a_checkpoint_a_run_log_or_binary_bytes(tmp_path, capsys):
    """What checkpoint average and half refuse as --out, translate refuses too; its own earlier
    output, plain or gzip, it replaces."""
    (tmp_path / "in.en").write_text("A dog runs.\n")
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(SHIPPED, run / "ckpt_0000005.pt")
    (run / "metrics.jsonl").write_text('{"step": 1}\n')
    (tmp_path / "data.bin").write_bytes(b"\x00\x01\x02" * 100)
    argv = ["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.en"), "--out"]
    for out, names in [(run / "ckpt_0000005.pt", ["PyTorch checkpoint"]),
                       (run / "metrics.jsonl", ["metrics log"]),
                       (tmp_path / "data.bin", ["binary bytes"])]:
        before = out.read_bytes()
        exits_with_error(translate.main, [*argv, str(out)])
        says(error_line(capsys, alone=False), str(out), *names, "another --out")
        assert out.read_bytes() == before
    for out in (tmp_path / "out.de", tmp_path / "out.de.gz"):
        for _ in range(2):
            translate.main([*argv, str(out)])


def test_translate_notes_its_input_as_references_and_a_file_it_replaces(tmp_path, capsys):
    (tmp_path / "in.en").write_text("A dog runs.\nA man sits.\n")
    shutil.copy(tmp_path / "in.en", tmp_path / "copy.en")
    (tmp_path / "train.de").write_text("".join(f"Satz {i}.\n" for i in range(30)))
    before = (tmp_path / "train.de").read_bytes()
    argv = ["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.en")]
    translate.main([*argv, "--ref", str(tmp_path / "copy.en"), "--out", str(tmp_path / "out.de")])
    says(capsys.readouterr().err.splitlines()[0], "--ref", "copy.en", "same text", "the input",
         "copying")
    assert (tmp_path / "train.de").read_bytes() == before
    translate.main([*argv, "--out", str(tmp_path / "train.de")])
    says(capsys.readouterr().err.splitlines()[0], "train.de", "30 lines", "replace")


def test_evaluate_notes_empty_references_and_translations_in_another_script(tmp_path, capsys):
    (tmp_path / "hyp.zh").write_text("一只狗在跑。\n两个人在说话。\n一只猫。\n")
    (tmp_path / "hyp.en").write_text("A dog runs.\nTwo men talk.\nA cat.\n")
    (tmp_path / "ref.en").write_text("A dog runs.\n\nA cat sleeps.\n")
    evaluate.main(["--hyp", str(tmp_path / "hyp.zh"), "--ref", str(tmp_path / "ref.en")])
    # (the third note: sentences written without spaces are one token each, too short for BLEU)
    empty, script, _ = capsys.readouterr().err.strip().split("\n")
    says(empty, "ref.en, line 2", "empty reference", "check the references")
    says(script, "hyp.zh", "ref.en", "without spaces (zh)", "--hyp and --ref")
    evaluate.main(["--hyp", str(tmp_path / "hyp.en"), "--ref", str(tmp_path / "ref.en")])
    assert "script" not in capsys.readouterr().err          # the same script: no such note


def test_evaluate_notes_references_in_another_language_of_the_same_script(tmp_path, capsys):
    """German translations scored against the French references (both written with spaces,
    so the script check cannot tell): a note names both files and the languages they read as;
    German against German has none, only the note that its lines (reversed) are out of step."""
    import gzip
    sample = ROOT / "annotated" / "data" / "sample" / "multi30k"
    texts = {lang: gzip.open(sample / f"test_2016_flickr_sample.{lang}.gz", "rt").read()
             .splitlines()[:50] for lang in ("de", "fr")}
    for lang, lines in texts.items():
        (tmp_path / f"ref.{lang}").write_text("\n".join(lines) + "\n")
    (tmp_path / "hyp.de").write_text("\n".join(texts["de"][::-1]) + "\n")
    evaluate.main(["--hyp", str(tmp_path / "hyp.de"), "--ref", str(tmp_path / "ref.fr")])
    says(capsys.readouterr().err, "hyp.de", "de", "ref.fr", "fr", "--ref")
    evaluate.main(["--hyp", str(tmp_path / "hyp.de"), "--ref", str(tmp_path / "ref.de")])
    err = capsys.readouterr().err               # the same language, the lines in reverse
    assert "read as" not in err and len(err.splitlines()) == 1
    says(err, "out of step")


def test_evaluate_notes_translations_that_are_all_empty(tmp_path, capsys):
    (tmp_path / "hyp.de").write_text("\n\n\n")
    (tmp_path / "ref.de").write_text("Ein Hund.\nEine Katze.\nEin Mann.\n")
    evaluate.main(["--hyp", str(tmp_path / "hyp.de"), "--ref", str(tmp_path / "ref.de")])
    says(capsys.readouterr().err.splitlines()[0], "hyp.de", "every line", "empty")


def test_a_command_run_from_a_deleted_folder_says_so(tmp_path):
    """A shell left in a folder that was then deleted: torch's libraries fail to load there,
    with a fatal error that names a library; the command says what is wrong instead."""
    done = shell("mkdir gone && cd gone && rmdir ../gone && python -m annotated.evaluate --help",
                 tmp_path)
    err = done.stderr.decode()
    assert done.returncode == 1 and len(err.splitlines()) == 1, err
    says(err, "working folder", "no longer exists", "cd to an existing folder")


def test_too_little_memory_to_load_torch_is_one_line(tmp_path):
    """Under a memory limit (`ulimit -v`) importing torch fails with a MemoryError deep in the
    imports; a command says so in one line. The failure is made here by a finder that fails
    torch's import as the allocation would, whatever this machine's memory."""
    script = ("import sys\n"
              "class Full:\n"
              "    def find_spec(self, name, path=None, target=None):\n"
              "        if name == 'torch':\n"
              "            raise MemoryError\n"
              "sys.meta_path.insert(0, Full())\n"
              "sys.argv = ['-m']\n"
              "import annotated\n")
    (tmp_path / "full.py").write_text(script)
    done = shell(f"python {tmp_path / 'full.py'}", tmp_path)
    err = done.stderr.decode()
    assert done.returncode == 1 and len(err.splitlines()) == 1, err
    says(err, "too little memory", "ulimit -v", "raise the limit")


@pytest.mark.parametrize("module", ["experiments.scoring", "annotated.loss", "benchmarks.common",
                                    "annotated.exercises.grade", "experiments.machine",
                                    "book.build", "book.conf", "book.languages.en"])
def test_a_module_that_is_not_a_command_says_so_when_run_as_one(module, tmp_path):
    """`python -m experiments.scoring` (a module the commands import; or grade, which
    `python -m annotated.exercises grade` runs) used to end silently, as if it had done
    something: it names itself, says it is no command and where the commands are listed, with
    exit code 2. The book's modules too, which do not import torch (book.conf), and one that
    Python would warn about first (book.languages.en, which its package imports)."""
    done = shell(f"python -m {module} --help", tmp_path)
    err = done.stderr.decode()
    assert done.returncode == 2 and done.stdout == b"" and len(err.splitlines()) == 1, err
    says(err, module, "not a command", "docs/commands.md")


def test_an_os_error_with_a_file_names_the_fix_and_keeps_a_long_path_short():
    """A full device, a quota, a name too long: the line says what to do; a path of
    thousands of characters is shown by its two ends."""
    import errno
    from annotated.base.cli import describe
    full = describe(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/dev/full"))
    says(full, "/dev/full", "No space left", "free some space or write elsewhere")
    long = "/tmp/" + "/".join(["d" * 200] * 25)
    line = describe(OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), long))
    says(line, "too long", "shorter path", "...")
    assert len(line) < 400


def test_lines_in_capitals_and_lines_of_many_sentences_are_noted(tmp_path, capsys):
    """The shipped model writes nonsense for a line in capitals, and stops after the first of
    forty sentences on one line: each is named, with its line, before or after decoding. So is
    a line of three short sentences translated as one. An ordinary sentence (an abbreviation
    in it) gets neither note."""
    (tmp_path / "in.en").write_text("A dog runs on the grass.\nA MAN IS RIDING A BICYCLE.\n"
                                    + " ".join(["A man rides a bike."] * 40) + "\n")
    translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.en"),
                    "--out", str(tmp_path / "out.de"), "--greedy"])
    err = capsys.readouterr().err
    says(next(line for line in err.splitlines() if "capitals" in line), "1 of the first 3",
         "line 2", "ordinary sentences")
    says(next(line for line in err.splitlines() if "part of their line" in line), "line 3",
         "40 sentence(s)", "one sentence a line", "split")
    (tmp_path / "in.en").write_text("A dog runs on the grass.\nA dog runs. A man sits. A girl "
                                    "sings.\n")
    translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.en"),
                    "--out", str(tmp_path / "three.de"), "--greedy"])
    says(next(line for line in capsys.readouterr().err.splitlines()
              if "part of their line" in line), "line 2", "3 sentence(s)", "split")
    (tmp_path / "in.en").write_text("A dog runs on the grass.\nMr. Smith rides a bike.\n")
    translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.en"),
                    "--out", str(tmp_path / "other.de"), "--greedy"])
    err = capsys.readouterr().err
    assert "written in capitals" not in err and "part of their line" not in err


@pytest.mark.parametrize("text, count", [
    ("A man rides a bike.", 1), ("Hi. How are you? I'm fine.", 3), ("Mr. Smith walks.", 1),
    ("J. K. Rowling writes. She wins.", 2), ('"Stop!" he said.', 1), ("3.5 m tall.", 1),
    ("Er kam. „Hallo“, sagte er.", 2), ("他来了。她走了。", 2), ("Ein Mann.  ", 1),
    ("Wait... What?! No.", 3), ("." * 100_000, 1)])
def test_sentences_are_counted_by_their_ends_not_by_abbreviations_or_quotes(text, count):
    from annotated.inference.batched import sentence_count
    assert sentence_count(text) == count


@pytest.mark.parametrize("encoding", ["ascii", "utf-8"])
@pytest.mark.parametrize("name", ["runs/ü ñ", "it's \\ here", "plain"])
def test_a_printed_command_names_the_file_even_where_stdout_cannot_write_its_name(
        monkeypatch, encoding, name):
    """The "Next:" commands quote each path as one shell word; on an ASCII terminal a name
    with an umlaut is written in bash's $'...' form, which pasted back names the same file."""
    import io
    from annotated.base.cli import shell_word
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding=encoding))
    word = shell_word(name)
    word.encode(encoding)                                  # stdout can write it as it is
    echoed = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True,
                            check=True).stdout
    assert echoed.decode("utf-8") == name
