#!/usr/bin/env python3
"""Broken links in the repository's Markdown: README.md, docs/*.md, Benchmarks/results.md and every other tracked
*.md outside .build.

Checks every relative link and image (`[x](path)`, `[x](path#anchor)`, `[x](#anchor)`, `![x](path)`): the file must
exist, and an anchor must be a heading of the target page as GitHub spells it (lower case, punctuation dropped,
spaces to hyphens, `-1`, `-2` for repeats). Also checks that every repository path a page names in code spans
(`scripts/x.sh`, `Sources/API/`, …) exists, so the docs name only files that are there (not in Benchmarks/results.md,
a record of past runs). http(s) and mailto links are left alone, as is everything inside fenced or indented code
blocks. Exit 1 naming each broken one as file:line."""
import os
import re
import subprocess
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # two folders up from scripts/ci/
# Top-level folders whose paths a page may name in a code span; such a span must name something that exists.
PATH_ROOTS = ("Sources/", "Tests/", "scripts/", "deploy/", "Migrations/", "Benchmarks/", "docs/", "Fuzz/", ".ci/")
# Records of past runs name files as they were then: their links are checked, the paths in their code spans are not.
HISTORY = {"Benchmarks/results.md"}


def markdown_files():
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", "*.md"], cwd=ROOT, check=True, capture_output=True).stdout
        files = [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for base, dirs, names in os.walk(ROOT):
            dirs[:] = [d for d in dirs if not d.startswith(".") or d == ".ci"]
            files += [os.path.relpath(os.path.join(base, n), ROOT) for n in names if n.endswith(".md")]
    # Pages not yet tracked (a new page before its first commit) are checked too.
    docs = os.path.join(ROOT, "docs")
    extra = ["README.md", "Benchmarks/results.md"]
    if os.path.isdir(docs):
        extra += ["docs/" + n for n in sorted(os.listdir(docs)) if n.endswith(".md")]
    files += [f for f in extra if f not in files and os.path.exists(os.path.join(ROOT, f))]
    return sorted(f for f in files if not f.startswith(".build/") and "/.build/" not in f and os.path.exists(os.path.join(ROOT, f)))


def prose_lines(text):
    """(line number, line) outside fenced and indented code blocks."""
    fence = None
    previous_blank = True
    in_indented = False
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if fence:
            if marker and stripped.startswith(fence):
                fence = None
            previous_blank = False
            continue
        if marker:
            fence = marker.group(1)
            continue
        if line.strip() == "":
            previous_blank = True
            continue
        if (line.startswith("    ") or line.startswith("\t")) and (previous_blank or in_indented):
            in_indented = True
            continue
        in_indented = False
        previous_blank = False
        yield number, line


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images keep their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").strip().lower()
    out = []
    for ch in text:
        category = unicodedata.category(ch)
        if ch in " -":
            out.append("-" if ch == " " else ch)
        elif ch == "_" or category[0] in "LN" or category == "Mn":
            out.append(ch)
    return "".join(out)


_anchors = {}


def anchors(path):
    if path not in _anchors:
        found = set()
        counts = {}
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            text = f.read()
        for _, line in prose_lines(text):
            m = re.match(r" {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            base = slug(m.group(2))
            n = counts.get(base, 0)
            counts[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        for m in re.finditer(r'<a\s+(?:name|id)="([^"]+)"', text):
            found.add(m.group(1))
        _anchors[path] = found
    return _anchors[path]


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SPAN = re.compile(r"(`+)(.+?)\1")


def check(path):
    problems = []
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        text = f.read()
    here = os.path.dirname(path)
    for number, line in prose_lines(text):
        without_spans = SPAN.sub(lambda m: " " * len(m.group(0)), line)
        for m in LINK.finditer(without_spans):
            target = m.group(1)
            if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # http:, https:, mailto:, …
                continue
            file_part, _, anchor = target.partition("#")
            if file_part:
                resolved = os.path.normpath(os.path.join(here, file_part))
                if resolved.startswith("..") or not os.path.exists(os.path.join(ROOT, resolved)):
                    problems.append(f"{path}:{number}: link to {target}: {resolved} does not exist")
                    continue
            else:
                resolved = path
            if anchor and resolved.endswith(".md") and anchor.lower() not in anchors(resolved):
                problems.append(f"{path}:{number}: link to {target}: no heading #{anchor} in {resolved}")
        for m in SPAN.finditer(line) if path not in HISTORY else ():
            span = m.group(2).strip()
            if not span.startswith(PATH_ROOTS) or re.search(r"[\s{}*<>|$…]|NNNN", span):
                continue
            candidate = span.rstrip("/").split(":")[0]
            if not os.path.exists(os.path.join(ROOT, candidate)):
                problems.append(f"{path}:{number}: names {span}, which does not exist")
    return problems


def main():
    files = markdown_files()
    problems = [p for f in files for p in check(f)]
    if problems:
        print("broken links:\n  " + "\n  ".join(problems), file=sys.stderr)
        sys.exit(1)
    print(f"links and paths in {len(files)} Markdown files resolve")


if __name__ == "__main__":
    main()
