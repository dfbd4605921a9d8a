#!/usr/bin/env python3
"""check_links.py ROOT GUIDE [ARRIVING...]: every relative link of the Markdown file GUIDE (a path
under ROOT) names a file that exists, and a #anchor into a Markdown file names one of its headings
(GitHub's slugs). ARRIVING: paths under ROOT that other branches add, said rather than failed.
Prints one line per broken link and exits 1 when there is one."""
import os
import re
import sys


def slug(heading):
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    found, fenced = set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced and line.startswith("#"):
                found.add(slug(line.lstrip("#")))
    return found


def main():
    root, guide, arriving = sys.argv[1], sys.argv[2], set(sys.argv[3:])
    path = os.path.join(root, guide)
    text, fenced, lines = [], False, open(path, encoding="utf-8").read().splitlines()
    for line in lines:  # links in code blocks are not links
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            text.append(line)
    broken = 0
    for target in re.findall(r"\]\(([^)\s]+)\)", "\n".join(text)):
        if re.match(r"^[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(guide), file)) if file else guide
        if not os.path.exists(os.path.join(root, resolved)):
            if resolved in arriving:
                print(f"{guide}: {target}: not in this tree yet (arriving with another branch)")
                continue
            print(f"{guide}: broken link {target}: no {resolved}")
            broken += 1
        elif anchor and resolved.endswith(".md") and anchor not in anchors(os.path.join(root, resolved)):
            print(f"{guide}: broken link {target}: {resolved} has no heading #{anchor}")
            broken += 1
    sys.exit(1 if broken else 0)


main()
