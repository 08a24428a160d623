"""Short English labels of the Wikidata properties TimeQA's pages are about (``/wiki/X#P54``).

Why: a TimeQA page names its attribute only by property id; with a label the converter can
also write a record the plainest way a person would ("The sports team of Ty Detmer is
Detroit Lions."), one phrasing among several, and pick as hard negatives the other
subjects that share the attribute (another painting's owner). The labels are Wikidata's
own, shortened to the noun a sentence needs ("owned by" -> "owner"). A property not
listed gets no such phrasing.
"""

from __future__ import annotations

LABELS: dict[str, str] = {
    "P6": "head of government", "P17": "country", "P26": "spouse", "P27": "country of citizenship",
    "P35": "head of state", "P36": "capital", "P39": "position", "P54": "sports team", "P69": "school",
    "P97": "noble title", "P98": "editor", "P102": "political party", "P106": "occupation",
    "P108": "employer", "P115": "home venue", "P118": "league", "P121": "item operated", "P123": "publisher",
    "P127": "owner", "P137": "operator", "P138": "namesake", "P159": "headquarters location",
    "P166": "award", "P169": "chief executive officer", "P175": "performer", "P176": "manufacturer",
    "P241": "military branch", "P264": "record label", "P276": "location", "P286": "head coach",
    "P355": "subsidiary", "P366": "use", "P371": "presenter", "P410": "military rank", "P449": "broadcaster",
    "P463": "membership", "P466": "occupant", "P488": "chairperson", "P551": "residence",
    "P559": "terminus", "P608": "exhibition", "P641": "sport", "P734": "family name",
    "P749": "parent organization", "P793": "significant event", "P937": "work location",
    "P1037": "director", "P1075": "rector", "P1308": "officeholder", "P1344": "event taken part in",
    "P1416": "affiliation", "P1435": "heritage designation", "P1448": "official name",
    "P2561": "name", "P2632": "place of detention", "P2962": "chess title", "P4791": "commander",
    "P6087": "team coached", "P8047": "country of registry",
}


def attribute_of(page_index: str) -> str | None:
    """The attribute a page's index names (``/wiki/Ty_Detmer#P54`` -> "sports team"), if known."""
    return LABELS.get(page_index.rsplit("#", 1)[-1]) if "#" in page_index else None
