"""The names and numbers a memory's text is made of, compared between two texts: whether two wordings state the
same things (one statement twice), or each names something the other does not (two values).

Why apart from ``subject``: that module reads one text (its names, subject and value); this one compares the
marks of two, and ``judge``, ``change`` and ``restated`` ask it whether a pair can disagree at all.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memgraft.collab.maintain import asked, cased, rules
from memgraft.collab.maintain.subject import (_HEDGE, _JOINERS, _MONTHS, _NOT_NAMES, _PRONOUN_I, _TOKEN, _YEAR,
                                              _is_word, content, fold, near, read, stated, strong)

_SENTENCE_ENDS = frozenset(".!")
# a day's date ("April 1, 2030", "1 April 2030", "March 19"): its month and year are the value's, where a month or a
# year alone dates a record ("changed in February 2021", "from 2010 onward")
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_DAY_MONTH = re.compile(rf"\b([A-Za-z]+)\.?\s+(?={_DAY}\b(?![:.]\d))|\b{_DAY}\s+([A-Za-z]+)\b")
_DAY_YEAR = re.compile(rf"\b(?:([A-Za-z]+)\.?\s+{_DAY},?|{_DAY}\s+([A-Za-z]+)\.?,?)\s+(\d{{4}})\b")
_MONTH_NAMES = _MONTHS - frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
# a title in double quotes ('"Find Me" for ...'): a name, whatever its words; a quoted question is none
_TITLE = re.compile(r"(?<!\w)[\"“]([^\"“”?]{1,60}?)[\"”](?!\w)")


def same_value(a: str, b: str) -> bool:
    """Both state one value (folded words, a typo allowed in a long word), and neither says it is replaced."""
    ra, rb = read(a), read(b)
    if not strong(ra.value) or not strong(rb.value) or len(ra.value) != len(rb.value):
        return False
    if any(stated(ra.value, old) for old in rb.replaced) or any(stated(rb.value, old) for old in ra.replaced):
        return False
    if not all(near(x, y) for x, y in zip(ra.value, rb.value)):
        return False
    # read without an opener, the "value" is a name both end on, and each names something the other does not:
    # that name is the subject ("Amherst College has held the employer of T. R. S. Broughton" / "the records
    # give University of North Carolina for the employer of T. R. S. Broughton"), and the two differ on the rest
    return not (ra.by_run and rb.by_run and other_marks(a, b))


@lru_cache(maxsize=65536)
def marks(text: str) -> frozenset[str]:
    """The words a value or a name is made of: capitalised words anywhere (a one-word value after "?" too), words
    with digits (years included: "1968" and "1980" are two answers) and a quoted title's words, folded; kind tags
    and hedges cut."""
    body = _HEDGE.sub("", rules.strip_label(text).strip())
    return frozenset(fold(tok) for tok in _TOKEN.findall(body)
                     if name_or_number(tok) and not _PRONOUN_I.match(tok) and fold(tok) not in _JOINERS) | \
        _day_months(body) | _titles(body)


def _titles(body: str) -> frozenset[str]:
    """The capitalised words of a short title in double quotes, common words too: "Find Me" names an episode, and
    read without it two texts quoting it named nothing alike."""
    out: set[str] = set()
    for span in _TITLE.findall(body):
        words = span.split()
        if 0 < len(words) <= 6 and span[:1].isupper() and not asked.opens(span):
            out.update(fold(t) for t in _TOKEN.findall(span) if _is_word(t) and (t[:1].isupper() or t[:1].isdigit()))
    return frozenset(out)


@lru_cache(maxsize=65536)
def _openers(text: str) -> frozenset[str]:
    """Words capitalised only because they open a sentence: first (or after "." or "!", not after "?", which an
    answer follows), no capitalised word after them, and more often written in lower case, by the bundled
    tokenizer's prior ("Starting in 2021, the records give Tom Brady ..." names Tom Brady and a year, not
    "Starting"; "Bill Gates ..." and "Tom ..." stay names)."""
    toks = _TOKEN.findall(rules.strip_label(text).strip())
    return frozenset(fold(tok) for i, tok in enumerate(toks)
                     if (i == 0 or toks[i - 1] in _SENTENCE_ENDS) and tok[:1].isupper()
                     and not (i + 1 < len(toks) and toks[i + 1][:1].isupper()) and cased.common(fold(tok)))


def name_or_number(tok: str) -> bool:
    """A word with a digit, or a capitalised word that is no sentence's common word, month or weekday."""
    word = fold(tok)
    return _is_word(tok) and (any(c.isdigit() for c in tok) or (
        tok[:1].isupper() and word not in _NOT_NAMES and word.rstrip("s") not in _MONTHS))


@lru_cache(maxsize=65536)
def _lower_words(text: str) -> frozenset[str]:
    return frozenset(fold(t) for t in _TOKEN.findall(text) if _is_word(t) and t[:1].islower())


def name_marks(a: str, b: str) -> tuple[frozenset[str], frozenset[str]]:
    """Each text's marks, less any word either text writes in lower case or capitalises only to open a sentence:
    that is no name ("Considered the best tennis player ..."). Set aside on both sides, so a word one text opens
    with and the other states ("Last cat 4 hurricane ...: Elizabeth II" and '... lists "Last cat 4 ..."') is
    no difference."""
    a, b = a[: rules.READ_CHARS], b[: rules.READ_CHARS]
    common = _lower_words(a) | _lower_words(b) | _openers(a) | _openers(b)
    return marks(a) - common, marks(b) - common


