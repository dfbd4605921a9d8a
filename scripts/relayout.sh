#!/usr/bin/env bash
# relayout.sh — the file moves of issue #32 ("a ground floor for shared rules"), as a script that
# can be run again on any retrace checkout, so that the moves never have to be merged.
#
# One-shot: kept in the tree only until it has been run on main (#32 left it unapplied at session
# 13, after seven branches merged, for lack of time to rebuild and re-test both flavours). The
# commit that applies it deletes this file.
#
# Run in the root of a retrace checkout with a clean working tree:
#   bash /path/to/relayout.sh            # moves, rewrites, stages everything (git add); no commit
#   bash /path/to/relayout.sh --check    # says what it would move, changes nothing
#
# What it does, in order (every step is a no-op when already done, so a second run changes nothing
# and a run after more files or includes arrived moves and rewrites only those):
#   1. git mv by rule (globs over git-tracked files, so files added later follow their rule):
#        base/     clock, text/UTF-8, ASCII, JSON field access, JSON number text, private files,
#                  enum names, the JSON arena rule, stop signals, child processes (and durations,
#                  time, splitmix when they are files of their own: format/{durations,time,splitmix}.*)
#        dataset/  format/import*, trace_import*, trace_rows*, compressed_input*, synthetic_prompt*,
#                  staged_output*
#        metrics/  replay/stats*, replay/distribution*, report/statistics*, replay/slo* if present
#        demo/     sweep/demo*
#   2. every "old/path" (includes, comments, docs, CMake, scripts) in git-tracked text files
#      rewritten to the new path; bench/RESULTS.md (a record of the past) is left as it was.
#   3. CMake: base/, dataset/, metrics/, demo/ CMakeLists.txt; add_subdirectory in floor order;
#      each room's retrace_module DEPS gain the new rooms it includes; the link lists of cli/,
#      tests/, bench/, fuzz/ gain the new libraries.
#   4. HACKING.md: a row per new room in the folder table.
# Namespaces are kept (a file keeps its namespace where it lands: retrace, retrace::llm, ...); see
# the closing notes it prints for what stays to do by hand.
set -euo pipefail

check_only=false
[[ ${1:-} == --check ]] && check_only=true

top=$(git rev-parse --show-toplevel 2>/dev/null) || { echo "relayout: not in a git checkout" >&2; exit 2; }
[[ "$(cd "$top" && pwd -P)" == "$(pwd -P)" ]] || { echo "relayout: run me in the checkout's root ($top)" >&2; exit 2; }
[[ -f format/trace.capnp && -f CMakeLists.txt ]] || { echo "relayout: this does not look like retrace" >&2; exit 2; }
if ! $check_only && [[ -n "$(git status --porcelain --untracked-files=no)" ]]; then
  echo "relayout: the working tree has uncommitted changes; commit or stash them first" >&2
  exit 2
fi

# ---------------------------------------------------------------------------------------------
# 1. The moves. Each rule: SOURCE_GLOB DESTINATION (a folder ending in /, keeping the file's
#    name, or a path, for a rename). Globs are matched against `git ls-files`, one folder deep.
rules=(
  # base/: the ground floor, every shared rule once
  "format/clock.hpp           base/"
  "format/text.*              base/"
  "format/ascii.*             base/"
  "format/json_text.*         base/"
  "format/private_file.*      base/"
  "format/enum_names.hpp      base/"
  "format/durations.*         base/"
  "format/time.*              base/"
  "format/splitmix.*          base/"
  "llm/json_fields.hpp        base/"
  "llm/json_arena.hpp         base/"
  "net/stop_signals.*         base/"
  "sweep/process.hpp          base/child_process.hpp"
  "sweep/process.cpp          base/child_process.cpp"
  # dataset/: import and export of datasets and public traces
  "format/import*             dataset/"
  "format/trace_import*       dataset/"
  "format/trace_rows*         dataset/"
  "format/compressed_input*   dataset/"
  "format/synthetic_prompt*   dataset/"
  "format/staged_output*      dataset/"
  # metrics/: a run's figures for any trace
  "replay/stats*              metrics/"
  "replay/distribution*       metrics/"
  "replay/slo*                metrics/"
  "report/statistics*         metrics/"
  # demo/: retrace demo, out of sweep/
  "sweep/demo*                demo/"
)

