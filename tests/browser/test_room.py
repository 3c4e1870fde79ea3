"""The room in Chromium: three learners (each their own browser) and the teacher's room view. The tally follows
votes, a changed vote and the room switch, and keeps the votes of a closed tab; "Show the class" hides the answer
until revealed; the link the teacher sends shows on a learner's page as a banner that takes them there.
(tests/browser/test_vote.py tests the vote before the answer: the held reveal and the second vote.)"""

import re

from playwright.sync_api import expect

CARD = ".fl-card-bandit-baseline-effect"
TALLY = ".fl-tally-bandit-baseline-effect"


def answer(page, label: str) -> None:
    card = page.locator(CARD)
    card.get_by_role("radio", name=label).check()
    card.get_by_role("button", name="Reveal").click()
    expect(card).to_contain_text(f"You chose: {label}")


def count(room, label: str, n: int) -> None:
    """The teacher's tally shows `n` votes for the choice `label` of the bandit's first card (within its update)."""
    expect(room.locator(TALLY).get_by_label(f"{label}: {n}", exact=True)).to_be_attached(timeout=10_000)


def test_three_learners_and_the_teachers_room(learner_tabs, server_url, teacher_token, wait_for_guide, console_errors, page, save_screenshot):
    room = page
    room.goto(f"{server_url}/room?token={teacher_token}")
    expect(room.locator(TALLY)).to_contain_text("baseline")
    a, b, c = learner_tabs(3, "bandit", CARD)
    expect(room.locator(".fl-learners")).to_contain_text("3 learners are here now", timeout=10_000)
    answer(a, "the spread only")
    answer(b, "the spread only")
    answer(c, "the average only")
    count(room, "the spread only", 2)
    count(room, "the average only", 1)
    save_screenshot(room, "room")  # the picture of docs/room.md: three learners, the first card's tally

    c.locator(CARD).get_by_role("button", name="Ask me again").click()  # C changes their mind
    answer(c, "both")
    count(room, "the average only", 0)
    count(room, "both", 1)
    c.get_by_role("switch", name="Counted in the room").click()  # C leaves the room's counts
    count(room, "both", 0)
    a.context.close()  # A's tab closes: A leaves the page, A's vote stays for the lesson
    expect(room.locator(".fl-learners")).to_contain_text("2 learners are here now", timeout=10_000)
    count(room, "the spread only", 2)

    room.locator(TALLY).get_by_role("button", name="Show the class").click()
    projector = room.locator(".fl-projector")
    expect(projector).to_contain_text("2 learners have voted.")
    expect(projector.locator(".fl-right")).to_have_count(0)  # the answer stays hidden until revealed
    projector.get_by_role("button", name="Reveal the answer").click()
    expect(projector.locator(".fl-right")).to_contain_text("✓ the spread only")
    projector.get_by_role("button", name="Back to every card").click()
    expect(room.locator(".fl-projector")).to_have_count(0)

    room.get_by_label("Link to send the class").fill(f"{server_url}/kl?beta=0.5")
    room.get_by_role("button", name="Send the class there").click()
    expect(room.locator(".fl-pace-status")).to_contain_text("What β means")
    banner = b.locator(".fl-pace")
    expect(banner).to_contain_text("Your teacher asks the class to open What β means", timeout=10_000)
    banner.get_by_role("link", name="Go there").click()
    expect(b).to_have_url(re.compile(r"/kl\?beta=0\.5$"))
    wait_for_guide(b)
    expect(b.locator(".fl-pace")).to_be_hidden()  # on the page it names, no banner
    room.get_by_role("button", name="Take the banner away").click()
    expect(c.locator(".fl-pace")).to_be_hidden(timeout=10_000)
    assert console_errors == []
