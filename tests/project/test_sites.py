"""Both documentation sites, built here and read in a real browser (headless Chromium).

The sites are built as ``bash .ci/dev docs`` builds them (docs/website/build_sites.py:
mkdocs --strict, then pkgdown into r/), served from 127.0.0.1 (Material's
search needs http, not file://) and opened in Debian's chromium through
/usr/bin/chromedriver (selenium, the ``docs`` extra). The assertions are on
what the browser rendered: titles, function signatures, search results,
the links between the two sites, and a console without errors. Chromium
resolves no host but 127.0.0.1, so a page that needed the network would log
an error here even on a machine that has one.
"""

from __future__ import annotations

import functools
import re
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests._env import subprocess_environ
from tests._scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
APT_HINT = ("install Debian's chromium and chromium-driver (apt-get install chromium "
            "chromium-driver; `bash .ci/dev setup` and the README's test command do)")
WAIT = 30  # seconds a rendered element may take to appear (a bound, not a timing assertion)


def _load_builder():
    return load_script("docs/website/build_sites.py")


def _vignette_titles():
    titles = {}
    for path in sorted((ROOT / "vignettes").glob("*.md")):
        first = next(line for line in path.read_text(encoding="utf-8").splitlines()
                     if line.startswith("# "))
        # As rendered: no backticks (code spans), no link brackets.
        titles[path.name] = re.sub(r"[`\[\]]", "", first[2:]).strip()
    return titles


