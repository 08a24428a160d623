"""The web page at /ui in a real headless Chromium (Debian's chromium and chromium-driver, via Selenium).

The app is the ingress's own (:mod:`tests.served_app`: REST, the page's static
files and read routes, over the scripted doubles), with a ten-fact graph and two
teams' banks. Each view is checked for its data: entities and a neighbourhood,
an HGMem trace stepped through with its marked points, a team's memories as of a
slider's time with validity, a history and the search scores; the login alone
without a token; and a team token kept from another team's memories.
Screenshots go under each test's tmp_path.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from serving import schemas
from tests.served_app import group, served_app

CHROMIUM, DRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
READ_TOKEN, LAB_TOKEN, OPS_TOKEN = "tok-read-0001", "tok-lab-0001", "tok-ops-0001"
SECRET = "The ops pager code is 7431."


def _driver_or_skip() -> None:
    if CHROMIUM.exists() and DRIVER.exists():
        return
    if shutil.which("apt-get") is None:
        pytest.skip("needs Debian's chromium and chromium-driver at /usr/bin; this machine has no apt-get to "
                    "install them with (make test installs them where it can)")
    pytest.fail("chromium or chromium-driver is missing: run `make test` (it installs them) or "
                "`apt-get install -y chromium chromium-driver`")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The served app with graph ``facts`` and banks for teams lab (three groups) and ops (one secret)."""
    with served_app(tmp_path_factory.mktemp("ui")) as (url, service):
        for g in (group("lab", "g1", 6, "Deploys happen on Mondays."),
                  group("lab", "g2", 7, "From now on deploys happen on Tuesdays, not Mondays.",
                        "I deployed on Monday as usual."),
                  group("lab", "g3", 8, "The staging cluster is called Kestrel."),
                  group("ops", "o1", 6, SECRET)):
            service.add_group(g["team"], schemas.GroupRequest(**g))
        yield f"{url}/ui/"


@pytest.fixture(scope="module")
def browser():
    _driver_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,1100", "--disable-extensions", "--no-first-run"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=DriverService(str(DRIVER)))
    driver.implicitly_wait(0)
    yield driver
    driver.quit()


def wait(browser, condition, seconds: float = 15):
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # the page redraws a view by replacing its elements: one found a moment ago may be gone
    return WebDriverWait(browser, seconds, poll_frequency=0.1, ignored_exceptions=(
        NoSuchElementException, StaleElementReferenceException)).until(lambda d: condition(d))


def by_id(browser, element_id: str):
    from selenium.webdriver.common.by import By

    return browser.find_element(By.ID, element_id)


def css(browser, selector: str) -> list:
    from selenium.webdriver.common.by import By

    return browser.find_elements(By.CSS_SELECTOR, selector)


def fresh(browser, site: str) -> None:
    """The page with nothing kept in this browser session."""
    browser.get(site)
    browser.execute_script("sessionStorage.clear()")
    browser.get(site)
    wait(browser, lambda d: by_id(d, "login").is_displayed())


def login(browser, site: str, token: str) -> None:
    fresh(browser, site)
    by_id(browser, "token").send_keys(token)
    by_id(browser, "login-btn").click()
    wait(browser, lambda d: by_id(d, "app").is_displayed())


def click_tab(browser, view: str) -> None:
    css(browser, f'#tabs button[data-view="{view}"]')[0].click()
    wait(browser, lambda d: by_id(d, f"view-{view}").is_displayed())


def shot(browser, path: Path) -> Path:
    browser.save_screenshot(str(path))
    assert path.stat().st_size > 1000
    return path


def test_without_a_token_only_the_login_shows(browser, site, tmp_path):
    fresh(browser, site)
    assert not by_id(browser, "app").is_displayed() and not by_id(browser, "tabs").is_displayed()
    visible = [e.get_attribute("id") for e in css(browser, "input, button, select") if e.is_displayed()]
    assert visible == ["token", "login-btn"]
    by_id(browser, "token").send_keys("tok-nobody-01")
    by_id(browser, "login-btn").click()
    wait(browser, lambda d: "401" in by_id(d, "login-error").text)
    assert "unknown token" in by_id(browser, "login-error").text
    assert not by_id(browser, "app").is_displayed()
    assert browser.execute_script("return sessionStorage.getItem('memgraft-token')") is None
    shot(browser, tmp_path / "login.png")


