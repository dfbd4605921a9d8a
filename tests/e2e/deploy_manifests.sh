#!/usr/bin/env bash
# deploy/: the Kubernetes manifests are well-formed YAML with what sharding needs (an Indexed Job
# whose completions, parallelism and SHARDS agree, JOB_COMPLETION_INDEX in --shard, --start-at, a
# shared volume the merge Job reads), and the Slurm scripts parse and use SLURM_ARRAY_TASK_ID.
# kubectl is not available here: nothing is applied to a cluster. Skipped without python3-yaml.
. "$(dirname "$0")/lib.sh"

python3 -c 'import yaml' 2>/dev/null || { echo "python3-yaml is not installed: skipped"; exit 77; }
python3 - "$ROOT/deploy/kubernetes" <<'PY' || fail "Kubernetes manifests"
import sys, yaml
root = sys.argv[1]
docs = list(yaml.safe_load_all(open(f"{root}/replay-shards.yaml")))
job = next(d for d in docs if d["kind"] == "Job")
claim = next(d for d in docs if d["kind"] == "PersistentVolumeClaim")
spec = job["spec"]
assert spec["completionMode"] == "Indexed", "not an Indexed Job"
assert spec["completions"] == spec["parallelism"], "shards would not all run at once"
container = spec["template"]["spec"]["containers"][0]
env = {e["name"]: e["value"] for e in container["env"]}
assert int(env["SHARDS"]) == spec["completions"], "SHARDS differs from completions"
script = " ".join(container["args"])
for needed in ('--shard "$JOB_COMPLETION_INDEX/$SHARDS"', '--start-at "$START_AT"', "/runs/shard-"):
    assert needed in script, f"replay args lack {needed}"
volumes = spec["template"]["spec"]["volumes"]
assert volumes[0]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
merge = yaml.safe_load(open(f"{root}/merge.yaml"))
assert merge["kind"] == "Job"
margs = " ".join(merge["spec"]["template"]["spec"]["containers"][0]["args"])
assert "retrace merge /runs/shard-*.rtrace" in margs, "merge args"
assert merge["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
PY
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
