#!/usr/bin/env bash
# .ci/kube/build.sh — builds kube-apiserver, kubectl and etcd from their Go
# modules (the Go module proxy, nothing else) into a cache folder, and prints
# that folder on its last line:
#
#     bash .ci/kube/build.sh        # → /var/cache/vmi2libvirt/kube/v1.34.2
#
# The versions are the ones this folder's go.mod pins (k8s.io/kubernetes with
# one replace per staging module, and the etcd server of the same module
# graph). The binaries are rebuilt only when go.mod, go.sum or the link flags
# below change (a stamp file beside them holds their hash). Go's build cache
# for them is a folder of its own, kept between runs beside the binaries
# (<cache>/go-build, not $HOME's, which `go clean -cache` empties): with it a
# rebuild takes seconds to a minute instead of many minutes. Each build prints
# how long it took. Reads no standard input.
# Environment: VMI2LIBVIRT_KUBE_CACHE overrides /var/cache/vmi2libvirt/kube;
# VMI2LIBVIRT_KUBE_GOCACHE overrides <cache>/go-build (to measure a cold
# build, name an empty folder).
set -euo pipefail
exec </dev/null

# Go keeps its module cache under $HOME; Go from the official tarball lives
# in /usr/local/go/bin, which a bare shell may not have on its PATH.
export HOME="${HOME:-/root}"
if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then
	export PATH="/usr/local/go/bin:$PATH"
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

version="$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' go.mod)"
[ -n "$version" ] || { echo "kube/build.sh: go.mod does not require k8s.io/kubernetes on one line" >&2; exit 1; }
minor="${version#v1.}"
minor="${minor%%.*}"

cache="${VMI2LIBVIRT_KUBE_CACHE:-/var/cache/vmi2libvirt/kube}"
out="$cache/$version"
export GOCACHE="${VMI2LIBVIRT_KUBE_GOCACHE:-$cache/go-build}"

# What `kubectl version` and the server's /version report, as Kubernetes'
# own release build sets it (hack/lib/version.sh); no build date, so the
# same sources give the same binaries.
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

stamp="$( { cat go.mod go.sum; echo "$ldflags"; } | sha256sum | cut -d' ' -f1)"

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9 # one build at a time; a second caller waits and then finds it done

if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ] &&
	[ -x "$out/kube-apiserver" ] && [ -x "$out/kubectl" ] && [ -x "$out/etcd" ]; then
	echo "kube/build.sh: $version up to date in $out" >&2
	echo "$out"
	exit 0
fi

tmp="$(mktemp -d "$cache/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# name=package; built in this order, so kube-apiserver's time includes most
# of what the other two share with it.
targets=(
	kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver
	kubectl=k8s.io/kubernetes/cmd/kubectl
	etcd=go.etcd.io/etcd/server/v3
)
total=$SECONDS
for t in "${targets[@]}"; do
	name="${t%%=*}"
	pkg="${t#*=}"
	began=$SECONDS
	CGO_ENABLED=0 go build -mod=readonly -ldflags "$ldflags" -o "$tmp/$name" "$pkg"
	echo "kube/build.sh: built $name in $((SECONDS - began))s (GOCACHE=$GOCACHE)" >&2
done
echo "kube/build.sh: all three in $((SECONDS - total))s" >&2

echo "$stamp" >"$tmp/.stamp"
chmod 0755 "$tmp"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out"
