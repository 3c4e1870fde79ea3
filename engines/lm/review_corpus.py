"""Movie reviews written by a seeded grammar: the embedded model's training text and its prompts.

Seed 000 section 6.11 trains GPT-2 to continue the first 8 tokens of IMDB reviews. No
machine here can download GPT-2 or IMDB, so the project ships a small GPT-2-architecture
model trained on reviews that this module writes: a grammar of openings, plot sentences,
opinions about a film's parts and closing verdicts, filled from word lists (positive,
negative and neutral adjectives, genres, characters, places, names). Every review has a
polarity (positive, negative or mixed) that sets how its opinions lean, and the polarities
are balanced so that a sentiment reward starts near 50/50 (P(positive) about 0.5 under the
VADER lexicon). All text is generated from `numpy.random.default_rng(seed)`: the same seed
gives the same reviews on every machine.
"""

from __future__ import annotations

import numpy as np

import assets

PROMPTS_DIR = assets.path("prompts")
"""Where the bundled prompt files live: train.txt (training prompts) and heldout.txt (evaluation)."""

POLARITIES = ("positive", "negative", "mixed")
POLARITY_WEIGHTS = (0.4, 0.4, 0.2)

GOOD = (
    "wonderful", "brilliant", "superb", "excellent", "beautiful", "charming", "delightful", "gripping",
    "clever", "funny", "touching", "stunning", "powerful", "fresh", "lovely", "memorable", "impressive",
    "enjoyable", "great", "fantastic", "remarkable", "elegant", "sharp", "witty", "thrilling", "heartfelt",
    "inspiring", "gorgeous", "perfect", "strong", "tender", "rich", "moving", "engaging", "graceful",
    "confident", "smart", "warm", "vivid", "honest",
)
BAD = (
    "boring", "dull", "awful", "terrible", "weak", "tedious", "predictable", "clumsy", "bland", "messy",
    "lifeless", "painful", "forgettable", "poor", "bad", "horrible", "flat", "stiff", "shallow",
    "pointless", "confusing", "lazy", "cheap", "annoying", "disappointing", "slow", "stupid", "ugly",
    "wooden", "awkward", "tiresome", "mediocre", "dreadful", "hollow", "silly", "empty", "tired", "dreary",
    "sloppy", "muddled",
)
PLAIN = (
    "long", "quiet", "small", "old", "dark", "simple", "familiar", "strange", "loud", "short", "serious",
    "gentle", "odd", "modest", "busy", "unusual", "traditional", "slow-burning", "low-budget", "talky",
)
GOOD_ADVERBS = ("beautifully", "wonderfully", "brilliantly", "superbly", "perfectly", "cleverly", "gracefully")
BAD_ADVERBS = ("badly", "poorly", "clumsily", "lazily", "awkwardly", "painfully", "terribly")
INTENSIFIERS = ("very", "really", "truly", "quite", "rather", "so", "simply", "deeply", "surprisingly", "often")
GOOD_NOUNS = ("masterpiece", "gem", "treat", "triumph", "joy", "delight", "classic", "pleasure")
BAD_NOUNS = ("mess", "disaster", "failure", "bore", "waste of time", "letdown", "chore", "misfire")
GENRES = (
    "film", "movie", "comedy", "drama", "thriller", "horror film", "western", "war film", "musical",
    "romance", "science fiction film", "documentary", "mystery", "family film", "crime drama",
    "animated film", "period drama", "sports film", "road movie", "love story", "ghost story", "satire",
)
ASPECTS = (
    "story", "plot", "script", "cast", "acting", "direction", "music", "score", "soundtrack", "dialogue",
    "ending", "camera work", "photography", "pacing", "editing", "lead actor", "lead actress", "villain",
    "first half", "second half", "final scene", "opening scene", "humour", "writing", "lighting", "twist",
    "romance", "supporting cast", "premise", "style", "tone", "special effects", "costumes", "sets",
    "songs", "jokes", "fight scenes", "characters",
)
PLURAL_ASPECTS = frozenset(("special effects", "costumes", "sets", "songs", "jokes", "fight scenes", "characters"))
PARTS = ("first half", "second half", "final scene", "opening scene", "middle", "last act", "flashbacks", "party scene")
CHARACTERS = (
    "a young teacher", "an old soldier", "a retired detective", "two brothers", "a lonely farmer",
    "a famous singer", "a small-town doctor", "a group of students", "a single mother", "a young couple",
    "a boxer", "a struggling writer", "a clever thief", "a night nurse", "a ship captain", "an orphan girl",
    "a bank clerk", "a travelling salesman", "three old friends", "a police officer", "a shy painter",
    "a widowed father", "a stubborn judge", "a circus clown", "a young lawyer", "an ageing actress",
    "a gifted pianist", "a country priest", "a family of five", "a runaway boy",
)
ROLES = tuple(c for c in CHARACTERS if c.split()[0] in ("a", "an"))
ACTIONS = (
    "moves to", "returns to", "falls in love in", "tries to escape from", "goes looking for a lost sister in",
    "starts a new life in", "opens a restaurant in", "gets lost in", "hides from the police in",
    "takes a summer job in", "searches for buried gold in", "plans a robbery in", "runs for mayor of",
    "builds a boat in", "solves a murder in", "grows up in",
)
PLACES = (
    "a small town in Ohio", "New York", "the desert", "a remote island", "London", "Paris", "a prison",
    "a farm in Kansas", "a busy hospital", "a seaside village", "Chicago", "a mining town", "the mountains",
    "a boarding school", "Tokyo", "a travelling circus", "Rome", "a fishing village", "the suburbs", "Texas",
)
FIRST_NAMES = (
    "James", "Anna", "Robert", "Maria", "John", "Helen", "Michael", "Sarah", "David", "Laura", "Peter",
    "Julia", "Thomas", "Grace", "Daniel", "Emma", "Henry", "Claire", "George", "Alice",
)
LAST_NAMES = (
    "Miller", "Turner", "Walsh", "Reed", "Carter", "Hayes", "Brooks", "Foster", "Grant", "Hughes",
    "Lawson", "Porter", "Barnes", "Fisher", "Wells", "Dixon", "Parker", "Shaw", "Bennett", "Cole",
)
TITLE_WORDS = (
    "River", "Winter", "Road", "House", "Garden", "Storm", "Silence", "Harbour", "Summer", "Stranger",
    "Mountain", "Letter", "Promise", "Shadow", "Station", "Island", "Night", "Orchard", "Bridge", "Circus",
)
TITLE_ADJECTIVES = ("Last", "Long", "Silent", "Broken", "Golden", "Lost", "Quiet", "Cold", "Hidden", "Empty")
WHEN = (
    "last night", "on Sunday", "last weekend", "on a long flight", "at a festival", "on television",
    "at the cinema", "years ago", "this morning", "on a rainy afternoon",
)
COMPANY = (
    "with my brother", "with my wife", "with a friend", "with my parents", "with my husband", "alone",
    "with my kids", "with some friends", "with my sister", "with my grandmother",
)
RELATIONS = ("brother", "wife", "best friend", "sister", "husband", "mother", "neighbour", "roommate", "father")
THINGS = (
    "good acting", "quiet dramas", "old westerns", "a good mystery", "clever dialogue", "great music",
    "love stories", "a good laugh", "war films", "period pieces", "strong characters", "big action",
)