# A rule whose files would pull a room above base/ into base/ is held back, with the reason.
held_back() {  # FILE -> prints a reason, or nothing
  local file=$1
  case "$file" in
    base/*) return 0 ;;
  esac
  if grep -q '#include <boost/asio' "$file" 2>/dev/null; then
    echo "uses Asio, which is compiled in net/ (rewrite it without Asio first)"
  elif grep -q '#include "sweep/sweep.hpp"' "$file" 2>/dev/null; then
    echo "includes sweep/sweep.hpp (give it a header of its own first)"
  fi
}

# A file held back holds back every file of its stem (net/stop_signals.hpp with .cpp), and a
# stem listed in `together` holds back its partner (sweep/process.hpp with sweep/process.cpp).
declare -A held=()
declare -A together=([sweep/process]=sweep/process)
for rule in "${rules[@]}"; do
  read -r glob dest <<<"$rule"
  [[ "$dest" == base/* ]] || continue
  for file in $glob; do
    [[ -f "$file" ]] || continue
    reason=$(held_back "$file")
    [[ -n "$reason" ]] && held[${file%%.*}]="$file $reason"
  done
done
for stem in "${!together[@]}"; do
  if [[ ! -f "$stem.hpp" && -f "$stem.cpp" ]]; then held[$stem]="$stem.cpp has no header of its own (give it $stem.hpp)"; fi
done

declare -a moves=()      # "old new" pairs to git mv now
declare -A renamed=()    # old path -> new path, for every rule's file, moved now or earlier
tracked=$(git ls-files)
for rule in "${rules[@]}"; do
  read -r glob dest <<<"$rule"
  src_dir=${glob%/*}
  pattern=${glob##*/}
  # Files still at the old place.
  while IFS= read -r file; do
    [[ -n "$file" ]] || continue
    [[ "${file%/*}" == "$src_dir" ]] || continue
    # shellcheck disable=SC2053
    [[ "${file##*/}" == $pattern ]] || continue
    [[ -n "${renamed[$file]:-}" ]] && continue  # an earlier rule took it
    if [[ "$dest" == */ ]]; then new="${dest}${file##*/}"; else new="$dest"; fi
    if [[ -n "${held[${file%%.*}]:-}" ]]; then
      echo "relayout: NOT moving $file to $new: ${held[${file%%.*}]}" >&2
      continue
    fi
    renamed[$file]=$new
    moves+=("$file $new")
  done <<<"$tracked"
  # Files moved by an earlier run: remember old -> new, so that includes added since are rewritten.
  if [[ "$dest" == */ ]]; then
    while IFS= read -r file; do
      [[ -n "$file" ]] || continue
      [[ "${file%/*}/" == "$dest" ]] || continue
      # shellcheck disable=SC2053
      [[ "${file##*/}" == $pattern ]] || continue
      old="$src_dir/${file##*/}"
      [[ -e "$old" ]] || renamed[$old]=$file
    done <<<"$tracked"
  elif [[ -e "$dest" && ! -e "$glob" ]]; then
    renamed[$glob]=$dest
  fi
done

if $check_only; then
  for move in "${moves[@]+"${moves[@]}"}"; do echo "git mv $move"; done
  echo "relayout: ${#moves[@]} file(s) to move; ${#renamed[@]} path(s) to rewrite"
  exit 0
fi

for move in "${moves[@]+"${moves[@]}"}"; do
  read -r old new <<<"$move"
  if [[ -e "$new" ]]; then
    echo "relayout: $new exists already; $old left where it is (merge them by hand)" >&2
    unset "renamed[$old]"
    continue
  fi
  mkdir -p "${new%/*}"
  git mv "$old" "$new"
done

