"""Download and prepare WMT 2014 English-German, the paper's data (§5.1): "the standard WMT 2014
English-German dataset consisting of about 4.5 million sentence pairs".

    python -m annotated.data.prepare_wmt14 --out-dir DIR     (needs internet and about 3 GB of disk)

writes into DIR the files `load_corpus` reads for dataset="wmt14" (point --data-dir or
ANNOTATED_DATA_DIR at DIR; without --out, DIR is the cache's wmt14/ folder, where load_corpus
looks by default):

    train.{en,de}          Europarl v7 + Common Crawl + News Commentary v9, in that order
    newstest2013.{en,de}   the development set (the paper's "newstest2013", Table 3)
    newstest2014.{en,de}   the full 3,003-sentence test set, from the `test-full` SGML files
    manifest.json          sha256 and size of every archive, line count and sha256 of every output

The archives are the ones the WMT14 shared task published on statmt.org (the URLs below are
the task page's well-known links; statmt.org publishes no checksums for them, so none is pinned
here: the manifest records what was downloaded, to compare machines or reruns). They are kept
in DIR/downloads, so a rerun reuses them. Text is copied as is (no tokenization, no cleaning):
the only changes are SGML markup and entities removed from the test set. Every corpus is
checked to have as many English as German lines, and the test set's English and German
segments to carry the same document and segment ids, in order. Since no checksum is published,
the corpora's sizes are checked instead (about 4.5 million training pairs, 3,000 sentences in
newstest2013, 3,003 in newstest2014), before any file is written: an archive that is not the
published one is named, with the fix.
"""
import html
import json
import re
import shutil
import tarfile
import tempfile
from pathlib import Path

from annotated.base.cli import ArgumentParser, command, path
from annotated.base.errors import DataError
from annotated.base.files import atomic_open, download, read_lines, sha256_file
from annotated.data.corpus import cache_folder

STATMT = "http://www.statmt.org/"
URLS = {
    "training-parallel-europarl-v7.tgz": STATMT + "wmt13/training-parallel-europarl-v7.tgz",
    "training-parallel-commoncrawl.tgz": STATMT + "wmt13/training-parallel-commoncrawl.tgz",
    "training-parallel-nc-v9.tgz": STATMT + "wmt14/training-parallel-nc-v9.tgz",
    "dev.tgz": STATMT + "wmt14/dev.tgz",
    "test-full.tgz": STATMT + "wmt14/test-full.tgz",
}
# Where each side is: (archive, the file's name inside it, whatever its folder there).
TRAIN = {
    "europarl": ("training-parallel-europarl-v7.tgz", "europarl-v7.de-en.{lang}"),
    "commoncrawl": ("training-parallel-commoncrawl.tgz", "commoncrawl.de-en.{lang}"),
    "news-commentary": ("training-parallel-nc-v9.tgz", "news-commentary-v9.de-en.{lang}"),
}
DEV = ("dev.tgz", "newstest2013.{lang}")
TEST = {"en": ("test-full.tgz", "newstest2014-deen-src.en.sgm"),
        "de": ("test-full.tgz", "newstest2014-deen-ref.de.sgm")}
LANGS = ("en", "de")
#: The published corpora's sentence pairs: (at least, exactly?). Training has about 4.5
#: million (§5.1); the development and test sets have a fixed number of sentences.
PUBLISHED = {"train": (4_000_000, False), "newstest2013": (3_000, True),
             "newstest2014": (3_003, True)}


def extract(archive: Path, names: list[str], folder: Path) -> dict[str, Path]:
    """Copy the members of a .tgz whose file names (any folder) are in `names` into `folder`,
    in one pass over the archive. A name not found is an error listing what the archive holds."""
    found, seen = {}, []
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                name = Path(member.name).name
                seen.append(member.name)
                if member.isfile() and name in names:
                    found[name] = folder / name
                    with tar.extractfile(member) as src, open(found[name], "wb") as dst:
                        shutil.copyfileobj(src, dst)
    except (tarfile.TarError, EOFError, OSError) as e:
        if isinstance(e, OSError) and e.filename:
            raise
        raise DataError(f"{archive} is not a complete .tgz archive ({e}); delete it, and the "
                        f"next run downloads it again") from None
    missing = [n for n in names if n not in found]
    if missing:
        held = ", ".join(seen[:5]) + (f" and {len(seen) - 5:,} more" if len(seen) > 5 else "")
        raise DataError(f"{archive} has no {', '.join(missing)}; it holds: {held}; "
                        f"{refetch(archive)}")
    return found


