"""The review page in a real headless Chromium (Debian's chromium + chromedriver)."""

import hashlib
import os
import shutil
from pathlib import Path

import httpx
import pytest
from helpers.servers import ServeProcess

selenium = pytest.importorskip("selenium")
from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.select import Select  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
ARTIFACTS = Path(os.environ.get("GROUNDSENSE_ARTIFACTS", Path(__file__).resolve().parents[2] / "test-artifacts"))


@pytest.fixture
def browser(tmp_path):
    if not (CHROMIUM and DRIVER):
        pytest.skip("needs Debian's chromium and chromium-driver (`make test-system` installs them when run as root)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1400,1300", f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=DRIVER))
    yield driver
    driver.quit()


def open_example(browser, live_server, example: dict) -> WebDriverWait:
    """Open the page, wait for the scorer, and load the passages-qa example into the form."""
    browser.get(live_server.url + "/")
    wait = WebDriverWait(browser, 300)
    wait.until(ec.text_to_be_present_in_element((By.ID, "ready"), "ready"))
    Select(browser.find_element(By.ID, "example")).select_by_value("passages-qa")
    browser.find_element(By.ID, "load-example").click()
    wait.until(lambda d: d.find_element(By.ID, "answer").get_attribute("value") == example["answer"])
    return wait


def test_review_page_shows_highlights_and_support(live_server, browser):
    example = httpx.get(f"{live_server.url}/v1/examples/passages-qa").json()
    expected = httpx.post(f"{live_server.url}/v1/detect", json=example, timeout=300).json()

    wait = open_example(browser, live_server, example)
    browser.find_element(By.ID, "run").click()
    wait.until(ec.visibility_of_element_located((By.ID, "support")))

    spans = browser.find_elements(By.CSS_SELECTOR, "#answer-view .s")
    assert [s.text for s in spans] == [s["text"] for s in expected["sentences"]]
    for span, sentence in zip(spans, expected["sentences"]):
        assert ("s-flagged" in span.get_attribute("class")) == bool(sentence["flagged"])

    # Keyboard: Tab to a sentence and press Enter to show its support.
    target = next(s for s in expected["sentences"] if s["support"])
    spans[target["index"]].send_keys(Keys.ENTER)
    wait.until(lambda d: d.find_element(By.ID, "context-view").find_elements(By.TAG_NAME, "mark"))
    assert spans[target["index"]].get_attribute("aria-pressed") == "true"
    assert browser.find_element(By.CSS_SELECTOR, "#context-view mark").text == target["support"]["text"]
    assert len(browser.find_elements(By.CSS_SELECTOR, "#drops .bar-row")) == len(expected["chunks"])
    best = browser.find_element(By.CSS_SELECTOR, "#drops .best").text
    assert best.startswith(f"passage {target['support']['passage'] + 1}")

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "review-page.png"))


def test_review_page_shows_errors(live_server, browser):
    browser.get(live_server.url + "/")
    browser.find_element(By.ID, "evidence").send_keys("Some evidence.")
    browser.find_element(By.ID, "run").click()  # no answer
    error = WebDriverWait(browser, 60).until(ec.visibility_of_element_located((By.ID, "error")))
    assert "answer" in error.text



def test_review_page_marks_the_cut_context(short_context_server, browser):
    browser.get(short_context_server.url + "/")
    wait = WebDriverWait(browser, 300)
    wait.until(ec.text_to_be_present_in_element((By.ID, "ready"), "ready"))
    evidence = "The bridge opened in 1937. " * 3 + "It is painted International Orange. " * 6
    browser.find_element(By.ID, "evidence").send_keys(evidence)
    browser.find_element(By.ID, "answer").send_keys("The bridge opened in 1937.")
    browser.find_element(By.ID, "run").click()
    wait.until(ec.visibility_of_element_located((By.ID, "support")))
    assert "context tokens were cut" in browser.find_element(By.ID, "notes").text
    cut = browser.find_element(By.CSS_SELECTOR, "#context-view .cut")
    assert "Orange" in cut.text and "not scored" in browser.find_element(By.ID, "context-view").text


def test_review_page_places_text_outside_the_bmp_and_never_runs_markup(live_server, browser):
    """Offsets are code points; the page converts them to UTF-16 for JavaScript. Emoji
    before each span would shift every highlight without that."""
    passages = ["🌉🌉 The Golden Gate Bridge opened to traffic on May 27, 1937. 🎉",
                "The bridge's main span 🌁 is 4,200 feet long."]
    answer = ("🌉 It opened in 1937. Its main span 🌁 is 4,200 feet long. "
              '<img src=x onerror="window.pwned=1">It is painted gold 🎨.')
    request = {"passages": passages, "answer": answer}
    expected = httpx.post(f"{live_server.url}/v1/detect", json=request, timeout=300).json()

    browser.get(live_server.url + "/")
    wait = WebDriverWait(browser, 300)
    wait.until(ec.text_to_be_present_in_element((By.ID, "ready"), "ready"))
    # ChromeDriver types only BMP characters, so the form is filled from script.
    browser.find_element(By.CSS_SELECTOR, "input[name=evidence][value=passages]").click()
    browser.execute_script("document.getElementById('evidence').value = arguments[0];"
                           "document.getElementById('answer').value = arguments[1];",
                           "\n---\n".join(passages), answer)
    browser.find_element(By.ID, "run").click()
    wait.until(ec.visibility_of_element_located((By.ID, "support")))

    text_of = "return document.getElementById(arguments[0]).textContent"
    assert browser.execute_script(text_of, "answer-view") == answer
    spans = browser.execute_script("return [...document.querySelectorAll('#answer-view .s')].map(e => e.textContent)")
    assert spans == [s["text"] for s in expected["sentences"]]
    assert browser.find_elements(By.CSS_SELECTOR, "#answer-view img") == []
    assert browser.execute_script("return window.pwned") is None

    target = next(s for s in expected["sentences"] if s["support"])
    browser.find_elements(By.CSS_SELECTOR, "#answer-view .s")[target["index"]].click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#context-view mark"))
    assert browser.execute_script(text_of, "context-view") == "\n\n".join(passages)
    mark = browser.execute_script("return document.querySelector('#context-view mark').textContent")
    assert mark == target["support"]["text"] == passages[target["support"]["passage"]]


