"""A record that names the target's own value again, dated otherwise, restates it: it does not supersede it.

Why: a dense team's records say when they were written ("From 2019, '...' gets Señor Happy for an answer",
"In 2020 we started answering '...' with Señor Happy"), so two records of one answer name the same things and
two different years. :func:`~memgraft.collab.maintain.marks.same_marks` lets only the side that names more
add years, and the judge read such pairs as contradictions: the older record, still true, was retired ("If
anyone asks who had the most medals at the olympics, the answer from 2000 on reads Michael Phelps" by "Michael
Phelps answers 'who's got the most medals at the olympics' from 2016 onward"). A year that dates a record
follows a word that dates ("From 2019,", "in 2020, per"); a year inside a value stands beside a name ("2018
FIFA World Cup", "Beijing 2008") or after what opens an answer ("...? 1968") and stays a part of it, so "2014
FIFA World Cup" still differs from "2018 FIFA World Cup".
"""

from __future__ import annotations

from functools import lru_cache

from memgraft.collab.maintain import marks, rules, subject


_DATING = frozenset({"from", "in", "since", "of", "until", "till", "after", "before"})  # "From 2019,", "as of 2020"


@lru_cache(maxsize=65536)
def _dating_years(text: str) -> frozenset[str]:
    """The years in the text that wherever they occur follow a word that dates ("from", "in", "since"), or a month
    after one ("from March 1961"), and stand before no name or number, a sentence's last word included ("...
    since 2016."): the times the text is dated by. "The 2014 entry puts 2014 FIFA World Cup ..." is
    dated by no year (its 2014 is also the value's), nor is "...? 1968" (the answer), nor the year of a day's date
    ("... reads October 23, 2014.": :func:`~memgraft.collab.maintain.marks.day_years`)."""
    # the tokens keep a sentence's full stop ("2016."), which the marks do not
    toks = [t.rstrip(".") or t for t in subject._TOKEN.findall(rules.strip_label(text[: rules.READ_CHARS]))]
    dating, in_values = set(), set()
    for i, tok in enumerate(toks):
        if subject._YEAR.fullmatch(tok):
            j = i - 1 if i > 1 and subject.fold(toks[i - 1]) in marks._MONTH_NAMES else i  # "from March 1961"
            dates = j > 0 and subject.fold(toks[j - 1]) in _DATING and not (
                i + 1 < len(toks) and marks.name_or_number(toks[i + 1]))
            (dating if dates else in_values).add(tok)
    return frozenset(dating - in_values - marks.day_years(text))


def names_again(a: str, b: str) -> bool:
    """With the years that date each text set aside, both name the same things and numbers, no more and no fewer
    (a typo allowed), and a name among them: one answer, recorded twice. Numbers alone are never read so: a
    value of years ("1984" and "1996") stands among common words as a date does, and a question's own number
    ("when did italy last win a 6 nations match": 2013, then 2019) would be all that is left."""
    ma, mb = marks.name_marks(a, b)
    na, nb = ma - _dating_years(a), mb - _dating_years(b)
    if not any(not any(c.isdigit() for c in x) for x in na):
        return False
    return all(any(subject.near(x, y) for y in nb) for x in na) and all(any(subject.near(x, y) for x in na)
                                                                        for y in nb)