def same_marks(a: str, b: str) -> bool:
    """Both texts name the same things and numbers, no more and no fewer (a typo allowed; the one that names more
    may name years besides, the time a record gives): two wordings of one statement ("can confirm Oregon on 'who did auburn beat ...'" and "Oregon answers 'who did auburn beat ...'
    from 2010 onward"), which cannot disagree on a name or a number. Where the value reader finds no value in
    prose, this is what says they agree. Unseen: a value in lower-case words ("oil lamps", "kerosene"). A list that
    loses the item the subject is named by ("Prada and Helmut Lang", then "Prada") is read by
    :func:`~memgraft.collab.maintain.change.item_change` where both answer after an opener."""
    ma, mb = name_marks(a, b)
    small, big = (ma, mb) if len(ma) <= len(mb) else (mb, ma)
    if not small or not all(any(near(x, y) for y in big) for x in small):
        return False
    extra = [y for y in big if not any(near(x, y) for x in small)]
    # a record says when it was written ("... from 2010 onward"): the side that names more may name years too,
    # but only where the other names something besides years, or "1968" would agree with "1968, then 1980"
    # and not the year of a day's date, which is the value ("April 1, 2020" is not "April 1, 2030")
    # and a word that only lengthens a name the other gives in two words or more, before its start ("Swedish Lapland
    # Ranger Regiment" for "Lapland Ranger Regiment"): the same name written out (read as two, a note agreeing on
    # the regiment's commander was retired)
    if not extra:
        return True
    if all(_YEAR.fullmatch(x) for x in small):
        return False
    dated = day_years(a) | day_years(b)
    rest = [y for y in extra if not (_YEAR.fullmatch(y) and y not in dated)]
    return not rest or set(rest) <= _lengthened(b if big is mb else a, small)


def _lengthened(text: str, small: frozenset[str]) -> frozenset[str]:
    """The marks of ``text``'s runs of names in a row that end on two words of ``small`` or more: the words such a
    run puts before them lengthen a name ``small`` gives. A word after or among them makes another name ("U.S. Army
    Reserves" is not "U.S. Army", nor "Lowell Teachers College" "Lowell State College")."""
    out: set[str] = set()
    for run in _name_runs(text):
        matched = [i for i, w in enumerate(run) if any(near(x, w) for x in small)]
        if len(matched) >= 2 and matched == list(range(matched[0], len(run))):
            out.update(run)
    return frozenset(out)


@lru_cache(maxsize=65536)
def _name_runs(text: str) -> tuple[tuple[str, ...], ...]:
    """Runs of consecutive names (capitalised words, not numbers), folded."""
    body = _HEDGE.sub("", rules.strip_label(text[: rules.READ_CHARS]).strip())
    runs: list[tuple[str, ...]] = [()]
    for tok in _TOKEN.findall(body):
        if name_or_number(tok) and not any(c.isdigit() for c in tok) and not _PRONOUN_I.match(tok):
            runs[-1] += (fold(tok),)
        elif runs[-1]:
            runs.append(())
    return tuple(r for r in runs if r)


def _day_months(text: str) -> frozenset[str]:
    """The month of a day's date ("March 19", "19 March"): part of a value, where a month alone dates a record."""
    return frozenset(fold(w) for m in _DAY_MONTH.finditer(text) for w in m.groups() if w and fold(w) in _MONTH_NAMES)


@lru_cache(maxsize=65536)
def day_years(text: str) -> frozenset[str]:
    """The years written in a day's date: "April 1, 2030", "1 April 2030" (the word a month's)."""
    return frozenset(m.group(3) for m in _DAY_YEAR.finditer(text) if fold(m.group(1) or m.group(2)) in _MONTHS)


def other_marks(a: str, b: str) -> bool:
    """Each text names something the other does not (not a year, not a word either writes in lower case): two
    values, where both are about one subject ("Amherst College" against "University of North Carolina")."""
    ma, mb = name_marks(a, b)
    only_a = [x for x in ma if not _YEAR.fullmatch(x) and not any(near(x, y) for y in mb)]
    only_b = [y for y in mb if not _YEAR.fullmatch(y) and not any(near(x, y) for x in ma)]
    return bool(only_a) and bool(only_b)


ANSWER_WORDS = 4  # content words of a value read after its opener, up to which it is one short answer


def other_answer(a: str, b: str) -> bool:
    """Each text gives a short answer after an opener ("...? india", "...: sri lanka", "= 2010"), and the two share
    no word (a typo allowed): two answers, where both answer one question. The lower-case names and the years
    :func:`other_marks` sets aside ("india" / "sri lanka" on who scored the most runs between india and sri lanka;
    "1994" / "2002" on when brazil won the world cup); an answer made finer ("1999" / "November 28, 1999") shares
    a word and is none."""
    ra, rb = read(a), read(b)
    if ra.by_run or rb.by_run or not strong(ra.value) or not strong(rb.value):
        return False
    va, vb = content(ra.value), content(rb.value)
    if not va or not vb or len(va) > ANSWER_WORDS or len(vb) > ANSWER_WORDS:
        return False
    return not any(near(x, y) for x in va for y in vb)


def names_more(a: str, b: str) -> bool:
    """``a`` names something or a number that ``b`` does not (a typo allowed): a value of its own."""
    ma, mb = name_marks(a, b)
    return any(not any(near(x, y) for y in mb) for x in ma)