def _r_exports():
    text = (ROOT / "r" / "NAMESPACE").read_text()
    return re.findall(r"^export\(([^)]+)\)", text, flags=re.M)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "site"
    builder = _load_builder()
    try:
        builder.build(out, env=subprocess_environ())
    except builder.BuildError as error:
        pytest.fail(f"the documentation sites did not build:\n{error}")
    return out


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser():
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if shutil.which(str(p)) is None]
    if missing:
        pytest.fail(f"the browser test needs {', '.join(missing)}: {APT_HINT}")
    try:
        from selenium import webdriver
    except ImportError:
        pytest.fail("the browser test needs selenium: pip install -e '.[docs]' "
                    "(`bash .ci/dev setup` installs the docs extra)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1400,1000",
                     # Only the local server answers: any request for the network fails (and logs).
                     "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver: selenium's manager downloads nothing.
    driver = webdriver.Chrome(service=webdriver.ChromeService(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _open(browser, url):
    browser.get_log("browser")  # drop what earlier pages logged
    browser.get(url)
    return browser


def _errors(browser):
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def _wait_for(browser, css, text=None, attribute=None):
    """The first visible element matching ``css`` (and holding ``text``), or its ``attribute``.

    Search boxes re-render their results on every key, so an element found a
    moment ago may be gone: such a stale element is looked for again, not an
    error. Ask for ``attribute`` (e.g. a result's href) to read it in the same
    look-up, before the list can change again.
    """
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def found(driver):
        for element in driver.find_elements(By.CSS_SELECTOR, css):
            if element.is_displayed() and (text is None or text in element.text):
                return element if attribute is None else element.get_attribute(attribute)
        return False

    return WebDriverWait(browser, WAIT, ignored_exceptions=(StaleElementReferenceException,)).until(
        found, f"no visible {css!r} containing {text!r}")


def test_python_home_page_renders_the_readme_and_lists_every_vignette(browser, server):
    from selenium.webdriver.common.by import By

    _open(browser, server + "index.html")
    assert browser.title.startswith("pystratum")
    assert _wait_for(browser, "article h1").text == "pystratum"
    assert "Mini-batches that contain every class" in browser.find_element(By.TAG_NAME,
                                                                           "article").text
    figure = browser.find_element(By.CSS_SELECTOR, "article img[src$='demo.png']")
    assert browser.execute_script("return arguments[0].naturalWidth", figure) > 0
    nav = browser.find_element(By.CSS_SELECTOR, "nav.md-nav--primary").get_attribute("textContent")
    for name, title in _vignette_titles().items():
        assert title in nav, f"vignettes/{name} ({title!r}) is not in the site's navigation"
    for page in ("API reference", "Benchmarks", "Architecture", "R package"):
        assert page in nav
    assert _errors(browser) == []


def test_python_api_page_shows_signatures_and_docstrings(browser, server):
    _open(browser, server + "reference/pystratum.html")
    assert browser.title.startswith("pystratum")
    heading = _wait_for(browser, "[id='pystratum.plan_batches']")
    assert "plan_batches(strata, policy=None, *, seed=None" in heading.text
    assert "-> BatchPlan" in heading.text
    assert _wait_for(browser, "[id='pystratum.stratified_batches']").text.startswith(
        "stratified_batches(")
    # Docstring text, with the reStructuredText roles read as code (docs/website/griffe_rst.py).
    body = browser.find_element("css selector", "article").text
    assert ":func:" not in body and ":class:" not in body
    assert _errors(browser) == []


def test_python_cli_and_policies_pages(browser, server):
    _open(browser, server + "reference/cli.html")
    assert "usage: pystratum" in _wait_for(browser, "article pre").text
    _open(browser, server + "reference/policies.html")
    assert "FixedSize(" in _wait_for(browser, "[id='pystratum.policies.FixedSize']").text
    assert _errors(browser) == []


def test_python_search_finds_a_function(browser, server):
    _open(browser, server + "index.html")
    box = _wait_for(browser, "input.md-search__input")  # the header's search box
    box.click()
    box.send_keys("plan_batches")
    target = _wait_for(browser, ".md-search-result__item a", "plan_batches", attribute="href")
    assert target.startswith(server), target
    assert _errors(browser) == []


def test_python_site_links_to_the_r_site_and_back(browser, server):
    from selenium.webdriver.common.by import By

    _open(browser, server + "index.html")
    link = browser.find_element(By.XPATH, "//nav[contains(@class,'md-nav--primary')]"
                                           "//a[normalize-space()='R package']")
    assert link.get_attribute("href") == server + "r/index.html"
    browser.get(link.get_attribute("href"))
    assert "pystratum" in _wait_for(browser, "nav.navbar a.navbar-brand").text
    assert browser.title.endswith("pystratum")  # pkgdown's home, not the placeholder page
    back = browser.find_element(By.LINK_TEXT, "Python package")
    assert back.get_attribute("href") == server + "index.html"
    back.click()
    assert _wait_for(browser, "article h1").text == "pystratum"
    assert _errors(browser) == []


def test_r_reference_index_groups_every_export(browser, server):
    from selenium.webdriver.common.by import By

    _open(browser, server + "r/reference/index.html")
    assert browser.title.startswith("Function reference")
    groups = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "main h2")]
    assert groups[:5] == ["Batches", "Policies", "mlr3torch sampler", "Generated negatives",
                          "Counts and plots"]
    listed = browser.find_element(By.TAG_NAME, "main").text
    for name in _r_exports():
        assert f"{name}(" in listed, f"R export {name}() is not in the reference index"
    assert _errors(browser) == []


def test_r_function_page_shows_usage_and_examples(browser, server):
    from selenium.webdriver.common.by import By

    _open(browser, server + "r/reference/stratified_batches.html")
    assert browser.title.startswith("Mini-batches that contain every stratum")
    usage = _wait_for(browser, "div:has(> #ref-usage)", "stratified_batches(")
    assert "min_samples_per_stratum" in usage.text
    examples = browser.find_element(By.CSS_SELECTOR, "div:has(> #ref-examples)").text
    assert "#> " in examples  # examples were run, their output shown
    toc = browser.find_element(By.ID, "toc").text
    assert "Usage" in toc and "Examples" in toc  # pkgdown/extra.js filled it
    assert _errors(browser) == []


def test_r_vignette_news_and_search(browser, server):
    from selenium.webdriver.common.by import By

    _open(browser, server + "r/articles/pystratum.html")
    assert browser.title.startswith("Mini-batches that contain every class")
    assert "#> " in browser.find_element(By.TAG_NAME, "main").text  # the vignette ran
    _open(browser, server + "r/news/index.html")
    assert "pystratum 0.1.0" in _wait_for(browser, "main").text
    box = browser.find_element(By.ID, "search-input")
    box.send_keys("negative_pair")
    # The result's link, read as it is found (the list re-renders as keys arrive), then followed.
    target = _wait_for(browser, "#search-results a", "negative_pair_batches", attribute="href")
    assert "reference/negative_pair_batches.html" in target, target
    browser.get(target)
    assert "negative_pair_batches(" in _wait_for(browser, "div:has(> #ref-usage)").text
    assert _errors(browser) == []


def test_readme_code_is_never_cut_off_behind_a_scroll_bar(browser, server):
    _open(browser, server + "index.html")
    _wait_for(browser, "article pre > code")
    overflowing = browser.execute_script(
        "return Array.from(document.querySelectorAll('article pre > code'))"
        ".filter(c => c.scrollWidth > c.clientWidth + 1)"
        ".map(c => c.textContent.split('\\n')[0])")
    assert overflowing == []
    assert _errors(browser) == []


def test_policies_page_opens_with_the_policies_and_ends_with_the_internals(browser, server):
    _open(browser, server + "reference/policies.html")
    _wait_for(browser, "[id='pystratum.policies.MinPerStratum']")
    documented = browser.execute_script(
        "return Array.from(document.querySelectorAll(\"article [id^='pystratum.policies.']\"))"
        ".map(h => h.id).filter(id => id.split('.').length == 3)")  # objects, not members
    policies = ["MinPerStratum", "FixedSize", "Targets", "ClassesPerBatch", "Downsample",
                "MultiLabel"]
    assert [name.split(".")[-1] for name in documented[:6]] == policies
    assert documented.index("pystratum.policies.Allocation") > 6
    body = browser.find_element("css selector", "article").text
    assert "about batch_size rows" not in body and "exactly batch_size rows" in body


def test_stratified_trainer_parameters_are_a_table(browser, server):
    _open(browser, server + "reference/integrations.html")
    _wait_for(browser, "[id='pystratum.integrations.transformers.StratifiedTrainer']")
    rows = browser.execute_script(
        "const h = document.getElementById("
        "'pystratum.integrations.transformers.StratifiedTrainer');"
        "const table = h.parentElement.querySelector('table');"
        "return table ? Array.from(table.tBodies[0].rows).map(r => r.cells[0].textContent.trim())"
        " : [];")
    assert rows == ["strata", "policy", "seed", "rng", "allow_single_batch"]


def test_fixed_vignettes_show_the_sampler_for_multilabel_and_accumulation(browser, server):
    _open(browser, server + "vignettes/multi-label.html")
    body = _wait_for(browser, "article").text
    assert "does not yet serve" not in body
    assert "StratifiedBatchSampler(labels, policy, seed=0)" in body
    _open(browser, server + "vignettes/trainers.html")
    body = _wait_for(browser, "article").text
    assert "Gradient accumulation." in body and "8 micro-batches, 4 optimizer steps" in body
    assert "ClassesPerBatch(P, 1)" in body
    assert _errors(browser) == []