# ---------------------------------------------------------------------------------------------
# 2. Every mention of an old path, in every git-tracked text file.
if (( ${#renamed[@]} )); then
  sed_script=$(mktemp)
  trap 'rm -f "$sed_script"' EXIT
  for old in "${!renamed[@]}"; do
    new=${renamed[$old]}
    # "format/text.hpp" but not "xformat/text.hpp" nor "format/text.hpp2"; dots are literal.
    o=$(printf '%s' "$old" | sed 's/[.[\*^$#]/\\&/g')
    n=$(printf '%s' "$new" | sed 's/[&#\]/\\&/g')
    printf 's#\\(^\\|[^A-Za-z0-9_./-]\\)%s\\($\\|[^A-Za-z0-9_]\\)#\\1%s\\2#g\n' "$o" "$n" >>"$sed_script"
  done
  # The same without the extension ("replay/distribution: ..."), where every file of that stem
  # went to the same place under the same name.
  declare -A stem_new=()
  for old in "${!renamed[@]}"; do
    new=${renamed[$old]}
    os=${old%.*} ns=${new%.*}
    if [[ -n "${stem_new[$os]:-}" && "${stem_new[$os]}" != "$ns" ]]; then stem_new[$os]="-"; else stem_new[$os]=$ns; fi
  done
  for os in "${!stem_new[@]}"; do
    ns=${stem_new[$os]}
    [[ "$ns" == "-" ]] && continue
    o=$(printf '%s' "$os" | sed 's/[.[\*^$#]/\\&/g')
    n=$(printf '%s' "$ns" | sed 's/[&#\]/\\&/g')
    printf 's#\\(^\\|[^A-Za-z0-9_./-]\\)%s\\($\\|[^A-Za-z0-9_./-]\\)#\\1%s\\2#g\n' "$o" "$n" >>"$sed_script"
  done
  mapfile -d '' -t texts < <(git ls-files -z | grep -zv -e '^bench/RESULTS\.md$' -e '^traces/' \
                               -e '^tests/data/' -e '^tests/golden/' |
                             xargs -0 -r grep -lIZ -e 'format/' -e 'llm/' -e 'net/' -e 'replay/' \
                               -e 'report/' -e 'sweep/' -- 2>/dev/null || true)
  # Twice: two mentions side by side share the character between them.
  (( ${#texts[@]} )) && sed -i -f "$sed_script" -f "$sed_script" -- "${texts[@]}"
fi

# ---------------------------------------------------------------------------------------------
# 3. CMake.
python3 - <<'PY'
import os, re, subprocess

def read(path):
    with open(path) as f:
        return f.read()

def write(path, text):
    if os.path.exists(path) and read(path) == text:
        return
    with open(path, "w") as f:
        f.write(text)
    subprocess.run(["git", "add", path], check=True)

new_rooms = {
    # room: (opening comment, DEPS beyond the rooms it includes)
    "base": ("# The ground floor: every rule the other rooms share, once (clock, text and UTF-8, ASCII,\n"
             "# JSON field access and number text, private files, enum names, stop signals, child processes).\n"
             "# It includes nothing of retrace above it.",
             ["Boost::json", "Threads::Threads"]),
    "dataset": ("# Import and export of datasets and public traces, on top of the trace format.",
                ["PkgConfig::ZSTD", "ZLIB::ZLIB", "Boost::json"]),
    "metrics": ("# A run's figures for any trace: Stats, StatsBuilder, Distribution, confidence bounds.",
                ["Boost::json"]),
    "demo": ("# `retrace demo`: the whole experiment against the built-in simulator.",
             ["Boost::json"]),
}
# Floor order: a room is added after every room it may depend on.
order = ["base", "format", "dataset", "llm", "net", "sim", "metrics", "record", "replay", "diff",
         "report", "sweep", "demo", "cli"]

def sources(room):
    if not os.path.isdir(room):
        return []
    return [os.path.join(room, f) for f in sorted(os.listdir(room)) if f.endswith((".cpp", ".hpp"))]

def included_rooms(room):
    found = set()
    for path in sources(room):
        for match in re.finditer(r'#include "([a-z_]+)/', read(path)):
            found.add(match.group(1))
    found.discard(room)
    return found

def rooms_present():
    return [r for r in order if os.path.isfile(os.path.join(r, "CMakeLists.txt")) or
            (r in new_rooms and sources(r))]

# The new rooms' CMakeLists.txt.
for room, (comment, extra) in new_rooms.items():
    if not sources(room):
        continue
    path = os.path.join(room, "CMakeLists.txt")
    if not os.path.exists(path):
        write(path, f"{comment}\nretrace_module({room} DEPS {' '.join(extra)})\n")

present = rooms_present()
libraries = {r for r in present if r != "cli"}

# Each room's DEPS: the new rooms it includes, where the room is below the includer (one way).
warnings = []
for room in present:
    path = os.path.join(room, "CMakeLists.txt")
    if room == "cli" or not os.path.exists(path):
        continue
    text = read(path)
    m = re.search(r"retrace_module\((\w+)\s+DEPS\s+([^)]*)\)", text)
    if not m:
        continue
    deps = m.group(2).split()
    wanted = []
    for other in sorted(included_rooms(room)):
        if other not in libraries or other not in new_rooms and room not in new_rooms:
            continue
        if order.index(other) > order.index(room):
            warnings.append(f"{room}/ includes {other}/, which is above it: fix by hand")
            continue
        if f"retrace_{other}" not in deps:
            wanted.append(f"retrace_{other}")
    # A new room above base/ stands on the trace format.
    if room in new_rooms and room != "base" and "retrace_format" not in deps + wanted:
        wanted.append("retrace_format")
    if wanted:
        text = text[:m.start(2)] + " ".join(wanted) + " " + text[m.start(2):]
        write(path, text)

# Top-level add_subdirectory, in floor order; fuzz/ still returns after sim/.
top = read("CMakeLists.txt")
for room in present:
    if room in new_rooms and f"add_subdirectory({room})" not in top:
        # after the last present room below it
        below = [r for r in order[:order.index(room)] if f"add_subdirectory({r})" in top]
        anchor = f"add_subdirectory({below[-1]})\n" if below else "add_subdirectory(format)\n"
        if not below:  # base/: before format/
            top = top.replace("add_subdirectory(format)\n", f"add_subdirectory({room})\nadd_subdirectory(format)\n", 1)
        elif room == "metrics":  # after the fuzz build's return(), before record/
            top = top.replace("add_subdirectory(record)\n", "add_subdirectory(metrics)\nadd_subdirectory(record)\n", 1)
        else:
            top = top.replace(anchor, anchor + f"add_subdirectory({room})\n", 1)
write("CMakeLists.txt", top)

# Link lists of the binaries: every library of ours, in floor order.
def fix_link_list(path, allowed):
    if not os.path.exists(path):
        return
    text = read(path)
    def replace(m):
        names = m.group(0).split()
        have = [n for n in names if n.startswith("retrace_")]
        rooms = [n[len("retrace_"):] for n in have]
        want = [r for r in order if r in allowed and (r in rooms or r in new_rooms and r in libraries)]
        # A binary gets a new room only if it already links a room the new one came out of.
        return " ".join(f"retrace_{r}" for r in want)
    # The run of retrace_* names (possibly over lines) after PRIVATE.
    pattern = re.compile(r"(?:retrace_base\s+)?retrace_format(?:\s+retrace_\w+)*")
    text2 = pattern.sub(replace, text)
    write(path, text2)

fix_link_list("cli/CMakeLists.txt", libraries)
fix_link_list("tests/CMakeLists.txt", libraries)
fix_link_list("bench/CMakeLists.txt", libraries)
fix_link_list("fuzz/CMakeLists.txt", {"base", "format", "dataset", "llm", "net", "sim"})

for w in warnings:
    print("relayout: " + w)
PY

# The link lists span lines in tests/ and bench/; the regex above folded them. Keep lines short.
for f in tests/CMakeLists.txt bench/CMakeLists.txt cli/CMakeLists.txt; do
  [[ -f $f ]] || continue
  python3 - "$f" <<'PY'
import sys, re
path = sys.argv[1]
text = open(path).read()
def wrap(m):
    line = m.group(0)
    if len(line) <= 100:
        return line
    indent = " " * (len(m.group(1)))
    words = m.group(2).split(" ")
    out, current = [], m.group(1)
    for w in words:
        if len(current) + len(w) + 1 > 100 and current.strip():
            out.append(current.rstrip())
            current = indent
        current += w + " "
    out.append(current.rstrip())
    return "\n".join(out)
text2 = re.sub(r"^([ \t]*target_link_libraries\(\S+ PRIVATE )(.*)$", wrap, text, flags=re.M)
if text2 != text:
    open(path, "w").write(text2)
PY
  git add "$f"
done

# ---------------------------------------------------------------------------------------------
# 4. HACKING.md: a row per new room, above the rooms that use it.
python3 - <<'PY'
import os, subprocess
path = "HACKING.md"
if os.path.exists(path):
    text = open(path).read()
    rows = {
        "base": ("format", "| `base/` | the ground floor: every rule the other rooms share, once. `clock.hpp` (the injected `Clock`; `ManualClock` for tests), `text.hpp` (the one strict UTF-8 validator, `printable(bytes, max)` that never splits a character), `ascii.hpp` (lower, iequals, trim), `json_fields.hpp` (typed, tolerant JSON field access), `json_text.hpp` (JSON number text: plain decimals, null for absent), `json_arena.hpp` (one rule for reused JSON arenas), `private_file.hpp` (small files written 0600, atomically), `enum_names.hpp`, `stop_signals.hpp` (SIGINT/SIGTERM: the first asks to stop, the second exits 130), `child_process.hpp` (children demo and bisect start and always stop). Includes nothing of retrace above it. |"),
        "dataset": ("llm", "| `dataset/` | import and export of datasets and public traces: `import.hpp` (JSONL datasets), `import_export_lines.cpp` (`retrace export`'s lines back into a trace), `trace_import.hpp` (public serving traces: `trace_rows_json.cpp` Mooncake/Bailian, `trace_rows_csv.cpp` Azure/BurstGPT, `trace_rows_sharegpt.cpp`), `synthetic_prompt.hpp` (prompts of a given length), `compressed_input.hpp` (plain/gzip/zstd input), `staged_output.hpp`. |"),
        "metrics": ("record", "| `metrics/` | a run's figures for any trace: `stats.cpp` (`StatsBuilder`, one exchange at a time), `distribution.cpp` (one latency figure's percentiles: exact up to a million samples, then a histogram), `statistics.hpp` (Clopper–Pearson and Student t bounds, Boost.Math). |"),
        "demo": ("cli", "| `demo/` | `retrace demo`: the whole experiment against the built-in simulator (`demo.cpp`; the command's flags are `cli/cmd_demo.cpp`). |"),
    }
    changed = False
    for room, (before, row) in rows.items():
        if f"| `{room}/` |" in text or not os.path.isdir(room):
            continue
        anchor = f"\n| `{before}/` |"
        at = text.find(anchor)
        if at < 0:
            continue
        text = text[:at] + "\n" + row + text[at:]
        changed = True
    if changed:
        open(path, "w").write(text)
        subprocess.run(["git", "add", path], check=True)
PY

for room in base dataset metrics demo; do [[ -d $room ]] && git add -A "$room"; done
git add -u
echo "relayout: done; $(git diff --cached --name-status | grep -c '^R') file(s) moved, $(git diff --cached --name-status | grep -c '^M') file(s) edited (staged, not committed)."
cat <<'EOF'
relayout: left by hand (the compiler points at each):
  - namespaces are unchanged where files landed (base/json_fields.hpp is still retrace::llm,
    base/stop_signals.hpp retrace with a net:: alias, metrics/ files retrace::replay / ::report,
    demo/demo.cpp retrace::sweep, base/child_process.* retrace::sweep);
  - metrics/stats.cpp's declarations are still in replay/replay.hpp (Stats, StatsBuilder, Slo),
    demo's in sweep/sweep.hpp: give each a header in its room;
  - HACKING.md's format/, replay/, report/, sweep/ rows still name the files that moved out.
EOF