def _an(word: str) -> str:
    """'a' or 'an' before `word`."""
    return "an" if word[0] in "aeiou" else "a"


def _plural(noun: str) -> str:
    """English plural of a genre name ('comedy' -> 'comedies', 'love story' -> 'love stories')."""
    return noun[:-1] + "ies" if noun.endswith("y") and noun[-2] not in "aeiou" else noun + "s"


def _be(aspect: str, past: bool) -> str:
    """The verb 'to be' agreeing with `aspect`."""
    plural = aspect in PLURAL_ASPECTS
    return ("were" if plural else "was") if past else ("are" if plural else "is")


class ReviewWriter:
    """Draws review sentences from the grammar with one numpy generator."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def pick(self, words):
        return words[self.rng.integers(len(words))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def adjective(self, good: bool) -> str:
        word = self.pick(GOOD if good else BAD)
        return f"{self.pick(INTENSIFIERS)} {word}" if self.chance(0.3) else word

    def two_aspects(self) -> tuple[str, str]:
        """Two different parts of a film."""
        first, second = self.rng.choice(len(ASPECTS), 2, replace=False)
        return ASPECTS[first], ASPECTS[second]

    def name(self) -> str:
        return f"{self.pick(FIRST_NAMES)} {self.pick(LAST_NAMES)}"

    def title(self) -> str:
        if self.chance(0.5):
            return f"The {self.pick(TITLE_ADJECTIVES)} {self.pick(TITLE_WORDS)}"
        return f"{self.pick(TITLE_WORDS)} of the {self.pick(TITLE_ADJECTIVES)} {self.pick(TITLE_WORDS)}"

    def opening(self) -> str:
        """The first sentence of a review: how the writer met the film, or what it is about."""
        genre, who, plain = self.pick(GENRES), self.pick(CHARACTERS), self.pick(PLAIN)
        where = f"{self.pick(ACTIONS)} {self.pick(PLACES)}"
        form = self.rng.integers(12)
        if form == 0:
            return f"I watched this {genre} {self.pick(WHEN)} {self.pick(COMPANY)}, and I have to say a few words about it."
        if form == 1:
            return f"This {genre} tells the story of {who} who {where}."
        if form == 2:
            return f"{self.title()} is {_an(plain)} {plain} {genre} about {who} who {where}."
        if form == 3:
            return f"When I first heard about this {genre}, I expected very little from it."
        if form == 4:
            return f"My {self.pick(RELATIONS)} talked me into seeing this {genre} {self.pick(WHEN)}, and I am glad I went."
        if form == 5:
            return f"Set in {self.pick(PLACES)}, the {genre} follows {who} who {where}."
        if form == 6:
            return f"{self.name()} directed this {genre} in {self.rng.integers(1950, 2024)}, and it stars {self.name()}."
        if form == 7:
            return f"Based on a true story, this {genre} follows {who} who {where}."
        if form == 8:
            return f"I am a big fan of {self.pick(THINGS)}, so I rented this {genre} {self.pick(WHEN)}."
        if form == 9:
            return f"I saw {self.title()} {self.pick(WHEN)} {self.pick(COMPANY)}, and we talked about it for hours."
        if form == 10:
            return f"It has been a long time since I saw {_an(genre)} {genre} like this one."
        return f"In this {plain} {genre}, {self.name()} plays {who} who {where}."

    def plot(self) -> str:
        """A neutral sentence about what happens."""
        form = self.rng.integers(4)
        if form == 0:
            return f"The story takes place in {self.pick(PLACES)}, where {self.pick(CHARACTERS)} {self.pick(ACTIONS)} {self.pick(PLACES)}."
        if form == 1:
            return f"Along the way they meet {self.pick(CHARACTERS)} and {self.pick(CHARACTERS)}."
        if form == 2:
            return f"{self.name()} plays the lead, and {self.name()} plays {self.pick(ROLES)}."
        return f"Most of the {self.pick(GENRES)} happens in {self.pick(PLACES)}, over one {self.pick(('summer', 'winter', 'night', 'week'))}."

    def opinion(self, good: bool) -> str:
        """A sentence that praises (good) or criticises a part of the film."""
        aspect, other, adj = self.two_aspects() + (self.adjective(good),)
        past = self.chance(0.5)
        verb = _be(aspect, past)
        form = self.rng.integers(10)
        if form == 0:
            return f"The {aspect} {verb} {adj}."
        if form == 1:
            return f"The {aspect} {verb} {adj} and the {other} {_be(other, past)} {self.adjective(good)}."
        if form == 2:
            return f"{self.name()} gives {_an(adj)} {adj} performance as {self.pick(ROLES)}."
        if form == 3:
            feeling = self.pick(("loved", "enjoyed", "liked", "admired") if good else ("hated", "disliked", "could not stand", "was bored by"))
            return f"I {feeling} the {aspect}, which {verb} {adj}."
        if form == 4:
            return f"There are some {adj} moments in the {self.pick(PARTS)}."
        if form == 5:
            best = "best" if good else "worst"
            return f"It is one of the {best} {_plural(self.pick(GENRES))} I have seen in years."
        if form == 6:
            adverb = self.pick(GOOD_ADVERBS if good else BAD_ADVERBS)
            return f"The {aspect} {verb} {adverb} done."
        if form == 7:
            noun = self.pick(GOOD_NOUNS if good else BAD_NOUNS)
            return f"The whole thing is {_an(noun)} {noun}."
        if form == 8:
            return f"The {aspect} {verb} {self.pick(PLAIN)}, but {self.adjective(good)}."
        return f"What {_an(adj)} {adj} {self.pick(GENRES)}!"

    def mixed(self) -> str:
        """A sentence with one good and one bad part."""
        first_good = self.chance(0.5)
        aspect, other = self.two_aspects()
        return (
            f"The {aspect} {_be(aspect, False)} {self.adjective(first_good)}, "
            f"but the {other} {_be(other, False)} {self.adjective(not first_good)}."
        )

    def closing(self, good: bool) -> str:
        """The verdict at the end."""
        form = self.rng.integers(5)
        if form == 0:
            score = self.rng.integers(7, 11) if good else self.rng.integers(1, 5)
            return f"{score} out of 10."
        if form == 1:
            adj = self.adjective(good)
            return f"Overall, {_an(adj)} {adj} film."
        if form == 2:
            action = "see it" if good else "skip it"
            return f"Do yourself a favour and {action}."
        if form == 3:
            verb = "would recommend" if good else "would not recommend"
            return f"I {verb} it to anyone who likes {self.pick(THINGS)}."
        return "I will watch it again." if good else "I will never watch it again."

    def review(self) -> str:
        """One review: an opening, two to five sentences of plot and opinion, a verdict."""
        polarity = POLARITIES[self.rng.choice(3, p=POLARITY_WEIGHTS)]
        lean = {"positive": 0.85, "negative": 0.15, "mixed": 0.5}[polarity]
        sentences = [self.opening()]
        for _ in range(self.rng.integers(2, 6)):
            kind = self.rng.random()
            if kind < 0.25:
                sentences.append(self.plot())
            elif kind < 0.35:
                sentences.append(self.mixed())
            else:
                sentences.append(self.opinion(self.chance(lean)))
        sentences.append(self.closing(self.chance(lean)))
        return " ".join(sentences)


def reviews(n: int, seed: int) -> list[str]:
    """`n` generated reviews, the same for the same seed."""
    writer = ReviewWriter(seed)
    return [writer.review() for _ in range(n)]


def openings(n: int, seed: int) -> list[str]:
    """`n` distinct review openings (first sentences), the same for the same seed."""
    writer = ReviewWriter(seed)
    seen: dict[str, None] = {}
    while len(seen) < n:
        seen.setdefault(writer.opening())
    return list(seen)


def bundled_prompts(split: str) -> list[str]:
    """The bundled prompts: 'train' (sampled during training) or 'heldout' (evaluation only)."""
    if split not in ("train", "heldout"):
        raise ValueError(f"the prompt split must be 'train' or 'heldout', got {split!r}.")
    lines = (PROMPTS_DIR / f"{split}.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip()]
