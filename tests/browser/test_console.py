"""The session console in real headless Chromium at a phone's viewport (390 x 844, touch).

A blinded 2-policy x 3-scene x 2-attempt session on sim-arm is scored entirely by taps:
every trial staged, played and scored on the page; one score undone and scored again; the
page reloaded in the middle of a trial's scoring; a second page opened that follows the first
and scores a trial itself. The store must then hold the 12 trials with the scores tapped, one
play each, and nothing the browser received (pages, scripts, API answers, WebSocket messages)
may name a policy. Screenshots are written to the test's temporary folder.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from consolekit import SECRETS, Running, plan, serving
from evalband.session import SessionStore
from evalband.session._attempts import AttemptLog

from .conftest import CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MOVE_S = 60_000  # ms: a trial on the virtual clock takes about a second


@pytest.fixture(scope="module")
def phone(playwright_driver: Any) -> Iterator[Any]:
    """A phone: 390 x 844 CSS pixels, touch, device scale 3."""
    browser = playwright_driver.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                args=CHROMIUM_ARGS)
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                  has_touch=True, device_scale_factor=1)
    try:
        yield context
    finally:
        context.close()
        browser.close()


class Seen:
    """Everything a page received, and its errors."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.bodies: list[bytes] = []
        self.frames: list[bytes] = []
        self.errors: list[str] = []
        self.foreign: list[str] = []

    def watch(self, page: Any) -> Any:
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("response", self._response)
        page.on("websocket", lambda ws: ws.on("framereceived", self._frame))

        def route(r: Any) -> None:
            if r.request.url.startswith(self.origin):
                r.continue_()
            else:
                self.foreign.append(r.request.url)
                r.abort()

        page.route("**/*", route)
        return page

    def _response(self, response: Any) -> None:
        try:
            self.bodies.append(response.body())
        except Exception as exc:  # noqa: BLE001 - a body the browser dropped: say which
            self.bodies.append(f"<no body: {response.url}: {exc}>".encode())

    def _frame(self, payload: Any) -> None:
        self.frames.append(payload if isinstance(payload, bytes) else payload.encode())


def check_phone_layout(page: Any) -> None:
    """No sideways scrolling at 390 px; every visible control at least 44 x 44 px."""
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    buttons = page.locator("button:visible")
    for i in range(buttons.count()):
        box = buttons.nth(i).bounding_box()
        assert box is not None and box["width"] >= 44 and box["height"] >= 44, (
            buttons.nth(i).text_content(), box)


def shown(page: Any, selector: str, text: str | re.Pattern[str], timeout: int = MOVE_S) -> Any:
    """Wait until an element matching ``selector`` shows ``text`` (no polling back-off)."""
    found = page.locator(selector, has_text=text)
    found.first.wait_for(timeout=timeout)
    return found.first


def score_trial(page: Any, expect: Any, index: int, score: int, *, at_ready: Any = None,
                before_confirm: Any = None) -> None:
    """Stage, run, score and confirm trial ``index`` (0-based) by taps."""
    shown(page, "#trial-title", f"trial {index + 1} of 12")
    shown(page, "#primary button:enabled", re.compile(r"^Stage trial")).tap()
    ready = shown(page, "#primary button:enabled", "Start the policy")
    if at_ready is not None:
        at_ready()
    ready.tap()
    chosen = page.locator(f'#scores button[data-score="{score}"]:enabled')
    chosen.wait_for(timeout=MOVE_S)
    chosen.tap()
    page.locator(f'#scores button[data-score="{score}"][aria-pressed="true"]').wait_for()
    confirm = shown(page, "#primary button:enabled", f"Confirm score {score}")
    if before_confirm is not None:
        before_confirm()
        confirm = shown(page, "#primary button:enabled", f"Confirm score {score}")
    confirm.tap()
    shown(page, "#trial-title", f"trial {index + 2} of 12" if index < 11 else "complete")


