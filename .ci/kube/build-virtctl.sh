#!/usr/bin/env bash
# .ci/kube/build-virtctl.sh — builds KubeVirt's virtctl (the real one, of the
# release virtctl/go.mod pins) from its Go module (the Go module proxy,
# nothing else) into a cache folder beside kube-apiserver's, and prints that
# folder on its last line:
#
#     bash .ci/kube/build-virtctl.sh   # → /var/cache/vmi2libvirt/kube/virtctl-v1.8.0
#
# virtctl/go.mod requires kubevirt.io/kubevirt with KubeVirt's own replace
# lines (which a module requiring it does not inherit), and the staging
# modules kubevirt.io/api and kubevirt.io/client-go published at the same
# tag. The binary is rebuilt only when virtctl/go.mod, virtctl/go.sum or the
# link flags below change (a stamp file beside it holds their hash), with the
# Go build cache that .ci/kube/build.sh keeps (<cache>/go-build): the
# Kubernetes modules virtctl needs are the ones kube-apiserver is built from,
# so after that build most of virtctl's packages are cached. Each build prints
# how long it took. Reads no standard input.
# Environment: VMI2LIBVIRT_KUBE_CACHE overrides /var/cache/vmi2libvirt/kube;
# VMI2LIBVIRT_KUBE_GOCACHE overrides <cache>/go-build (to measure a cold
# build, name an empty folder).
set -euo pipefail
exec </dev/null

export HOME="${HOME:-/root}"
if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then
	export PATH="/usr/local/go/bin:$PATH"
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/virtctl"

version="$(awk '$1 == "require" && $2 == "kubevirt.io/kubevirt" {print $3}' go.mod)"
[ -n "$version" ] || { echo "kube/build-virtctl.sh: virtctl/go.mod does not require kubevirt.io/kubevirt on one line" >&2; exit 1; }
# The commit of KubeVirt's release tag, which `virtctl version` reports.
declare -A commits=([v1.8.0]=85b6a25964132b0d578184598fb3c00d00d71f61)
commit="${commits[$version]:-}"
[ -n "$commit" ] || { echo "kube/build-virtctl.sh: no commit known for KubeVirt $version: add its tag's commit" >&2; exit 1; }

cache="${VMI2LIBVIRT_KUBE_CACHE:-/var/cache/vmi2libvirt/kube}"
out="$cache/virtctl-$version"
export GOCACHE="${VMI2LIBVIRT_KUBE_GOCACHE:-$cache/go-build}"
# KubeVirt's template modules are on the Go module proxy but not in its
# checksum database (a lookup answers 404): virtctl/go.sum holds their hashes
# (the ones KubeVirt's own go.sum records), and `go mod tidy` in virtctl/
# needs this setting to write them.
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}kubevirt.io/virt-template-api,kubevirt.io/virt-template-client-go,kubevirt.io/virt-template-engine"

# What `virtctl version` reports, as KubeVirt's release build sets it
# (hack/version.sh): without gitVersion every failed command also prints a
# semver warning. No build date, so the same sources give the same binary.
ldflags="-X kubevirt.io/client-go/version.gitVersion=$version -X kubevirt.io/client-go/version.gitCommit=$commit -X kubevirt.io/client-go/version.gitTreeState=clean"

stamp="$( { cat go.mod go.sum; echo "$ldflags"; } | sha256sum | cut -d' ' -f1)"

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9 # one build at a time (build.sh takes the same lock)

if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ] && [ -x "$out/virtctl" ]; then
	echo "kube/build-virtctl.sh: virtctl $version up to date in $out" >&2
	echo "$out"
	exit 0
fi

tmp="$(mktemp -d "$cache/.build-virtctl.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
began=$SECONDS
CGO_ENABLED=0 go build -mod=readonly -ldflags "$ldflags" -o "$tmp/virtctl" kubevirt.io/kubevirt/cmd/virtctl
echo "kube/build-virtctl.sh: built virtctl $version in $((SECONDS - began))s (GOCACHE=$GOCACHE)" >&2

echo "$stamp" >"$tmp/.stamp"
chmod 0755 "$tmp"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out"
