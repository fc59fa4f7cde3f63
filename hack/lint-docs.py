#!/usr/bin/env python3
"""Checks the documentation as `make lint` runs it; exits 1 naming each fault.

- every relative link of README.md, CHANGELOG.md and docs/ names a file that
  exists, and every `#anchor` a heading of the page it points into (GitHub's
  and mdBook's anchors alike: lower case, punctuation dropped, spaces as `-`);
- every page under docs/ is in docs/SUMMARY.md, the book's table of contents;
- every page under docs/ opens, after its title, with a sentence saying who it
  is for ("For ...");
- every heading of the README the docs were split from (hack/readme-headings.txt)
  is a heading of some page under docs/, so nothing was lost in the move;
- README.md stays a landing page: at most README_MAX_LINES lines.

Standard-library Python only, so the check needs nothing built.
"""

import re
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SUMMARY = DOCS / "SUMMARY.md"
HEADINGS_LIST = ROOT / "hack" / "readme-headings.txt"
README_MAX_LINES = 150

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]*)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def prose_lines(text):
    """The lines outside fenced code blocks, with their 1-based numbers."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip()
        if fence is None and (stripped.startswith("```") or stripped.startswith("~~~")):
            fence = stripped[:3]
            continue
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        yield number, line


def without_code_spans(line):
    return re.sub(r"`[^`]*`", "", line)


def headings(text):
    """The headings' texts, in order."""
    found = []
    for _, line in prose_lines(text):
        match = HEADING.match(line)
        if match:
            found.append(match.group(2))
    return found


def slug(heading):
    """The anchor GitHub (and mdBook) give a heading."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "")
    text = re.sub(r"<[^>]+>", "", text)
    kept = []
    for char in text.lower():
        if char in " -_" or unicodedata.category(char)[0] in "LN":
            kept.append("-" if char == " " else char)
    return "".join(kept)


def anchors(text):
    """Every anchor of a page, duplicates numbered as GitHub numbers them."""
    seen = {}
    result = set()
    for heading in headings(text):
        base = slug(heading)
        count = seen.get(base, 0)
        result.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    for match in re.finditer(r"<a\s+(?:id|name)=\"([^\"]+)\"", text):
        result.add(match.group(1))
    return result


def links(text):
    for number, line in prose_lines(text):
        for match in LINK.finditer(without_code_spans(line)):
            yield number, match.group(1)


def relative(path):
    return path.relative_to(ROOT).as_posix()


def check_links(pages, faults):
    anchor_cache = {}

    def anchors_of(path):
        if path not in anchor_cache:
            anchor_cache[path] = anchors(path.read_text(encoding="utf-8"))
        return anchor_cache[path]

    for page in pages:
        text = page.read_text(encoding="utf-8")
        for number, target in links(text):
            if not target or SCHEME.match(target):
                continue
            path_part, _, anchor = target.partition("#")
            destination = (page.parent / path_part).resolve() if path_part else page
            where = f"{relative(page)}:{number}"
            try:
                destination.relative_to(ROOT)
            except ValueError:
                faults.append(f"{where}: {target} leaves the repository")
                continue
            if not destination.exists():
                faults.append(f"{where}: {target}: no such file")
                continue
            if anchor and destination.suffix == ".md":
                if anchor not in anchors_of(destination):
                    faults.append(f"{where}: {target}: no heading with the anchor #{anchor}")


def check_summary(pages, faults):
    if not SUMMARY.exists():
        faults.append("docs/SUMMARY.md is missing: it is the book's table of contents")
        return
    listed = set()
    for _, target in links(SUMMARY.read_text(encoding="utf-8")):
        if target and not SCHEME.match(target):
            listed.add((DOCS / target.partition("#")[0]).resolve())
    for page in pages:
        if page != SUMMARY and page not in listed:
            faults.append(f"{relative(page)} is not in docs/SUMMARY.md")


def check_openings(pages, faults):
    for page in pages:
        if page == SUMMARY:
            continue
        lines = [line for _, line in prose_lines(page.read_text(encoding="utf-8"))]
        nonblank = [line for line in lines if line.strip()]
        if not nonblank or not nonblank[0].startswith("# "):
            faults.append(f"{relative(page)}: does not open with a title (`# ...`)")
            continue
        if len(nonblank) < 2 or not nonblank[1].startswith("For "):
            faults.append(
                f"{relative(page)}: the first sentence after the title must say who the "
                'page is for and what it answers ("For ...")'
            )


def check_readme_headings(pages, faults):
    wanted = [
        line
        for line in HEADINGS_LIST.read_text(encoding="utf-8").split("\n")
        if line.strip() and not line.startswith("#")
    ]
    present = set()
    for page in pages:
        present.update(headings(page.read_text(encoding="utf-8")))
    for heading in wanted:
        if heading not in present:
            faults.append(
                f"the README's section \"{heading}\" ({relative(HEADINGS_LIST)}) "
                "has no heading of that text under docs/"
            )


def check_readme_length(faults):
    count = len((ROOT / "README.md").read_text(encoding="utf-8").rstrip("\n").split("\n"))
    if count > README_MAX_LINES:
        faults.append(
            f"README.md has {count} lines, over {README_MAX_LINES}: it is the landing "
            "page; move the detail into docs/"
        )


def main():
    pages = sorted(DOCS.rglob("*.md"))
    faults = []
    check_links([ROOT / "README.md", ROOT / "CHANGELOG.md", *pages], faults)
    check_summary(pages, faults)
    check_openings(pages, faults)
    check_readme_headings(pages, faults)
    check_readme_length(faults)
    for fault in faults:
        print(f"lint-docs: {fault}", file=sys.stderr)
    if faults:
        return 1
    print(f"lint-docs: {len(pages)} pages: links, anchors, SUMMARY.md and headings are sound")
    return 0


if __name__ == "__main__":
    sys.exit(main())
