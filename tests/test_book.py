"""The chapters' website (`python -m book build`): built from the committed notebooks into a
temporary folder, then every page opened in headless Chromium over http on 127.0.0.1.

Per page the browser test asserts: no console error, no request that leaves the site, no math
left as raw `$...$` or unrendered `\\(...\\)`, no MathJax error, no equation wider than the
column (at 1280 pixels), every image loaded, every internal link (and its #fragment) found;
chapters also have rendered math, a folded figure cell, a download link and a 'next' link to
the next chapter. It saves a screenshot of each page's top in build/screenshots/ (ignored by
git) and is skipped when no Chromium or chromedriver is here.
"""
import functools
import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
SCREENSHOTS = ROOT / "build" / "screenshots"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--window-size=1280,900"]

# The page's prose as a reader sees it: code, scripts and rendered math removed.
VISIBLE_PROSE_JS = """
const body = document.body.cloneNode(true);
body.querySelectorAll('pre, code, script, style, mjx-container, .MathJax').forEach(e => e.remove());
return body.innerText;
"""
# Resolves once MathJax has typeset the page and every image has loaded or failed.
SETTLED_JS = """
const done = arguments[arguments.length - 1];
const images = [...document.images].map(img => {
  img.scrollIntoView();
  return img.complete ? null : new Promise(r => { img.onload = img.onerror = r; });
});
const math = window.MathJax && MathJax.startup ? MathJax.startup.promise : null;
Promise.all([...images, math]).then(() => done(true), () => done(false));
"""
PAGE_FACTS_JS = """
return {
  broken_images: [...document.images].filter(i => !(i.naturalWidth > 0)).map(i => i.src),
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  math_errors: document.querySelectorAll('mjx-merror').length,
  rendered_math: document.querySelectorAll('mjx-container').length,
  wide_math: [...document.querySelectorAll('mjx-container[display="true"]')]
    .filter(e => e.scrollWidth > e.clientWidth + 1).length,
  next: (document.querySelector('a.right-next') || {}).href || null,
  folded_cells: document.querySelectorAll('details.hide.above-input').length,
};
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built by the documented command into a temporary folder."""
    out = tmp_path_factory.mktemp("book") / "site"
    subprocess.run([sys.executable, "-m", "book", "build", "--out", str(out)], cwd=ROOT,
                   check=True)
    return out


def pages(site: Path) -> list[Path]:
    """The site's pages (its _static/ folder holds theme templates that are not pages)."""
    return sorted(site.glob("*.html"))


def test_site_has_every_chapter_and_its_notebook(site):
    names = {p.name for p in pages(site)}
    assert {"index.html", "search.html"} | {f"{c}.html" for c in CHAPTERS} <= names
    assert len(CHAPTERS) == 9
    for chapter in CHAPTERS:
        copy = site / "notebooks" / f"{chapter}.ipynb"
        assert copy.read_bytes() == (ROOT / "chapters" / f"{chapter}.ipynb").read_bytes()


def test_reading_time_counts_prose_code_shown_source_and_figures():
    from book.build import reading
    figure = {"output_type": "display_data", "data": {"image/png": "", "text/plain": ""}}
    listing = {"output_type": "display_data", "data": {"text/markdown": ["a\n", "b\n"]}}
    printed = {"output_type": "stream", "name": "stdout", "text": ["not counted\n"] * 50}
    nb = {"cells": [{"cell_type": "markdown", "source": ["word " * 300]},
                    {"cell_type": "code", "source": ["x = 1\n"] * 8, "outputs": [listing, printed]},
                    {"cell_type": "code", "source": ["draw()"], "outputs": [figure, figure]}]}
    minutes, counts = reading(nb)
    assert counts == "300 words, 11 lines of code, 2 figures"
    assert minutes == 300 / 200 + 11 / 20 + 2 * 0.5


