#!/usr/bin/env python3
"""Checks the relative links of the project's markdown pages.

Pages checked: README.md, docs/*.md, results/README.md, loom-tests/README.md and
crates/*/README.md (each glob may match nothing). For every inline link or image
`[text](target)` outside fenced code blocks and inline code spans:

- http(s):, mailto: and other scheme links are skipped;
- `path` and `path#anchor` must name a file or directory that exists, relative to the
  linking page;
- `#anchor` (on the page itself) and `path#anchor` (on a markdown page; anchors into other
  files, such as source line anchors, are not checked) must name a heading of that page, by GitHub's slug rules: lowercased, punctuation other than `-` and `_`
  dropped, spaces turned into `-`, and a repeated heading suffixed `-1`, `-2`, ... in order.

Prints each broken link as `file:line: link (reason)` and exits 1 if there is any, 0
otherwise. Standard library only; run it from anywhere: `python3 ci/check-links.py`.
"""

import glob
import os
import re
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PAGES = [
    "README.md",
    "docs/*.md",
    "results/README.md",
    "loom-tests/README.md",
    "crates/*/README.md",
]

# An inline link or image: `[text](target)` or `[text](target "title")`. The text may hold
# one level of nested brackets (an image inside a link, `[`code`]`).
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")


def strip_inline_code(line):
    """The line with its code spans blanked out (same length, so columns stay)."""
    return INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)


def prose_lines(text):
    """Yields (line number, line) for the lines outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                continue
            yield number, line
        elif match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
            if line.strip() == match.group(1):
                fence = None


def slug(heading):
    """GitHub's anchor for a heading's text (before the duplicate suffix)."""
    # The rendered text: link targets, images and emphasis markers do not reach the anchor.
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.strip().lower()
    out = []
    for char in text:
        category = unicodedata.category(char)
        if char in "-_" or category[0] in "LN" or category == "Mn":
            out.append(char)
        elif char == " ":
            out.append("-")
        # Everything else (punctuation, symbols, backticks, emphasis stars) is dropped.
    return "".join(out)


def anchors(path, cache={}):
    """The set of heading anchors of a markdown file."""
    if path not in cache:
        with open(path, encoding="utf-8") as file:
            text = file.read()
        seen = {}
        found = set()
        for _, line in prose_lines(text):
            match = HEADING.match(line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        cache[path] = found
    return cache[path]


def check(page):
    """Yields (line number, link, reason) for each broken link of one page."""
    with open(page, encoding="utf-8") as file:
        text = file.read()
    for number, line in prose_lines(text):
        for match in LINK.finditer(strip_inline_code(line)):
            target = match.group(1)
            if not target or SCHEME.match(target):
                continue
            path, _, anchor = target.partition("#")
            if path:
                resolved = os.path.normpath(os.path.join(os.path.dirname(page), path))
                if not os.path.exists(resolved):
                    yield number, target, "no such file"
                    continue
            else:
                resolved = page
            if not anchor:
                continue
            if os.path.isdir(resolved) or not resolved.endswith(".md"):
                continue  # a line anchor into source, or a folder: GitHub's own, not headings
            if anchor not in anchors(resolved):
                yield number, target, "no such heading"


def main():
    os.chdir(ROOT)
    pages = sorted({page for pattern in PAGES for page in glob.glob(pattern)})
    broken = 0
    for page in pages:
        for number, target, reason in check(page):
            print(f"{page}:{number}: {target} ({reason})")
            broken += 1
    if broken:
        print(f"{broken} broken link(s) in {len(pages)} page(s)", file=sys.stderr)
        return 1
    print(f"links: {len(pages)} page(s) checked, none broken")
    return 0


if __name__ == "__main__":
    sys.exit(main())
