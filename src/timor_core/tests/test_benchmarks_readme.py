"""benchmarks/README.md's map stays true: every in-page link of the file (its "Where the figures stand" table and its
contents) leads to exactly one heading, by GitHub's anchor rule, so the map cannot rot as sections are appended."""

from __future__ import annotations

import re
import unicodedata

import pytest
from conftest import REPO

README = REPO / "benchmarks" / "README.md"

pytestmark = pytest.mark.skipif(not README.is_file(), reason="needs the repository's benchmarks/README.md")

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
IN_PAGE_LINK = re.compile(r"\]\(#([^)\s]*)\)")


def slug(title: str) -> str:
    """GitHub's anchor for a heading: lowercase; letters, marks, decimal digits, underscores, hyphens and spaces kept
    (every other character dropped, inline code's backticks among them); each space made a hyphen."""
    title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link in a heading counts by its text
    kept = []
    for ch in title.lower():
        kind = unicodedata.category(ch)
        if kind[0] in "LM" or kind in ("Nd", "Pc") or ch in " -":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


def headings(text: str) -> list[tuple[int, str]]:
    """(line number, title) of every ATX heading, those inside fenced code blocks left out."""
    found, fence = [], None
    for number, line in enumerate(text.splitlines(), 1):
        opened = FENCE.match(line)
        if opened:
            mark = opened.group(1)[0]
            fence = mark if fence is None else (None if mark == fence else fence)
            continue
        matched = None if fence else HEADING.match(line)
        if matched:
            found.append((number, matched.group(1)))
    return found


def anchors(text: str) -> dict[str, tuple[int, str, str]]:
    """Each heading's anchor -> (line, title, its slug before de-duplication); a repeated slug gets -1, -2, ... in
    order, as on GitHub (github-slugger's rule: the next free number)."""
    seen: dict[str, int] = {}
    out = {}
    for number, title in headings(text):
        base = anchor = slug(title)
        while anchor in seen:
            seen[base] += 1
            anchor = f"{base}-{seen[base]}"
        seen[anchor] = 0
        out[anchor] = (number, title, base)
    return out


def broken_links(text: str) -> list[str]:
    """Every in-page link that leads to no heading, or to one of several headings with the same title (its anchor
    then depends on their order: a link that is right today points elsewhere once a same-titled heading comes
    before it), or to a heading whose anchor GitHub's renderers do not agree on (superscripts and other
    non-decimal digits, e.g. "10⁸": kept by some, dropped by others)."""
    targets = anchors(text)
    bases: dict[str, int] = {}
    for _, _, base in targets.values():
        bases[base] = bases.get(base, 0) + 1
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        for anchor in IN_PAGE_LINK.findall(line):
            if anchor not in targets:
                problems.append(f"line {number}: #{anchor} leads to no heading")
                continue
            at, title, base = targets[anchor]
            if bases[base] > 1:
                problems.append(f"line {number}: #{anchor} is one of {bases[base]} headings titled {title!r}")
            elif any(unicodedata.category(ch) == "No" for ch in title):
                problems.append(f"line {number}: #{anchor} (line {at}) has a title GitHub's renderers slug differently")
    return problems


def section(text: str, title: str) -> str:
    """The text under a level-2 heading, up to the next level-2 heading."""
    parts = re.split(r"^## ", text, flags=re.M)
    found = [p for p in parts if p.startswith(title + "\n")]
    assert len(found) == 1, f"benchmarks/README.md has {len(found)} sections titled {title!r}"
    return found[0]


# -- the rule itself ---------------------------------------------------------------------------------------------


def test_the_slug_rule_on_the_kinds_of_titles_the_file_has():
    assert slug("Live swap: request -> TF of the new robot (`live_swap.py`, issue 22)") == (
        "live-swap-request---tf-of-the-new-robot-live_swappy-issue-22"
    )
    assert slug("Inverse kinematics (i1–i3)") == "inverse-kinematics-i1i3"  # an en dash is dropped
    assert slug("The issue's measures at session 55's end (lead, issue 38 item 1, 2026-11-30)") == (
        "the-issues-measures-at-session-55s-end-lead-issue-38-item-1-2026-11-30"
    )
    assert slug("codes — not merged") == "codes--not-merged"


