"""The explain page driven by real clicks: Chromium under ChromeDriver (Selenium)
presses Next and Prev as a reader does and reads what the page then shows."""

import shutil

import pytest

import chainrule.numpy as np
from chainrule.explain import explain

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
CHROMEDRIVER = shutil.which("chromedriver")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(not (CHROMEDRIVER and CHROMIUM),
                                reason="Chromium and ChromeDriver are not installed")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium.webdriver.chrome.service import Service

    report = explain(lambda x1, x2: np.log(x1) + x1 * x2 - np.sin(x2), 2.0, 5.0)
    path = tmp_path_factory.mktemp("explain") / "seed.html"
    path.write_text(report.html(), encoding="utf-8")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--window-size=1000,700"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.get(f"file://{path}")
        yield driver
    finally:
        driver.quit()


def node_classes(driver, node_id: str) -> set:
    return set(driver.find_element("id", node_id).get_attribute("class").split())


def test_clicking_steps_through_the_backward_pass(browser):
    from selenium.webdriver.common.by import By

    browser.find_element(By.ID, "reset").click()
    assert browser.find_element(By.ID, "step").text == "0 / 7"
    for _ in range(4):
        browser.find_element(By.ID, "next").click()
    assert browser.find_element(By.ID, "step").text == "4 / 7"
    assert "current" in node_classes(browser, "n3")  # v2 = x1 * x2
    assert "receiving" in node_classes(browser, "n0") and "receiving" in node_classes(browser, "n1")
    status = browser.find_element(By.ID, "status").text
    assert "Step 4: node v2 receives its adjoint v\u03042 = 1" in status
    assert "x\u03042 = -0.284 + 2 = 1.716" in status
    assert len(browser.find_elements(By.CSS_SELECTOR, "g.edge.active")) == 2

    browser.find_element(By.ID, "prev").click()
    assert browser.find_element(By.ID, "step").text == "3 / 7"
    assert "current" not in node_classes(browser, "n3")

    for _ in range(4):
        browser.find_element(By.ID, "next").click()
    assert browser.find_element(By.ID, "step").text == "7 / 7"
    assert not browser.find_element(By.ID, "next").is_enabled()
    status = browser.find_element(By.ID, "status").text
    assert "x\u03041 = 5.5" in status or "5.5" in browser.page_source
