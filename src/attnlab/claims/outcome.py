"""The outcomes a claim, or one part of it, can have: the words written into claims.csv and compared across
published versions, so each member's value is exactly the word a version's claims.csv holds."""
from __future__ import annotations

from enum import Enum


class Outcome(str, Enum):
    """A verdict's outcome. A str: it equals, hashes and is written (CSV, JSON, f-strings) as its word."""

    REPRODUCED = "reproduced"
    NOT_REPRODUCED = "not reproduced"
    INCONCLUSIVE = "inconclusive"
    HOLDS = "holds"  # a computed claim (arithmetic on the settings, a count), judged without noise
    FAILS = "fails"
    DESCRIPTIVE = "descriptive"  # shown beside a claim, tested by nothing; never counted as reproduced
    NOT_RUN = "not run"
    DIVERGED = "diverged"

    __str__ = str.__str__
    __format__ = str.__format__


MEASURED = (Outcome.REPRODUCED, Outcome.NOT_REPRODUCED, Outcome.INCONCLUSIVE)  # a measured claim's judged outcomes
COMPUTED = (Outcome.HOLDS, Outcome.FAILS)
VERDICTS = tuple(Outcome)  # every verdict a claims.csv may hold
UNMEASURED = (Outcome.NOT_RUN, Outcome.DIVERGED)  # no value to judge: the note says why
