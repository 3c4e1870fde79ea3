"""A vote before the answer, in Chromium: two learners (each their own browser) vote on a card without seeing its
answer while the teacher's room view shows the split; the teacher holds the reveal, asks for a second vote, then
reveals the answer to the room, and both learners' cards show it with the panel it guards; the card's two splits stay
listed after the learners have moved on to another page."""

from playwright.sync_api import expect

CARD = ".fl-card-kl-beta-to-zero"
TALLY = ".fl-tally-kl-beta-to-zero"
STAYS = "it stays close to the reference"
SPREADS = "it spreads its probability evenly over the high-reward replies"
COLLAPSES = "it puts all its probability on the single highest-reward reply"
HIDDEN = "Answer the question above to see the distributions."


def vote(page, label: str) -> None:
    page.locator(CARD).get_by_role("radio", name=label).check()


def count(room, label: str, n: int, second: bool = False) -> None:
    """The teacher's tally shows `n` votes for `label` of the card, in the first vote or the second (within its update)."""
    name = f"{label}, {'second' if second else 'first'} vote: {n}"
    expect(room.locator(TALLY).get_by_label(name, exact=True)).to_be_attached(timeout=10_000)


def no_answer(page) -> None:
    card = page.locator(CARD)
    expect(card.locator(".fl-verdict-right, .fl-verdict-wrong")).to_have_count(0)
    expect(card).not_to_contain_text("The answer:")
    expect(page.get_by_text(HIDDEN)).to_be_visible()


def test_two_learners_vote_the_room_sees_the_split_and_the_teacher_reveals_it(
    learner_tabs, server_url, teacher_token, wait_for_guide, console_errors, page
):
    room = page
    room.goto(f"{server_url}/room?token={teacher_token}")
    tally = room.locator(TALLY)
    expect(tally).to_contain_text("As β → 0")
    a, b = learner_tabs(2, "kl", CARD)
    expect(room.locator(".fl-learners")).to_contain_text("2 learners are here now", timeout=10_000)

    vote(a, STAYS)  # a choice picked is a vote: counted at once, no answer shown
    vote(b, COLLAPSES)
    count(room, STAYS, 1)
    count(room, COLLAPSES, 1)
    expect(room.locator(".fl-tally-asked " + TALLY)).to_contain_text("2 learners have voted.")
    for learner in (a, b):
        no_answer(learner)
    vote(a, SPREADS)  # changeable until the answer shows
    count(room, SPREADS, 1)
    count(room, STAYS, 0)

    tally.get_by_role("button", name="Hold the reveal").click()  # the teacher holds the reveal
    expect(tally).to_contain_text("You hold the reveal")
    for learner in (a, b):
        card = learner.locator(CARD)
        expect(card).to_contain_text("Your vote is in; the teacher will reveal the answer.", timeout=10_000)
        expect(card.get_by_role("button", name="Reveal")).to_have_count(0)
        no_answer(learner)

    tally.get_by_role("button", name="Vote again").click()  # a second vote after the discussion
    for learner in (a, b):
        expect(learner.locator(CARD)).to_contain_text("Vote again", timeout=10_000)
        expect(learner.locator(CARD).get_by_role("radio", name=COLLAPSES)).not_to_be_checked()
    vote(a, COLLAPSES)
    vote(b, COLLAPSES)
    count(room, COLLAPSES, 2, second=True)
    count(room, SPREADS, 1)  # the first vote's split stays beside it
    expect(tally).to_contain_text("2 learners have voted in the first vote, 2 in the second.")
    for learner in (a, b):
        no_answer(learner)

    tally.get_by_role("button", name="Show the class").click()
    projector = room.locator(".fl-projector")
    expect(projector).to_contain_text("2 learners have voted in the first vote, 2 in the second.")
    expect(projector.locator(".fl-right")).to_have_count(0)  # the answer has not left the server
    projector.get_by_role("button", name="Reveal the answer").click()  # to the room
    expect(projector.locator(".fl-right")).to_contain_text(f"✓ {COLLAPSES}")
    for learner in (a, b):
        card = learner.locator(CARD)
        expect(card.locator(".fl-verdict-right")).to_contain_text("Right.", timeout=10_000)
        expect(card).to_contain_text(f"You chose: {COLLAPSES}")
        expect(learner.get_by_text(HIDDEN)).to_be_hidden()
        expect(learner.locator(".fl-guarded .bk-Canvas").first).to_be_attached(timeout=20_000)
    projector.get_by_role("button", name="Back to every card").click()

    for learner in (a, b):  # the class moves on
        learner.goto(f"{server_url}/bandit")
        wait_for_guide(learner)
    expect(room.locator(".fl-learners")).to_contain_text("2 learners are here now: Bandit", timeout=10_000)
    a.context.close()  # and a tab closes: its votes stay
    expect(room.locator(".fl-learners")).to_contain_text("1 learner is here now", timeout=10_000)
    kept = room.locator(".fl-tally-asked " + TALLY)
    expect(kept).to_contain_text("2 learners have voted in the first vote, 2 in the second.")
    count(room, SPREADS, 1)
    count(room, COLLAPSES, 1)
    count(room, COLLAPSES, 2, second=True)
    expect(kept.locator(".fl-right")).to_contain_text(f"✓ {COLLAPSES}")
    assert console_errors == []