def test_review_page_replays_an_answer_as_a_stream(live_server, browser):
    """The replay sends the answer word by word through /v1/detect/stream; each sentence is
    drawn as its verdict arrives, and the end state is the full result."""
    example = httpx.get(f"{live_server.url}/v1/examples/passages-qa").json()
    wait = open_example(browser, live_server, example)
    browser.execute_script("""
        window.seen = [];
        new MutationObserver(() => window.seen.push(document.getElementById('verdict').textContent))
          .observe(document.getElementById('verdict'), {childList: true, characterData: true, subtree: true});""")
    browser.find_element(By.ID, "replay").click()
    wait.until(ec.visibility_of_element_located((By.ID, "support")))
    seen = browser.execute_script("return window.seen")
    judging = [text for text in seen if text.startswith("Judging as the answer streams")]
    assert "Judging as the answer streams… 0 sentence(s) judged so far" in judging
    assert any("1 sentence(s) judged so far" in text for text in judging)  # drawn before the end
    expected = httpx.post(f"{live_server.url}/v1/detect", json=example, timeout=300).json()
    spans = browser.find_elements(By.CSS_SELECTOR, "#answer-view .s")
    assert [s.text for s in spans] == [s["text"] for s in expected["sentences"]]
    for span, sentence in zip(spans, expected["sentences"]):
        assert ("s-flagged" in span.get_attribute("class")) == bool(sentence["flagged"])
    verdict = {True: "Answer flagged", False: "Answer passes", None: "Not judged"}[expected["answer"]["flagged"]]
    assert browser.find_element(By.ID, "verdict").text.startswith(verdict)


def test_review_page_shows_the_unfamiliar_text_warning(live_server, browser):
    """An answer in a script the English scorer reads as byte fragments is judged with a
    warning, and the page shows it (the API's `warnings`)."""
    request = {"context": "The Golden Gate Bridge opened to traffic on May 27, 1937.",
               "answer": "金门大桥于1937年5月27日通车。它的主跨长一千二百八十米。"}
    expected = httpx.post(f"{live_server.url}/v1/detect", json=request, timeout=300).json()
    assert expected["warnings"]
    browser.get(live_server.url + "/")
    wait = WebDriverWait(browser, 300)
    wait.until(ec.text_to_be_present_in_element((By.ID, "ready"), "ready"))
    browser.execute_script("document.getElementById('evidence').value = arguments[0];"
                           "document.getElementById('answer').value = arguments[1];",
                           request["context"], request["answer"])
    browser.find_element(By.ID, "run").click()
    wait.until(ec.visibility_of_element_located((By.ID, "results")))
    notes = browser.find_element(By.ID, "notes").text
    assert f"Warning: {expected['warnings'][0]}." in notes


@pytest.mark.slow  # starts `groundsense serve` (its scorer cannot load: none is needed)
def test_review_page_asks_for_the_key_once_and_sends_it(tmp_path, browser, unloadable_scorer):
    """With keys configured, the page asks for one when the server answers 401, asks again
    when it is refused, then sends the accepted key with every call (no scorer is needed:
    the examples' list and the stream's 503 come from routes behind the key)."""
    key = "a-key-for-the-review-page"
    (tmp_path / "keys.txt").write_text("sha256:" + hashlib.sha256(key.encode()).hexdigest() + "\n")
    with ServeProcess(tmp_path, "--api-key-file", str(tmp_path / "keys.txt"), "--scorer", unloadable_scorer,
                      env={"HF_HUB_OFFLINE": "1"}) as server:
        server.wait_status("failed")
        browser.get(server.url + "/")
        wait = WebDriverWait(browser, 60)
        wait.until(ec.visibility_of_element_located((By.ID, "key-form")))
        assert "Authorization: Bearer" in browser.find_element(By.ID, "key-message").text
        browser.find_element(By.ID, "api-key").send_keys("a wrong key", Keys.ENTER)
        wait.until(ec.text_to_be_present_in_element((By.ID, "key-message"), "not accepted"))
        assert browser.find_element(By.ID, "key-form").is_displayed()
        browser.find_element(By.ID, "api-key").send_keys(key, Keys.ENTER)
        wait.until(lambda d: len(Select(d.find_element(By.ID, "example")).options) > 1)
        assert not browser.find_element(By.ID, "key-form").is_displayed()
        browser.find_element(By.ID, "evidence").send_keys("Some evidence.")
        browser.find_element(By.ID, "answer").send_keys("An answer.")
        browser.find_element(By.ID, "run").click()  # sent with the key: the scorer's 503, not a 401
        error = wait.until(ec.visibility_of_element_located((By.ID, "error")))
        assert "failed to load" in error.text and not browser.find_element(By.ID, "key-form").is_displayed()
        assert browser.execute_script("return sessionStorage.getItem('groundsense-api-key')") == key
