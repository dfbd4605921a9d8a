#!/usr/bin/env bash
# deploy/image/build.sh builds the image offline with buildah from the binary under test, and the
# image runs: `--version` says the binary's version and a short replay against `retrace serve`
# from inside it diffs identical to the same replay from the host. The image holds the binary,
# its libraries and nothing to run but retrace (no shell); its tag is pinned, never latest.
# It runs with `podman run` (runtime runc, cgroupfs): podman's defaults fail in this sandbox
# (crun refuses cgroups in hybrid mode; the default RLIMIT_NOFILE and RLIMIT_NPROC are above the
# hard limits, which root may not raise here), so the container gets the current hard nofile
# limit and 1024 processes. Where podman cannot start a container at all, it runs through
# `buildah run --isolation chroot` on the image's own layers (no namespaces or cgroups needed),
# and says so.
. "$(dirname "$0")/../e2e/lib.sh"

command -v buildah >/dev/null || { echo "buildah is not installed (scripts/deps.sh installs it): skipped"; exit 77; }
[[ $(id -u) == 0 ]] || { echo "buildah's chroot isolation needs root here: skipped"; exit 77; }
# Storage of its own under $WORK (vfs: no overlay mounts to leave behind).
export CONTAINERS_STORAGE_CONF="$WORK/storage.conf"
printf '[storage]\ndriver = "vfs"\ngraphroot = "%s"\nrunroot = "%s"\n' "$WORK/graph" "$WORK/run" >"$CONTAINERS_STORAGE_CONF"
# podman's own state and events there too, and the runtime that starts containers here.
export CONTAINERS_CONF="$WORK/containers.conf"
printf '[engine]\ntmp_dir = "%s"\nevents_logger = "none"\ncgroup_manager = "cgroupfs"\nruntime = "runc"\n' \
  "$WORK/podman-tmp" >"$CONTAINERS_CONF"
_containers=()
_image_cleanup() {
  local c
  for c in "${_containers[@]+"${_containers[@]}"}"; do buildah rm "$c" >/dev/null 2>&1 || true; done
  _cleanup
}
trap _image_cleanup EXIT

image=$("$ROOT/deploy/image/build.sh" --archive "$WORK/retrace.oci.tar" "$RETRACE") || fail "the image did not build"
version=$("$RETRACE" --version)
expected_tag=$(sed -E 's/^retrace ([^ ]+) \(commit ([^)]+)\).*/\1-\2/; s/[^A-Za-z0-9_.-]/_/g' <<<"$version")
check_eq "$image" "localhost/retrace:$expected_tag" "the image's pinned tag"
[[ -s "$WORK/retrace.oci.tar" ]] || fail "no OCI archive written"
buildah inspect --type image --format '{{.OCIv1.Config.Entrypoint}} {{.OCIv1.Config.User}}' "$image" >"$WORK/config"
check_eq "$(cat "$WORK/config")" "[/usr/bin/retrace] 65534:65534" "the image's entrypoint and user"

container=$(buildah from --quiet "$image") || fail "buildah from $image"
_containers+=("$container")
# What the image holds: retrace, the libraries ldd names, the loader, certificates, /etc files.
mount=$(buildah mount "$container")
( cd "$mount" && find . -type f | sort ) >"$WORK/files"
check_eq "$(stat -c %a "$mount/runs")" 1777 "the working directory /runs is writable by the image's user"
buildah umount "$container" >/dev/null
check_contains "$WORK/files" "./usr/bin/retrace" "the binary in the image"
for library in $(ldd "$RETRACE" | grep -oE '/[^ ]+'); do check_contains "$WORK/files" ".$library" "a library the binary links"; done
grep -qE '/(sh|bash|busybox)$' "$WORK/files" && fail "the image holds a shell"

# run_in_image [--volume HOST:PATH] ARGS...: retrace ARGS inside the image, on the host's network.
PODMAN=(podman run --rm --network host
        --ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=1024:1024)
if command -v podman >/dev/null && command -v runc >/dev/null &&
   "${PODMAN[@]}" "$image" --version >"$WORK/version" 2>"$WORK/podman.err"; then
  echo "running the image with podman run (runc)"
  run_in_image() {
    local volume=()
    [[ "$1" == --volume ]] && { volume=(--volume "$2"); shift 2; }
    "${PODMAN[@]}" "${volume[@]+"${volume[@]}"}" "$image" "$@"
  }
else
  echo "podman cannot start a container here ($(tail -1 "$WORK/podman.err" 2>/dev/null || echo "podman or runc missing")): running the image with buildah run --isolation chroot"
  run_in_image() {
    local volume=()
    [[ "$1" == --volume ]] && { volume=(--volume "$2"); shift 2; }
    buildah run --isolation chroot "${volume[@]+"${volume[@]}"}" "$container" -- /usr/bin/retrace "$@"
  }
  run_in_image --version >"$WORK/version" || fail "retrace --version in the image"
fi
check_eq "$(cat "$WORK/version")" "$version" "--version from the image"
# As docs/scale-out.md gives it: the demo in the image's own working directory, no volume.
run_in_image demo --quick >"$WORK/demo.out" 2>"$WORK/demo.err" || { tail -20 "$WORK/demo.err" >&2; fail "demo in the image's /runs"; }

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
mkdir -m 777 "$WORK/runs"  # the image's user (65534) writes its run here
"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/runs/gold.rtrace" >/dev/null
chmod 644 "$WORK/runs/gold.rtrace"
FLAGS=(--target "$SIM_URL" --set max_tokens=12 --set temperature=0 -c 2 --limit 8)
"$RETRACE" replay "$WORK/runs/gold.rtrace" "${FLAGS[@]}" --out "$WORK/host.rtrace" >/dev/null
run_in_image --volume "$WORK/runs:/runs" replay /runs/gold.rtrace \
  "${FLAGS[@]}" --out /runs/image.rtrace >"$WORK/image.out" 2>"$WORK/image.err" \
  || { cat "$WORK/image.err" >&2; fail "replay from the image"; }
"$RETRACE" stats "$WORK/runs/image.rtrace" --json >"$WORK/stats.json"
check_eq "$(jq -r .completed "$WORK/stats.json")" 8 "exchanges the image's replay completed"
"$RETRACE" diff "$WORK/host.rtrace" "$WORK/runs/image.rtrace" >"$WORK/diff.out" \
  || { cat "$WORK/diff.out" >&2; fail "the image's replay differs from the host's"; }

stop "$SIM_PID" || fail "serve exited non-zero"
echo "build_and_run: ok"