def test_graphs_view_shows_entities_neighbourhood_relations_and_chunks(browser, site, tmp_path):
    login(browser, site, READ_TOKEN)
    assert by_id(browser, "who").text == "reader"
    assert not css(browser, '#tabs button[data-view="teams"]')[0].is_displayed()  # a reader has no team
    wait(browser, lambda d: css(d, ".graph-item.active"))
    assert [e.get_attribute("data-graph") for e in css(browser, ".graph-item")] == ["facts"]
    assert "12 entities" in css(browser, ".graph-item")[0].text
    by_id(browser, "entity-q").send_keys("Ada Lovelace")
    by_id(browser, "entity-search").click()
    wait(browser, lambda d: css(d, ".entity-hit"))
    hits = css(browser, ".entity-hit")
    assert hits[0].text.startswith("Ada Lovelace")
    hits[0].click()
    wait(browser, lambda d: by_id(d, "entity-name").text == "Ada Lovelace")
    labels = {e.text for e in css(browser, "#neighbourhood .node text")}
    assert labels == {"Ada Lovelace", "Charles Babbage", "Lord Byron"}
    relations = [r.text for r in css(browser, "#relations tbody tr")]
    assert len(relations) == 2 and any("daughter of Lord Byron" in r for r in relations)
    chunks = {c.get_attribute("data-id"): c.text for c in css(browser, "#entity-chunks .chunk")}
    assert list(chunks) == ["c0", "c3"] and chunks["c3"].endswith("Ada Lovelace was the daughter of Lord Byron.")
    shot(browser, tmp_path / "graphs.png")
    # a neighbour in the drawing opens its own neighbourhood
    next(n for n in css(browser, "#neighbourhood .node")
         if n.find_element("css selector", "text").text == "Lord Byron").find_element("css selector", "circle").click()
    wait(browser, lambda d: by_id(d, "entity-name").text == "Lord Byron")
    assert {e.text for e in css(browser, "#neighbourhood .node text")} == {"Lord Byron", "Ada Lovelace", "Greece"}
    # the token is kept for the session: a reload stays logged in
    browser.refresh()
    wait(browser, lambda d: by_id(d, "app").is_displayed())
    assert not by_id(browser, "login").is_displayed()


def test_hgmem_view_steps_through_the_trace(browser, site, tmp_path):
    login(browser, site, READ_TOKEN)
    click_tab(browser, "hgmem")
    wait(browser, lambda d: css(d, "#hg-graph option"))
    by_id(browser, "hg-question").send_keys("Who did Ada Lovelace work with?")
    by_id(browser, "hg-ask").click()
    wait(browser, lambda d: css(d, "#hg-final") and by_id(d, "hg-final").text == "scripted answer", 30)
    assert by_id(browser, "hg-status").text.startswith("trace ") and "3 steps, 8 LLM calls" in by_id(browser, "hg-status").text
    used = [c.get_attribute("data-id") for c in css(browser, "#hg-used .chunk")]
    assert used and set(used) <= {f"c{i}" for i in range(10)}
    overview = css(browser, "#hg-steps tbody tr")
    assert [r.find_element("css selector", "td").text for r in overview] == ["0", "1", "2"]
    assert "1 / 1 / 1" in overview[1].text  # step 1: inserted p2, updated p1, merged them into p3
    for row in overview:
        cells = [c.text for c in row.find_elements("css selector", "td")]
        assert int(cells[4]) > 0 and float(cells[6]) >= 0  # prompt tokens and seconds per step

    def marked(cls: str) -> list[str]:
        return [g.get_attribute("data-id") for g in css(browser, f"#hg-memory .point.{cls}")]

    # step 0: the first point is inserted
    assert by_id(browser, "hg-step").find_element("css selector", "h3").text.startswith("Step 0: ")
    assert marked("inserted") == ["p1"] and not marked("updated")
    subqueries = [r.text for r in css(browser, "#hg-subqueries tbody tr")]
    assert subqueries[0].startswith("Who did Ada Lovelace work with? initial")
    # step 1: p1 updated, p2 inserted, both merged into p3 (the only active point drawn, marked merged)
    css(browser, '#hg-stepper button[data-step="1"]')[0].click()
    wait(browser, lambda d: by_id(d, "hg-step").find_element("css selector", "h3").text.startswith("Step 1: "))
    assert marked("merged") == ["p3"]
    rows = {r.get_attribute("data-id"): r for r in css(browser, "#hg-points tbody tr")}
    assert rows["p1"].text.startswith("p1 updated, then merged into p3") and rows["p1"].get_attribute("class") == "gone"
    assert rows["p2"].text.startswith("p2 inserted, then merged into p3")
    assert rows["p3"].text.startswith("p3 merged Both facts together.") and rows["p3"].get_attribute("class") == "merged"
    assert "local concern about p1: more about the first fact" in by_id(browser, "hg-step").text
    browser.execute_script("document.getElementById('hg-overview').scrollIntoView()")
    shot(browser, tmp_path / "hgmem.png")
    # step 2, by the next button: one more point inserted after a global concern
    by_id(browser, "hg-next").click()
    wait(browser, lambda d: by_id(d, "hg-step").find_element("css selector", "h3").text.startswith("Step 2: "))
    assert marked("inserted") == ["p4"] and marked("merged") == []
    assert css(browser, "#hg-subqueries tbody tr")[0].text.startswith("what else is relevant global")