def refetch(archive: Path) -> str:
    """What to do about an archive that is not the published one."""
    return (f"it is not the archive WMT 2014 published: delete {archive}, and the next run "
            f"downloads it again")


_DOC = re.compile(r'<doc\b[^<>]*\bdocid="([^"]*)"', re.IGNORECASE)
# A segment's opening tag. Its text runs to the line's last </seg>, found with rfind: a pattern
# asking for it would try again from every <seg of a line that has none.
_SEG = re.compile(r'<seg\b[^<>]*\bid="?([^">\s]*)"?[^<>]*>', re.IGNORECASE)


def read_sgml(path) -> tuple[list[str], list[tuple[str, str]]]:
    """The segments of a WMT SGML file, entities unescaped (&amp; -> &, &quot; -> "), and
    their (document id, segment id) pairs, in file order."""
    texts, ids, doc = [], [], None
    for line in read_lines(path):
        if m := _DOC.search(line):
            doc = m.group(1)
        m = _SEG.search(line)
        if m and (end := line.lower().rfind("</seg>")) >= m.end():
            ids.append((doc, m.group(1)))
            texts.append(html.unescape(line[m.end():end]).strip())
    return texts, ids


def aligned_sgml(src_path, ref_path) -> tuple[list[str], list[str]]:
    """Source and reference segments of a test set, checked to be the same documents and
    segments in the same order."""
    src, src_ids = read_sgml(src_path)
    ref, ref_ids = read_sgml(ref_path)
    if src_ids != ref_ids:
        n = next((i for i, (a, b) in enumerate(zip(src_ids, ref_ids)) if a != b),
                 min(len(src_ids), len(ref_ids)))
        raise DataError(f"{src_path} ({len(src_ids):,} segments) and {ref_path} "
                         f"({len(ref_ids):,} segments) are not aligned: segment {n + 1} is "
                         f"{src_ids[n] if n < len(src_ids) else 'missing'} in one and "
                         f"{ref_ids[n] if n < len(ref_ids) else 'missing'} in the other")
    return src, ref


def aligned_counts(parts: list[tuple[Path, Path, Path]]) -> list[int]:
    """The sentence pairs of each (archive, English file, German file) part, after checking that
    both files have as many lines (only "\\n" ends a line: read_lines)."""
    counts = []
    for archive, en, de in parts:
        n_en, n_de = (sum(1 for _ in read_lines(side)) for side in (en, de))
        if n_en != n_de:
            raise DataError(f"{archive}: its {en.name} has {n_en:,} lines but its {de.name} "
                            f"has {n_de:,}, where a parallel corpus is line-aligned; "
                            f"{refetch(archive)}")
        counts.append(n_en)
    return counts


def concatenate(parts: list[tuple[Path, Path, Path]], out_en: Path, out_de: Path) -> None:
    """Append each (archive, English, German) part's files to out_en and out_de."""
    for out, side in ((out_en, 1), (out_de, 2)):
        write_lines(out, (line for part in parts for line in read_lines(part[side])))


def write_lines(path, lines):
    with atomic_open(path, "w") as f:
        for line in lines:
            f.write(line + "\n")


def prepare(out, urls=URLS, log=print) -> dict:
    """Download what is missing into out/downloads, then write the text files and the manifest.
    Archives are extracted into a fresh temporary folder inside `out`, removed at the end: no
    file this did not write is ever deleted."""
    out = Path(out)
    downloads = out / "downloads"
    if out.exists() and not out.is_dir():
        raise DataError(f"--out-dir {out} is a file; give a folder (it need not exist)")
    _check_not_users(out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=out, prefix=".extracted-"))   # fails early if unwritable
    try:
        manifest = {"archives": {}, "corpora": {}, "outputs": {}}
        for name, url in urls.items():
            path = downloads / name
            if not path.is_file():
                log(f"downloading {url}")
                download(url, path)
            manifest["archives"][name] = {"url": url, "bytes": path.stat().st_size,
                                          "sha256": sha256_file(path)}
        _write_corpora(downloads, work, out, manifest, log)
    finally:
        shutil.rmtree(work)
    for stem in ("train", "newstest2013", "newstest2014"):
        for lang in LANGS:
            path = out / f"{stem}.{lang}"
            manifest["outputs"][path.name] = {"lines": sum(1 for _ in read_lines(path)),
                                              "sha256": sha256_file(path)}
    with atomic_open(out / "manifest.json", "w") as f:
        json.dump(manifest, f, indent=1)
    log(f"wrote {out}: " + ", ".join(f"{name} {info['lines']:,} lines"
                                     for name, info in manifest["outputs"].items()))
    return manifest