def test_repeated_titles_are_numbered_and_fenced_code_is_no_heading():
    text = "# A\n## Results\n```\n# not a heading\n```\n### Results\n    # indented code\n#### Results ##\n"
    assert {a: v[0] for a, v in anchors(text).items()} == {"a": 1, "results": 2, "results-1": 6, "results-2": 8}


def test_a_link_to_nothing_to_a_repeated_title_or_to_an_unsure_slug_is_reported():
    text = "# Top\n## Results\n### Results\n## 10⁸ assemblies\n## Plain\n"
    links = "[a](#plain) [b](#nothing) [c](#results) [d](#results-1) [e](#10-assemblies) [f](#108-assemblies)"
    problems = broken_links(text + links + "\n")
    assert len(problems) == 5, problems
    assert not any("#plain" in p for p in problems)
    assert broken_links(text + "[a](#plain) [b](#top)\n") == []


# -- the file ----------------------------------------------------------------------------------------------------


def test_every_in_page_link_of_the_benchmarks_readme_leads_to_exactly_one_heading():
    problems = broken_links(README.read_text(encoding="utf-8"))
    assert not problems, "benchmarks/README.md:\n" + "\n".join(problems)


def test_the_standing_table_and_the_contents_are_there_and_link_into_the_notebook():
    text = README.read_text(encoding="utf-8")
    table, contents = section(text, "Where the figures stand"), section(text, "Contents")
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith(("| ---", "| what"))]
    assert len(rows) >= 25, "the standing tables lost their rows"
    assert all("](#" in row for row in rows), "a row that names no section"
    linked = set(IN_PAGE_LINK.findall(contents))
    assert len(linked) >= 100, f"the contents links only {len(linked)} sections"


SESSION_TAG = re.compile(
    r"\(s\d{2}[a-z]?-[\w-]+[,)]|\((?:lead|s\d{2}[a-z]?-\w+), (?:session|issue)|, s\d{2}[a-z]?-\w+ \("
)
STALE = re.compile(r"(\"?)no reference interpreter (?:on this machine )?now \(`\.\./refvenv` is absent\)", re.I)


def heading_problems(text: str) -> list[str]:
    """What the headings of the file must not do (s56-bench-map's findings, s57-small): say "(latest)" (a newer
    section makes it false, and two said it), be titled just "Results" (three were: the title must say what and
    when), or put a session's own section (its title names its session, ``(s46-batch, ...`` or ``(lead, ...``)
    below level 2, where GitHub's outline files it under an unrelated section; and a remark that the reference was
    missing here must say it was so at the time (it runs here again)."""
    problems = []
    for number, title in headings(text):
        if "(latest)" in title:
            problems.append(f"line {number}: {title!r} says (latest)")
        if title.strip().lower() == "results":
            problems.append(f"line {number}: a heading titled just {title!r}")
    lines = text.splitlines()
    for number, title in headings(text):
        if SESSION_TAG.search(title) and not lines[number - 1].startswith("## "):
            problems.append(f"line {number}: a session's section below level 2: {title[:60]!r}")
    flat = " ".join(text.split())
    for found in STALE.finditer(flat):  # a quotation of it (in a later section's list) is not the remark
        if not found.group(1) and not flat.startswith(" (at the time", found.end()):
            problems.append(f"{found.group(0)!r} at character {found.start()} does not say it was so at the time")
    return problems


def test_the_headings_say_what_and_when_and_sit_at_their_subjects_level():
    problems = heading_problems(README.read_text(encoding="utf-8"))
    assert not problems, "benchmarks/README.md:\n" + "\n".join(problems)


def test_the_heading_rules_catch_what_they_are_for():
    text = (
        "# Top\n## Results\n## A (s46-batch, issue 38 item 1, 2026-11-29)\n### B (s47-segv, issue 39 item 4)\n"
        "### C (lead, session 56, 2026-11-30)\n### D (latest)\n### Earlier rounds (issue 24)\n"
        "No reference interpreter on this machine now (`../refvenv` is absent).\n"
        'has no reference interpreter now (`../refvenv` is absent) (at the time, 2026-11-26). "No reference interpreter'
        ' on this machine now (`../refvenv` is absent)" (quoted)\n'
    )
    problems = heading_problems(text)
    assert len(problems) == 5, problems
    assert sum("below level 2" in p for p in problems) == 2 and not any("Earlier" in p for p in problems)
