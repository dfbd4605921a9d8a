#!/usr/bin/env bash
# Builds the retrace container image offline from a build of this tree: the binary (debug info
# stripped) and every shared library `ldd` says it links, at the paths the dynamic loader looks
# in, FROM scratch (deploy/image/Containerfile). Needs buildah (or podman) and no network.
# Usage: deploy/image/build.sh [--archive FILE] [BINARY]   (BINARY: build/release/retrace)
# Prints the image's name, localhost/retrace:VERSION-COMMIT (from `retrace --version`). With
# --archive, also writes it as an OCI archive for a cluster without a registry (`podman load -i`,
# `ctr -n k8s.io images import`, `kind load image-archive`). Storage is buildah's own (set
# CONTAINERS_STORAGE_CONF to keep it elsewhere).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
archive=""
if [[ "${1:-}" == --archive ]]; then archive=${2:?--archive needs a file}; shift 2; fi
binary=${1:-$here/../../build/release/retrace}
[[ -x "$binary" ]] || { echo "build.sh: no retrace binary at $binary (scripts/build.sh release makes one)" >&2; exit 2; }
if command -v buildah >/dev/null; then builder=(buildah); build=(buildah build --isolation chroot)
elif command -v podman >/dev/null; then builder=(podman); build=(podman build)
else echo "build.sh: neither buildah nor podman is installed (apt-get install buildah)" >&2; exit 2; fi

# "retrace 0.1.0 (commit 44551766a213-modified)" -> 0.1.0-44551766a213-modified
version=$("$binary" --version)
tag=$(sed -E 's/^retrace ([^ ]+) \(commit ([^)]+)\).*/\1-\2/; s/[^A-Za-z0-9_.-]/_/g' <<<"$version")
[[ -n "$tag" && "$tag" != latest ]] || { echo "build.sh: cannot read a version from '$version'" >&2; exit 2; }
image="localhost/retrace:$tag"

stage=$(mktemp -d "${TMPDIR:-/tmp}/retrace-image.XXXXXX")
trap 'rm -rf "$stage"' EXIT
root="$stage/rootfs"
mkdir -p "$root/usr/bin" "$root/etc/ssl/certs" "$root/usr/lib/ssl" "$root/runs" "$root/tmp"
chmod 1777 "$root/tmp"
# The working directory, writable by the image's user (65534) however the image is run, so that
# `podman run IMAGE demo` can write there; sticky, as /tmp.
chmod 1777 "$root/runs"
objcopy --strip-debug "$binary" "$root/usr/bin/retrace"
# Every library at the path ldd resolved it to (the loader's own search path), as a file.
libraries=$(ldd "$binary" | grep -oE '/[^ ]+' | sort -u)
[[ -n "$libraries" ]] || { echo "build.sh: ldd lists no libraries for $binary" >&2; exit 2; }
for library in $libraries; do
  mkdir -p "$root$(dirname "$library")"
  cp -L "$library" "$root$library"
done
# https targets: OpenSSL's default verify paths, as on Debian.
if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
  ln -s /etc/ssl/certs/ca-certificates.crt "$root/usr/lib/ssl/cert.pem"
fi
printf 'root:x:0:0::/:/usr/bin/retrace\nnobody:x:65534:65534::/runs:/usr/bin/retrace\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"

cp "$here/Containerfile" "$stage/Containerfile"
"${build[@]}" --quiet --tag "$image" --file "$stage/Containerfile" "$stage" >/dev/null
if [[ -n "$archive" ]]; then
  rm -f "$archive"
  "${builder[@]}" push --quiet "$image" "oci-archive:$archive:$image" >/dev/null
fi
echo "$image"