OUTPUTS = [f"{stem}.{lang}" for stem in ("train", "newstest2013", "newstest2014")
           for lang in LANGS]


def _check_not_users(out: Path) -> None:
    """Refuse to write over a file of the output names (train.en is also the name of a user's
    own corpus) unless an earlier run's manifest.json records it as written by this script,
    unchanged since."""
    try:
        recorded = json.loads((out / "manifest.json").read_text())["outputs"]
    except (OSError, ValueError, KeyError, TypeError):
        recorded = {}
    for name in OUTPUTS:
        path = out / name
        entry = recorded.get(name) if isinstance(recorded, dict) else None
        if path.exists() and not (isinstance(entry, dict)
                                  and entry.get("sha256") == sha256_file(path)):
            raise DataError(f"{path} exists and was not written by this script (no "
                            f"{out / 'manifest.json'} records it as it is): choose another "
                            f"--out-dir, or move it away")


def _write_corpora(downloads: Path, work: Path, out: Path, manifest: dict, log) -> None:
    """Extract the members prepare() needs into `work`, then write the text files into `out`."""
    wanted = {}                               # archive -> member names to extract
    for archive, pattern in [*TRAIN.values(), DEV]:
        wanted.setdefault(archive, []).extend(pattern.format(lang=lang) for lang in LANGS)
    for archive, member in TEST.values():
        wanted.setdefault(archive, []).append(member)
    files = {}
    for archive, names in wanted.items():
        log(f"extracting {', '.join(names)} from {archive}")
        files.update(extract(downloads / archive, names, work))

    parts = [(downloads / archive, *(files[pattern.format(lang=lang)] for lang in LANGS))
             for archive, pattern in TRAIN.values()]
    dev = [(downloads / DEV[0], *(files[DEV[1].format(lang=lang)] for lang in LANGS))]
    en, de = aligned_sgml(files[TEST["en"][1]], files[TEST["de"][1]])
    counts = aligned_counts(parts)            # every check before any file is written
    published(sum(counts), "train", ", ".join(str(part[0]) for part in parts))
    published(aligned_counts(dev)[0], "newstest2013", dev[0][0])
    published(len(en), "newstest2014", downloads / TEST["en"][0])
    concatenate(parts, out / "train.en", out / "train.de")
    manifest["corpora"] = dict(zip(TRAIN, counts))
    concatenate(dev, out / "newstest2013.en", out / "newstest2013.de")
    write_lines(out / "newstest2014.en", en)
    write_lines(out / "newstest2014.de", de)


def published(pairs: int, corpus: str, archives) -> None:
    """Refuse a corpus that is not the size WMT 2014 published (PUBLISHED): the archives it
    came from are not the published ones, and a model trained or scored on it would report
    numbers that mean nothing."""
    least, exactly = PUBLISHED[corpus]
    if pairs < least or (exactly and pairs != least):
        size = f"{least:,}" if exactly else f"at least {least:,} (about 4.5 million, §5.1)"
        raise DataError(f"{archives} hold {pairs:,} sentence pairs of {corpus}, where the "
                        f"published WMT 2014 English-German has {size}; they are not the "
                        f"published archives: delete them, and the next run downloads them "
                        f"again")


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m annotated.data.prepare_wmt14",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", type=path, default=None,
                        help="output folder (default: the cache's wmt14/, where training looks)")
    return parser.parse_args(argv)


@command
def main(argv=None):
    prepare(parse_args(argv).out_dir or cache_folder() / "wmt14")


if __name__ == "__main__":
    main()
