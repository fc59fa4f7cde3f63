#!/usr/bin/env python3
"""An mdBook preprocessor (docs/book.toml): links from a page to a file of
the repository outside docs/ (`../../src/contract.rs`) work on GitHub, where
the page is read in place, but not in the built site, which holds docs/
only; they become links to that file on GitHub, under the chart's `home`.

mdBook runs `mdbook-repo-links.py supports <renderer>` (any renderer: yes),
then this with `[context, book]` as JSON on stdin, and reads the book back.
Standard-library Python only.
"""

import json
import posixpath
import re
import sys

REPOSITORY = "https://github.com/workshop-io/configmap-mirror"
REF = "main"
LINK = re.compile(r"(!?\[(?:[^\[\]]|\[[^\]]*\])*\]\()([^)\s]+)(\))")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def rewrite_line(line, page_dir):
    def rewrite(match):
        target = match.group(2)
        if SCHEME.match(target) or target.startswith("#"):
            return match.group(0)
        path, hash_mark, anchor = target.partition("#")
        resolved = posixpath.normpath(posixpath.join("docs", page_dir, path))
        if resolved == "docs" or resolved.startswith("docs/"):
            return match.group(0)
        kind = "tree" if path.endswith("/") else "blob"
        url = f"{REPOSITORY}/{kind}/{REF}/{resolved}{hash_mark}{anchor}"
        return f"{match.group(1)}{url}{match.group(3)}"

    # A link that starts inside a code span is no link.
    spans = [match.span() for match in re.finditer(r"`[^`]*`", line)]

    def outside_code(match):
        if any(start < match.start() < end for start, end in spans):
            return match.group(0)
        return rewrite(match)

    return LINK.sub(outside_code, line)


def rewrite(content, page_dir):
    out = []
    fence = None
    for line in content.split("\n"):
        stripped = line.lstrip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif fence is not None and stripped.startswith(fence):
            fence = None
        elif fence is None:
            line = rewrite_line(line, page_dir)
        out.append(line)
    return "\n".join(out)


def walk(items):
    for item in items:
        chapter = item.get("Chapter") if isinstance(item, dict) else None
        if not chapter:
            continue
        if chapter.get("path"):
            chapter["content"] = rewrite(chapter["content"], posixpath.dirname(chapter["path"]))
        walk(chapter.get("sub_items", []))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "supports":
        return 0
    _context, book = json.load(sys.stdin)
    walk(book.get("items", []))
    json.dump(book, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
