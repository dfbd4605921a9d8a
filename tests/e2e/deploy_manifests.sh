#!/usr/bin/env bash
# deploy/: the Kubernetes manifests, rendered with the guides' own envsubst lines (docs/scale-out.md,
# docs/recording.md; their blocks are marked checked-by this test), pass a strict
# offline check against the API types (deploy_manifests_check.py: every field known and typed,
# required ones present, quantities, names, a pinned image; and what sharding needs), which
# rejects an unknown field and an empty storage class; the replay and merge command lines they
# hold, run here against `retrace serve`, give one complete run. The Slurm script parses and is
# one job of N tasks (tests/slurm/ runs it on a real Slurm). No cluster is involved: nothing is
# applied. Skipped without Debian's python3-kubernetes and python3-yaml.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3  # Debian's, with python3-kubernetes (not a python3 earlier on PATH)
"$PY" -c 'import kubernetes, yaml' 2>/dev/null || { echo "python3-kubernetes is not installed (scripts/deps.sh installs it): skipped"; exit 77; }
CHECK="$ROOT/tests/e2e/deploy_manifests_check.py"

# render DIR: runs docs/scale-out.md's Kubernetes lines that render a manifest (envsubst ... | kubectl
# apply -f -), each writing DIR/NAME.yaml instead of applying it; a manifest the guide applies
# as it is (kubectl apply -f FILE) is copied. Fails unless every shipped manifest is rendered.
render() {
  local dir=$1 line file
  mkdir -p "$dir"
  awk '/^On Kubernetes \(1\.29/ { on = 1 } on && /^```sh/ { inside = 1; next } inside && /^```/ { exit } inside' \
    "$ROOT/docs/scale-out.md" >"$WORK/k8s-block.sh"
  grep -q envsubst "$WORK/k8s-block.sh" || fail "docs/scale-out.md's Kubernetes block has no envsubst line"
  while IFS= read -r line; do
    file=$(grep -oE 'deploy/kubernetes/[a-z-]+\.yaml' <<<"$line") || continue
    case "$line" in
      *envsubst*"| kubectl apply -f -") (cd "$ROOT" && eval "${line%| kubectl apply -f -} > \"$dir/$(basename "$file")\"") ;;
      "kubectl apply -f $file") cp "$ROOT/$file" "$dir/" ;;
    esac
  done <"$WORK/k8s-block.sh"
  render_sidecar "$dir"
  for file in "$ROOT"/deploy/kubernetes/*.yaml; do
    [[ -s "$dir/$(basename "$file")" ]] || fail "the guides' Kubernetes lines do not render $(basename "$file")"
  done
}
# render_sidecar DIR: the record sidecar, rendered by docs/recording.md's own line.
render_sidecar() {
  local line
  line=$(grep -E '^envsubst .*deploy/kubernetes/record-sidecar\.yaml \| kubectl apply -f -$' "$ROOT/docs/recording.md") \
    || fail "docs/recording.md has no envsubst line for deploy/kubernetes/record-sidecar.yaml"
  (cd "$ROOT" && eval "${line%| kubectl apply -f -} > \"$1/record-sidecar.yaml\"")
}

export IMAGE=registry.example.com/retrace:0.1.0-0123456789ab STORAGE_CLASS=nfs-client
export RUN_ID=20261202-101500 SHARDS=4 TARGET=http://vllm.default.svc:8000 START_AT=1796205300
export MODEL=Qwen/Qwen2.5-7B-Instruct
render "$WORK/rendered"
"$PY" "$CHECK" "$WORK"/rendered/*.yaml 2>"$WORK/check.err" || { cat "$WORK/check.err" >&2; fail "the rendered manifests"; }
# The check can fail: an unknown field (a typo), an empty storage class, an unpinned image.
sed 's/backoffLimitPerIndex/backoffLimitPerIndx/' "$WORK/rendered/replay-shards.yaml" >"$WORK/typo.yaml"
"$PY" "$CHECK" "$WORK/typo.yaml" "$WORK/rendered/volume.yaml" 2>"$WORK/typo.err" && fail "a misspelt field passed the check"
check_contains "$WORK/typo.err" "spec.backoffLimitPerIndx: no such field in V1JobSpec" "a misspelt field"
# The sidecar's probes must ask its admin port's /healthz and /readyz, its trace a claimed volume.
sed 's|path: /readyz|path: /healthz|' "$WORK/rendered/record-sidecar.yaml" >"$WORK/probe.yaml"
"$PY" "$CHECK" "$WORK/probe.yaml" 2>"$WORK/probe.err" && fail "a readiness probe on /healthz passed the check"
check_contains "$WORK/probe.err" "readinessProbe: not GET /readyz on the admin port 9090" "a misdirected probe"
sed 's|- /traces/|- /tmp/|' "$WORK/rendered/record-sidecar.yaml" >"$WORK/out.yaml"
"$PY" "$CHECK" "$WORK/out.yaml" 2>"$WORK/out.err" && fail "--out off the volume passed the check"
check_contains "$WORK/out.err" "--out /tmp/ is not a mounted volume" "a trace off the volume"
# Every flag the sidecar gives record is one record has.
"$RETRACE" record --help >"$WORK/record.help"
for flag in $("$PY" -c 'import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d["kind"] == "Deployment":
        for c in d["spec"]["template"]["spec"]["containers"]:
            if c.get("args", [""])[0] == "record": print(" ".join(a for a in c["args"] if a.startswith("--")))' "$WORK/rendered/record-sidecar.yaml"); do
  check_contains "$WORK/record.help" "$flag" "record has the sidecar's $flag"
done
STORAGE_CLASS="" IMAGE=retrace:latest render "$WORK/unset"
"$PY" "$CHECK" "$WORK"/unset/*.yaml 2>"$WORK/unset.err" && fail "an empty storage class and :latest passed the check"
check_contains "$WORK/unset.err" "spec.storageClassName: empty" "an empty storage class"
check_contains "$WORK/unset.err" "'retrace:latest' has no pinned tag" "an unpinned image"

# The command lines the pods run, here: four shards, then the merge, on a local /runs.
start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
runs="$WORK/runs/$RUN_ID"
mkdir -p "$runs/shards"
"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$runs/trace.rtrace" >/dev/null
# START_AT is rendered as a marker and set when every shard's command line is ready: under load the
# four args_of calls took longer than a fixed lead, and the shards refused a start already past.
start_marker=1111111111
TARGET=$SIM_URL START_AT=$start_marker render "$WORK/local"
# args_of FILE INDEX: the container's args, one a line, as Kubernetes would expand them here.
args_of() {
  "$PY" "$CHECK" --args "$1" | jq -r '.[]' | sed -e "s|^/runs/|$WORK/runs/|" -e "s|\$(SHARD_INDEX)|$2|g"
}
for i in 0 1 2 3; do
  args_of "$WORK/local/replay-shards.yaml" "$i" >"$WORK/shard$i.args"
  grep -cx "$start_marker" "$WORK/shard$i.args" >/dev/null || fail "shard $i's args do not carry START_AT"
done
start_at=$(( $(date +%s) + 3 ))
pids=()
for i in 0 1 2 3; do
  mapfile -t args < <(sed "s/^$start_marker\$/$start_at/" "$WORK/shard$i.args")
  "$RETRACE" "${args[@]}" >"$WORK/shard$i.out" 2>"$WORK/shard$i.err" &
  pids+=($!)
done
_PIDS+=("${pids[@]}")
for i in 0 1 2 3; do wait "${pids[$i]}" || { cat "$WORK/shard$i.err" >&2; fail "the Job's shard $i exited non-zero"; }; done
mapfile -t args < <(args_of "$WORK/local/merge.yaml" "")
"$RETRACE" "${args[@]}" >"$WORK/merge.out" 2>"$WORK/merge.err" || { cat "$WORK/merge.err" >&2; fail "the merge Job's command"; }
check_contains "$WORK/merge.out" "merged 20 exchanges from 4 shards into $runs/run.rtrace" "the merge Job's merge"
grep -qE '^  completed +20$' "$WORK/merge.out" || fail "the merge Job's report: no 'completed 20'"
stop "$SIM_PID" || fail "serve exited non-zero"

for script in "$ROOT"/deploy/slurm/*.sbatch; do bash -n "$script" || fail "$script does not parse"; done
# One job of N tasks (tests/slurm/sharded_replay.sh runs it on a real Slurm).
SLURM_SCRIPT="$ROOT/deploy/slurm/replay-shards.sbatch"
check_contains "$SLURM_SCRIPT" '--shard "$SLURM_PROCID/$SLURM_NTASKS"' "each task gives its shard"
check_contains "$SLURM_SCRIPT" '#SBATCH --ntasks=' "one job of N tasks"
check_contains "$SLURM_SCRIPT" '#SBATCH --time=' "a time limit"
grep -q -- '--array' "$SLURM_SCRIPT" && fail "a job array is not co-scheduled: one job of N tasks"
# The flags the scripts use exist.
"$RETRACE" replay --help >"$WORK/replay.help"
check_contains "$WORK/replay.help" "--start-at" "replay --start-at"
"$RETRACE" merge --help >"$WORK/merge.help"
check_contains "$WORK/merge.help" "--allow-missing" "merge --allow-missing"
echo "deploy_manifests: ok"
