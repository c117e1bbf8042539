"""The page in a real browser: Debian's Chromium, driven by Selenium, against a live server."""

import json
import shutil
import urllib.request
from pathlib import Path

import pytest

from hatt import export, serve
from tests.inspect._backwards import write_backwards_run
from tests.serve.conftest import LiveServer

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
REVIEW = (
    "A superb, moving film. The acting was wonderful!<br /><br />"
    "<script>alert(1)</script> I laughed & cried; see it."
)
WAIT_SECONDS = 60

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()),
        reason="needs Debian's chromium and chromium-driver (apt-get install -y chromium "
        "chromium-driver; .ci/run installs them)",
    ),
]


def chromium(user_data_dir):
    """Headless Chromium through the system chromedriver (nothing downloaded)."""
    webdriver = pytest.importorskip("selenium.webdriver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={user_data_dir}",
    ):
        options.add_argument(flag)
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER)
    return webdriver.Chrome(options=options, service=service)


def explain_via_api(url, name, text):
    request = urllib.request.Request(
        f"{url}/v1/models/{name}:explain",
        data=json.dumps({"instances": [text]}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        body = json.load(response)
    return body["explanations"][0]["tokens"], body["predictions"][0]


def submit_review(driver, url, text, models=("cnn", "han")):
    """Open the page, type ``text``, choose ``models``, submit; wait for the highlighted words."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import Select, WebDriverWait

    wait = WebDriverWait(driver, WAIT_SECONDS)
    driver.get(url + "/")
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#model-1 option")) > 1)
    for column, name in enumerate(models):
        Select(driver.find_element(By.ID, f"model-{column}")).select_by_value(name)
    box = driver.find_element(By.ID, "review")
    box.clear()
    box.send_keys(text)
    before = driver.find_element(By.TAG_NAME, "body").get_attribute("data-explained") or "0"
    driver.find_element(By.ID, "submit").click()
    wait.until(
        lambda d: (
            (d.find_element(By.TAG_NAME, "body").get_attribute("data-explained") or "0") != before
        )
    )
    wait.until(
        expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "#column-1 .words span"))
    )


def column_words(driver, column):
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]), s => s.textContent);",
        f"#column-{column} .words span",
    )


def test_the_page_explains_a_review_in_chromium(served, tmp_path):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    app = serve.create_app(served)
    with LiveServer(app) as live, _driver(tmp_path) as driver:
        driver.set_window_size(1280, 800)
        submit_review(driver, live.url, REVIEW)
        for column, name in enumerate(("cnn", "han")):
            tokens, prediction = explain_via_api(live.url, name, REVIEW)
            assert column_words(driver, column) == tokens  # every token, in order
            card = driver.find_element(By.CSS_SELECTOR, f"#column-{column} .review")
            heading = card.find_element(By.TAG_NAME, "h2").text
            assert f"predicted {prediction['label']}" in heading and name in heading
            # the raw review, script tag and all, shown as text
            raw = card.find_element(By.CSS_SELECTOR, "details div")
            assert raw.get_attribute("textContent") == REVIEW
        assert "alert" in column_words(driver, 0)  # the script's words are tokens like others
        # the model menu names the task, so two models of other classes never look alike
        labels = [o.text for o in driver.find_elements(By.CSS_SELECTOR, "#model-0 option")]
        assert "cnn: 2 classes (negative, positive), cnn, v1" in labels, labels
        injected = driver.execute_script(
            "return document.querySelectorAll('#results script, #results img').length"
        )
        assert injected == 0
        with pytest.raises(NoAlertPresentException):
            driver.switch_to.alert.text  # noqa: B018  (reading it raises when there is none)
        # side by side at 1280x800, no horizontal scrolling
        left, right = (
            driver.find_element(By.ID, f"column-{c}").rect for c in (0, 1)
        )  # fmt: skip
        assert right["x"] >= left["x"] + left["width"] and right["y"] == left["y"]
        assert driver.execute_script("return document.documentElement.scrollWidth") <= 1280
        shot = tmp_path / "serve-1280.png"
        assert driver.save_screenshot(str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        # a phone's width: the columns stack, nothing overflows sideways
        driver.set_window_size(390, 844)
        width = driver.execute_script("return window.innerWidth")
        assert driver.execute_script("return document.documentElement.scrollWidth") <= width
        left, right = (driver.find_element(By.ID, f"column-{c}").rect for c in (0, 1))
        assert right["y"] >= left["y"] + left["height"]
        driver.save_screenshot(str(tmp_path / "serve-phone.png"))


def test_the_page_opens_on_the_total_view_and_shows_a_models_warnings(
    served, tiny, tiny_corpus, tmp_path
):
    """Issue 30: a model whose mix weighs its deep part negatively, beside the HAN."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    run = write_backwards_run(tiny["cnn"].run_dir, tiny_corpus, tmp_path / "run")
    backwards = serve.served_model("backwards", export.load(run))
    app = serve.create_app({"backwards": backwards, "han": served["han"]})
    with LiveServer(app) as live, _driver(tmp_path) as driver:
        driver.set_window_size(1280, 900)
        submit_review(
            driver, live.url, "A superb cast. The w1 w2 was superb!", ("backwards", "han")
        )
        for column in (0, 1):  # each model's method choice opened on the total
            chosen = Select(driver.find_element(By.ID, f"method-{column}"))
            assert chosen.first_selected_option.get_attribute("value") == "total"
            card = driver.find_element(By.CSS_SELECTOR, f"#column-{column} .review")
            assert card.find_elements(By.CSS_SELECTOR, ".view.m-total")
        box = driver.find_element(By.CSS_SELECTOR, "#column-0 .warning")
        assert box.is_displayed() and "negative weight" in box.text
        assert not driver.find_elements(By.CSS_SELECTOR, "#column-1 .warning")
        # "superb" argues for the predicted 'positive': blue (TOWARDS_RGB), not red
        colours = driver.execute_script(
            "return Array.from(document.querySelectorAll('#column-0 .words span'))"
            ".filter(s => s.textContent === 'superb')"
            ".map(s => getComputedStyle(s).backgroundColor);"
        )
        assert len(colours) == 2 and all(c.startswith("rgba(33, 102, 172") for c in colours)
        assert driver.save_screenshot(str(tmp_path / "serve-total.png"))


class _driver:
    def __init__(self, tmp_path):
        self.profile = tmp_path / "chromium-profile"

    def __enter__(self):
        self.driver = chromium(self.profile)
        return self.driver

    def __exit__(self, *exc):
        self.driver.quit()