@pytest.fixture
def fake_sphinx(monkeypatch):
    """book.build with Sphinx replaced by a stand-in that writes `pages` (or fails): the
    output folder's handling without a real build."""
    from book import build as book_build
    site = {"pages": ["index.html", "01.html"], "code": 0}

    def build_main(args):
        out = Path(args[-1])
        out.mkdir(parents=True, exist_ok=True)
        for name in site["pages"]:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_text(f"<html>{name}</html>")
        return site["code"]
    monkeypatch.setattr(book_build, "build_main", build_main)
    return book_build, site


def test_a_rebuild_replaces_only_what_the_last_build_wrote(tmp_path, fake_sphinx):
    build, site = fake_sphinx
    out = tmp_path / "site"
    build.build(out)
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / "CNAME").write_text("book.example.org\n")
    site["pages"] = ["index.html", "_static/new.css"]              # 01.html is gone now
    build.build(out)
    assert (out / ".git" / "HEAD").is_file() and (out / "CNAME").is_file()
    assert (out / "_static" / "new.css").is_file() and not (out / "01.html").exists()
    assert "01.html" not in (out / build.MANIFEST).read_text()


def test_a_failed_build_leaves_the_site_that_was_there(tmp_path, fake_sphinx):
    build, site = fake_sphinx
    out = tmp_path / "site"
    build.build(out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    site["code"], site["pages"] = 1, ["index.html", "other.html"]
    with pytest.raises(SystemExit, match="the site that was there, if any, is unchanged"):
        build.build(out)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["site"]       # no temporary folder left


@pytest.mark.parametrize("case", ["not a site", "a file in the way", "would overwrite"])
def test_an_output_folder_that_is_not_a_site_built_here_is_refused(tmp_path, fake_sphinx,
                                                                   case):
    build, site = fake_sphinx
    out = tmp_path / "site"
    out.mkdir()
    if case == "not a site":
        (out / "notes.txt").write_text("mine\n")
        (out / ".buildinfo").write_text("an earlier Sphinx site, or a copy of one\n")
        words = "holds no site built by this command"
    elif case == "a file in the way":
        out.rmdir()
        out.write_text("a file\n")
        out = out / "site"
        words = "is a file; choose another --out"
    else:
        build.build(out)
        (out / "CNAME").write_text("mine\n")
        site["pages"] = ["index.html", "CNAME"]
        words = "would overwrite but did not write (CNAME)"
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(SystemExit, match=re.escape(words)):
        build.build(out)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_a_notebook_that_is_not_json_is_one_line(tmp_path, fake_sphinx, monkeypatch):
    build, _ = fake_sphinx
    broken = tmp_path / "chapters" / "01_broken.ipynb"
    broken.parent.mkdir()
    broken.write_text('{"cells": [')
    monkeypatch.setattr(build, "CHAPTERS", broken.parent)
    monkeypatch.setattr(build, "ROOT", tmp_path)
    with pytest.raises(SystemExit, match=r"01_broken.ipynb is not a readable notebook"):
        build.build(tmp_path / "site")


def test_every_chapter_page_and_the_index_give_a_reading_time(site):
    for chapter in CHAPTERS:
        page = (site / f"{chapter}.html").read_text(encoding="utf-8")
        assert re.search(r'class="reading-time">About \d+ minutes to read \([\d,]+ words', page)
    index = (site / "index.html").read_text(encoding="utf-8")
    assert re.search(rf"Reading all {len(CHAPTERS)} chapters takes about \d+\.\d hours", index)


def test_site_names_no_network_resource(site):
    """No page or stylesheet points a script, style, font or image at another host."""
    remote = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//""")
    for path in pages(site) + sorted(site.rglob("*.css")):
        text = path.read_text(encoding="utf-8", errors="replace")
        text = re.sub(r"<a\s[^>]*>", "", text)     # plain links to read elsewhere are allowed
        assert not remote.search(text), f"{path.relative_to(site)} loads {remote.search(text)[0]}"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(site):
    """The site served over http on 127.0.0.1; yields its base URL."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                            functools.partial(QuietHandler, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    thread.join()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium driven through the system's chromedriver (nothing is downloaded)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.skip("no headless browser: install Debian's chromium and chromium-driver "
                    "(apt-get install chromium chromium-driver) to check the site's pages")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(driver_path))
    driver.set_script_timeout(60)
    driver.get("about:blank")
    driver.get_log("browser"), driver.get_log("performance")     # the start page's own
    yield driver
    driver.quit()


def requested_urls(driver) -> list[str]:
    """Every URL the page asked for since the last call (Chrome's performance log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


@functools.lru_cache(maxsize=None)
def fetch(url: str) -> tuple[int, str]:
    """HTTP status and text of a page of the local site."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, ""


def check_link(url: str) -> str | None:
    """None if an internal link resolves (and its #fragment exists), else the problem."""
    target, fragment = urldefrag(url)
    status, text = fetch(target)
    if status != 200:
        return f"{url}: HTTP {status}"
    if fragment and target.endswith(".html") and f'id="{fragment}"' not in text:
        return f"{url}: no element with id {fragment!r}"
    return None


def visit(driver, url: str) -> dict:
    """Open one page, wait until it settles, and return what the assertions need."""
    driver.get_log("browser"), driver.get_log("performance")     # drop the previous page's
    driver.get(url)
    assert driver.execute_async_script(SETTLED_JS), f"{url}: MathJax or an image failed"
    facts = driver.execute_script(PAGE_FACTS_JS)
    facts["prose"] = driver.execute_script(VISIBLE_PROSE_JS)
    facts["errors"] = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    facts["requests"] = requested_urls(driver)
    driver.execute_script("window.scrollTo(0, 0)")
    return facts


def page_problems(name: str, facts: dict, server: str) -> list[str]:
    """What is wrong with one visited page, one line each."""
    problems = [f"console error: {e}" for e in facts["errors"]]
    problems += [f"requested {u}" for u in facts["requests"]
                 if not u.startswith((server, "data:", "blob:", "about:"))]
    problems += [f"image not loaded: {u}" for u in facts["broken_images"]]
    raw = re.findall(r"\$\$?[^$\s][^$]*\$|\\\(|\\\[", facts["prose"])
    problems += [f"math not rendered: {r[:60]!r}" for r in raw]
    if facts["math_errors"] or facts["wide_math"]:
        problems.append(f"{facts['math_errors']} MathJax errors, "
                        f"{facts['wide_math']} equations wider than the column")
    problems += [f"broken link {problem}" for link in set(facts["links"])
                 if link.startswith(server) and (problem := check_link(link))]
    stem = name.removesuffix(".html")
    if stem in CHAPTERS:
        following = CHAPTERS.index(stem) + 1
        expected = CHAPTERS[following] + ".html" if following < len(CHAPTERS) else None
        next_page = facts["next"] and urlsplit(facts["next"]).path.lstrip("/")
        problems += [message for failed, message in [
            (facts["rendered_math"] == 0, "no math rendered"),
            (facts["folded_cells"] == 0, "no figure cell folded"),
            (server + f"notebooks/{stem}.ipynb" not in facts["links"], "no download link"),
            (next_page != expected, f"'next' goes to {next_page}, not {expected}")] if failed]
    return [f"{name}: {problem}" for problem in problems]


def test_every_page_in_a_browser(site, server, browser):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems = []
    for path in pages(site):
        facts = visit(browser, server + path.name)
        browser.save_screenshot(str(SCREENSHOTS / f"{path.stem}.png"))
        problems += page_problems(path.name, facts, server)
        if path.name == "index.html":
            first = urlsplit(facts["next"] or "").path.lstrip("/")
            assert first == f"{CHAPTERS[0]}.html", f"index: 'next' goes to {first}"
    assert not problems, "\n".join(problems)