def test_a_blinded_sim_arm_session_scored_entirely_from_a_phone(
        phone: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    store = tmp_path / "s.sqlite"
    plan(store, "phone", stress=None)  # the stress phase: tests/web (the page waits it out)
    shots = tmp_path
    scores = [(2 * i + 1) % 3 for i in range(12)]  # what the operator taps
    with serving(store, "phone", fps=8.0) as r:
        seen = Seen(r.origin)
        page = seen.watch(phone.new_page())
        page.goto(r.url, wait_until="load")
        assert "token=" not in page.url  # kept out of the address bar (a cookie carries it)
        expect(page.locator("#link")).to_have_text("live", timeout=30_000)
        check_phone_layout(page)
        page.screenshot(path=str(shots / "console-idle.png"), full_page=True)

        for i in range(4):  # trial 2 is re-placed under the ghost overlay of scene 1
            score_trial(page, expect, i, scores[i],
                        at_ready=(lambda: _overlay(page, expect, r, shots)) if i == 1 else None)
        # an undo in the middle: trial 5 is shown again with its score, the rest unchanged
        score_trial(page, expect, 4, scores[4])
        before = _scores(r)
        page.locator("#undo").tap()
        expect(page.locator("#trial-title")).to_contain_text("trial 5 of 12")
        expect(page.locator(f'#scores button[data-score="{scores[4]}"]')).to_have_attribute(
            "aria-pressed", "true")
        assert _scores(r) == {k: v for k, v in before.items() if k != _trial_at(r, 4)}
        scores[4] = (scores[4] + 1) % 3  # scored again, differently
        page.locator(f'#scores button[data-score="{scores[4]}"]').tap()
        page.locator("#primary button", has_text=f"Confirm score {scores[4]}").tap()
        expect(page.locator("#trial-title")).to_contain_text("trial 6 of 12", timeout=MOVE_S)

        # a reload in the middle of scoring: the same trial, the score chosen, nothing lost
        def reload() -> None:
            page.reload(wait_until="load")
            expect(page.locator("#trial-title")).to_contain_text("trial 6 of 12")
            expect(page.locator(f'#scores button[data-score="{scores[5]}"]')).to_have_attribute(
                "aria-pressed", "true", timeout=30_000)
            check_phone_layout(page)
            page.screenshot(path=str(shots / "console-scoring.png"), full_page=True)

        score_trial(page, expect, 5, scores[5], before_confirm=reload)

        # a second page: it follows the first, and scores a trial itself
        second = seen.watch(phone.new_page())
        second.goto(r.url, wait_until="load")
        expect(second.locator("#trial-title")).to_contain_text("trial 7 of 12", timeout=30_000)
        score_trial(page, expect, 6, scores[6])
        expect(second.locator("#trial-title")).to_contain_text("trial 8 of 12", timeout=30_000)
        score_trial(second, expect, 7, scores[7])
        expect(page.locator("#trial-title")).to_contain_text("trial 9 of 12", timeout=30_000)
        second.close()
        for i in range(8, 12):
            score_trial(page, expect, i, scores[i])
        check_phone_layout(page)
        page.screenshot(path=str(shots / "console-finished.png"), full_page=True)
        html = page.content()
        page.close()

        stored = {rec.trial_index: rec for rec in r.store.records("phone")}
        plays = AttemptLog(r.store).attempts("phone")
    assert seen.errors == [] and seen.foreign == []
    # 12 trials stored with the scores tapped, in the session's order, each played once
    with SessionStore(store, read_only=True) as ss:
        order = [t.index for t in ss.plan("phone").trials]
        assert ss.counts("phone") == {"pending": 0, "scored": 12, "skipped": 0, "total": 12}
    assert [stored[t].score for t in order] == scores
    assert all(rec.status == "scored" and rec.play["operator"] == "human"
               for rec in stored.values())
    assert sorted(p.trial_index for p in plays) == sorted(order)  # no trial replayed
    # nothing the browser received names a policy
    everything = b"\n".join([*seen.bodies, *seen.frames, html.encode()])
    assert len(seen.frames) > 50 and len(seen.bodies) > 20
    assert any(b'"type": "state"' in f for f in seen.frames)
    for secret in SECRETS:
        assert secret.encode() not in everything, secret


def _scores(r: Running) -> dict[int, int | None]:
    return {rec.trial_index: rec.score for rec in r.store.records("phone")}


def _trial_at(r: Running, position: int) -> int:
    return r.store.plan("phone").trials[position].index


def _overlay(page: Any, expect: Any, r: Running, shots: Path) -> None:
    """A re-placed trial, ready: the live, reference, blend and difference views, a region."""
    snap = r.state()
    assert snap["state"]["start"] == "replaced" and snap["reference"]
    page.screenshot(path=str(shots / "console-ready.png"), full_page=True)
    check_phone_layout(page)
    for view in ("blend", "difference", "reference", "live"):
        page.locator(f'.views button[data-view="{view}"]').tap()
        expect(page.locator(f'.views button[data-view="{view}"]')).to_have_attribute(
            "aria-pressed", "true")
        if view in ("blend", "difference"):
            page.screenshot(path=str(shots / f"console-{view}.png"), full_page=True)
    expect(page.locator("#alignment")).to_have_text(re.compile(r"alignment: \d+\.\d"))
    # draw the alignment region with the pointer: stored with the scene's capture
    page.locator("#draw").tap()
    box = page.locator("#canvas").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.4)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.7, box["y"] + box["height"] * 0.9, steps=5)
    page.mouse.up()
    expect(page.locator("#alignment")).to_contain_text("in the region", timeout=30_000)
    scene = snap["state"]["scene"]
    capture = AttemptLog(r.store).capture("phone", scene)
    assert capture is not None and capture["region"] == pytest.approx([0.3, 0.4, 0.7, 0.9],
                                                                      abs=0.02)
    assert json.loads(json.dumps(r.state()["region"])) == capture["region"]
