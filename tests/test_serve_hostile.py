"""Hostile and concurrent input to the service, in process (issue 12): each case failed before its fix.

The API runs on FastAPI's TestClient over in-process doubles, so these take seconds;
``test_serve_load.py`` runs writers and readers against the real application.
"""

from __future__ import annotations

import time

import pytest

from memgraft.collab import rules

ADVERSARIAL = ["the x " * (1 << 20 // 6), "with x as the y " * (1 << 16), "set the x to " * (1 << 20 // 12),
               " " * (1 << 20), "a. " * (1 << 20 // 3), "Log: " + "x" * (1 << 20)]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=lambda t: repr(t[:10]))
def test_the_rules_read_a_megabyte_in_well_under_a_second(text):
    t0 = time.perf_counter()
    rules.claims(text), rules.content_words(text), rules.specific_tokens(text), rules.negated_specifics(text)
    rules.has_change_cue(text), rules.has_prohibition_cue(text), rules.strip_label(text)
    rules.claim_verdict(text + " y", text), rules.overlap(text, text + " y")
    assert time.perf_counter() - t0 < 1.0  # was quadratic: 2.2 s at 16 KB, hours at 1 MB


def test_the_rules_still_read_ordinary_notes():
    [claim] = rules.claims("The primary assay is qPCR from now on.")
    assert claim.attribute == {"primary", "assay"} and claim.value == {"qpcr"} and not claim.negated
    assert rules.claim_verdict("I ran batch 3 with ELISA as the primary assay.",
                               "The primary assay is qPCR from now on.") == "conflict"
    assert rules.strip_label("Log: ran ELISA") == "ran ELISA" and rules.has_change_cue("switch to B now")