def test_teams_view_memories_over_time_history_and_scores(browser, site, tmp_path):
    login(browser, site, LAB_TOKEN)
    assert by_id(browser, "who").text == "team lab"
    assert by_id(browser, "view-teams").is_displayed()
    assert not css(browser, '#tabs button[data-view="graphs"]')[0].is_displayed()  # a team token reads no graph
    assert by_id(browser, "team-name").get_attribute("value") == "lab"
    by_id(browser, "team-load").click()
    wait(browser, lambda d: len(css(d, "#team-memories tr.memory")) == 4)

    def memories() -> dict[str, list[str]]:
        return {r.get_attribute("data-id"): [c.text for c in r.find_elements("css selector", "td")]
                for r in css(browser, "#team-memories tr.memory")}

    now = memories()
    assert now["g1-m0"][1:3] == ["team", "Deploys happen on Mondays."]
    assert now["g1-m0"][3].startswith("[Outdated since 2025-01-07") and now["g1-m0"][4] == "invalid"
    assert now["g2-m0"][4] == "valid" and now["g3-m0"][2] == "The staging cluster is called Kestrel."
    assert now["g2-m1"][1] == "individual"
    assert by_id(browser, "team-asof").text.startswith("now (3 group times)")

    def slide(to: int, rows: int) -> None:
        browser.execute_script("const s = document.getElementById('team-slider'); s.value = arguments[0];"
                               "s.dispatchEvent(new Event('input'));", to)
        wait(browser, lambda d: len(css(d, "#team-memories tr.memory")) == rows)

    assert by_id(browser, "team-slider").get_attribute("max") == "3"
    slide(0, 1)  # as of the first group: Mondays, still valid
    assert memories()["g1-m0"][3:5] == ["Deploys happen on Mondays.", "valid"]
    assert by_id(browser, "team-asof").text.startswith("2025-01-06T09:00:00")
    slide(1, 3)
    assert memories()["g1-m0"][4] == "invalid" and "g3-m0" not in memories()
    slide(3, 4)
    # the history of the overruled memory
    css(browser, '#team-memories tr.memory[data-id="g1-m0"] button.history')[0].click()
    wait(browser, lambda d: css(d, "#team-history .decision"))
    decisions = [d.text for d in css(browser, "#team-history .decision")]
    assert len(decisions) == 1
    assert "group g2 · inter · contradiction → revise" in decisions[0]
    assert "valid: true → false · by rules · superseded by g2-m0" in decisions[0]
    # search: every score that ranked a hit
    by_id(browser, "team-q").send_keys("when do deploys happen")
    by_id(browser, "team-search").click()
    wait(browser, lambda d: css(d, "#team-hits tr.hit"))
    headers = [h.text for h in css(browser, "#team-hits th")]
    assert headers[-4:] == ["dense", "semantic", "S_val", "final"]
    hits = css(browser, "#team-hits tr.hit")
    assert {h.get_attribute("data-id") for h in hits} >= {"g1-m0", "g2-m0"}
    for hit in hits:
        for kind in ("dense", "semantic", "validity", "score"):
            float(hit.find_element("css selector", f"td.{kind}").text)  # each shown as a number
    assert "S_val: validity from the maintained state" in by_id(browser, "team-sources").text
    browser.execute_script("document.getElementById('team-memories').scrollIntoView()")
    shot(browser, tmp_path / "teams.png")


def test_a_team_token_never_shows_another_teams_memories(browser, site, tmp_path):
    login(browser, site, LAB_TOKEN)
    by_id(browser, "team-name").clear()
    by_id(browser, "team-name").send_keys("ops")
    by_id(browser, "team-load").click()
    wait(browser, lambda d: by_id(d, "teams-error").text)
    assert by_id(browser, "teams-error").text == "403 Forbidden: this token does not reach team 'ops'"
    assert not by_id(browser, "team-body").is_displayed() and not css(browser, "tr.memory")
    assert SECRET not in browser.page_source
    shot(browser, tmp_path / "refused.png")
    login(browser, site, OPS_TOKEN)  # ops's own token does see it: the refusal above is the token's, not the data's
    by_id(browser, "team-load").click()
    wait(browser, lambda d: css(d, "#team-memories tr.memory"))
    assert [r.text for r in css(browser, "#team-memories tr.memory td:nth-child(3)")] == [SECRET]
