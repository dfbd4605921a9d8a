#!/usr/bin/env python3
"""The house's rules, checked on the source tree (tests/e2e/house_floors.sh runs it).

1. Floors are one-way: a room includes only itself and rooms on lower floors (docs/LAYOUT in
   HACKING.md's table; shared/LAYOUT.md). An include that climbs, or a room the table does not
   know, fails with the file, the line and the rule.
2. A source file of a room (not tests/, bench/, fuzz/) stays at most MAX_LINES lines: past it,
   the file has more than one job and wants splitting along its seams.

Usage: house_floors.py ROOT
"""
import pathlib
import re
import sys

# floor of each room: a room may include rooms of strictly lower floors, and itself.
FLOORS = {
    "base": 1,
    "format": 2,
    "llm": 3, "dataset": 3, "diff": 3,
    "net": 4, "metrics": 4,
    "replay": 5, "record": 5, "sim": 5,
    "report": 6,
    "sweep": 7, "shadow": 7,
    "demo": 8,
    "cli": 9, "python": 9,
}
# Folders that hold code but are not rooms: they may include any room.
NOT_ROOMS = {"tests", "bench", "fuzz", "build", "cmake", "scripts", "deploy", "docs", "traces",
             "node_modules", ".git", ".ci"}
MAX_LINES = 500
SOURCE = (".cpp", ".hpp", ".h", ".cc")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_0-9]+)/')


def main(root: pathlib.Path) -> int:
    problems = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        name = folder.name
        if name in NOT_ROOMS or name.startswith("."):
            continue
        sources = [p for p in folder.rglob("*") if p.suffix in SOURCE]
        if not sources:
            continue
        if name not in FLOORS:
            problems.append(f"{name}/: a folder of code that is not a room of the house; give it "
                            f"a floor in tests/e2e/house_floors.py (and HACKING.md's layout)")
            continue
        for source in sorted(sources):
            relative = source.relative_to(root)
            lines = source.read_text(encoding="utf-8", errors="replace").splitlines()
            if len(lines) > MAX_LINES:
                problems.append(f"{relative}: {len(lines)} lines, over {MAX_LINES}: split it "
                                f"along its seams (one job a file)")
            for number, line in enumerate(lines, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = match.group(1)
                if target not in FLOORS:
                    continue  # a generated header ("generated/...") or a system one
                if target != name and FLOORS[target] >= FLOORS[name]:
                    problems.append(
                        f"{relative}:{number}: {name}/ (floor {FLOORS[name]}) includes {target}/ "
                        f"(floor {FLOORS[target]}): an include may only go down a floor")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1])))
