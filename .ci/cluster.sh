#!/usr/bin/env bash
# .ci/cluster.sh — a one-machine Kubernetes API server for the node agent,
# for a person (the Go tests start their own through envtest):
#
#     bash .ci/cluster.sh up      # build if needed, start, install KubeVirt's CRDs
#     bash .ci/cluster.sh down    # stop both servers
#
# `up` builds kube-apiserver, etcd and kubectl from their Go modules
# (.ci/kube/build.sh, cached), generates a CA, a serving certificate, an
# admin client certificate and the service-account keys into
# /var/lib/vmi2libvirt/cluster/ (once), starts etcd and kube-apiserver
# listening on 127.0.0.1 only, waits until the API server is ready, installs
# KubeVirt's CRDs (examples/nodeagent/crd) and prints
# the kubeconfig's path and how to use the built kubectl. A second `up` finds
# them running and only reinstalls the CRDs. `down` stops both and leaves
# nothing running; etcd's data and the certificates stay for the next `up`
# (remove /var/lib/vmi2libvirt/cluster to start from scratch).
#
# Ports (127.0.0.1): kube-apiserver 6443, etcd 2379 (clients) and 2380
# (peers); VMI2LIBVIRT_APISERVER_PORT and VMI2LIBVIRT_ETCD_PORT (clients;
# peers on the next port) change them. Needs root (it writes under /var),
# openssl and flock; no systemd; reads no standard input.
set -euo pipefail
exec </dev/null

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state=/var/lib/vmi2libvirt/cluster
kubeconfig="$state/kubeconfig"
crds="$repo/examples/nodeagent/crd"
api_port="${VMI2LIBVIRT_APISERVER_PORT:-6443}"
etcd_port="${VMI2LIBVIRT_ETCD_PORT:-2379}"
peer_port=$((etcd_port + 1))

log() { echo "cluster.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# running NAME: true when NAME.pid names a live process of our binary (its
# file may have been replaced by a rebuild since: "... (deleted)").
running() {
	local pid exe
	pid="$(cat "$state/$1.pid" 2>/dev/null)" || return 1
	[ -n "$pid" ] && [ -e "/proc/$pid" ] || return 1
	exe="$(readlink "/proc/$pid/exe" 2>/dev/null)" || return 1
	exe="${exe% (deleted)}"
	[ "$(basename "$exe")" = "$1" ]
}

# stop NAME: SIGTERM the process NAME.pid names, wait for it, SIGKILL it
# after 30 s; then forget the pid file.
stop() {
	local name=$1 pid i
	if running "$name"; then
		pid="$(cat "$state/$name.pid")"
		log "stopping $name (pid $pid)"
		kill -TERM "$pid"
		for i in $(seq 1 300); do
			[ -e "/proc/$pid" ] || break
			sleep 0.1
		done
		if [ -e "/proc/$pid" ]; then
			log "$name did not stop in 30s; killing it"
			kill -KILL "$pid"
			while [ -e "/proc/$pid" ]; do sleep 0.1; done
		fi
	fi
	rm -f "$state/$name.pid"
}

# start NAME ARGS...: start the binary in its own session, detached from
# this script, with its output in NAME.log.
start() {
	local name=$1
	shift
	log "starting $name (log: $state/$name.log)"
	setsid "$bin/$name" "$@" >>"$state/$name.log" 2>&1 </dev/null &
	echo $! >"$state/$name.pid"
}

certificates() {
	local dir="$state/pki"
	[ -f "$dir/admin.crt" ] && return 0
	log "generating certificates into $dir"
	local tmp="$dir.tmp"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	(
		cd "$tmp"
		openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=vmi2libvirt-cluster-ca" \
			-keyout ca.key -out ca.crt 2>/dev/null
		openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
			-keyout apiserver.key -out apiserver.csr 2>/dev/null
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >apiserver.ext
		openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
			-extfile apiserver.ext -out apiserver.crt 2>/dev/null
		# The administrator: group system:masters is allowed everything.
		openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=admin" \
			-keyout admin.key -out admin.csr 2>/dev/null
		printf 'extendedKeyUsage=clientAuth\n' >admin.ext
		openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
			-extfile admin.ext -out admin.crt 2>/dev/null
		openssl genrsa -out sa.key 2048 2>/dev/null
		openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
		rm -f ./*.csr ./*.ext ./*.srl
		chmod 0600 ./*.key
	)
	chmod 0700 "$tmp"
	rm -rf "$dir"
	mv "$tmp" "$dir"
}

write_kubeconfig() {
	local pki="$state/pki"
	cat >"$kubeconfig.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: vmi2libvirt
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
users:
- name: admin
  user:
    client-certificate-data: $(base64 -w0 "$pki/admin.crt")
    client-key-data: $(base64 -w0 "$pki/admin.key")
contexts:
- name: vmi2libvirt
  context:
    cluster: vmi2libvirt
    user: admin
current-context: vmi2libvirt
EOF
	chmod 0600 "$kubeconfig.tmp"
	mv "$kubeconfig.tmp" "$kubeconfig"
}

kubectl() { "$bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }

up() {
	[ "$(id -u)" -eq 0 ] || die "run me as root: I write under /var/cache and /var/lib"
	bin="$(bash "$repo/.ci/kube/build.sh" | tail -n1)"
	mkdir -p "$state"
	chmod 0700 "$state"
	certificates
	write_kubeconfig

	if running etcd; then
		log "etcd is running (pid $(cat "$state/etcd.pid"))"
	else
		start etcd --name vmi2libvirt --data-dir "$state/etcd" \
			--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
			--listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
			--initial-cluster "vmi2libvirt=http://127.0.0.1:$peer_port"
	fi

	if running kube-apiserver; then
		log "kube-apiserver is running (pid $(cat "$state/kube-apiserver.pid"))"
	else
		local pki="$state/pki"
		start kube-apiserver \
			--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port" \
			--etcd-servers="http://127.0.0.1:$etcd_port" \
			--tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
			--client-ca-file="$pki/ca.crt" --authorization-mode=RBAC \
			--service-account-issuer="https://127.0.0.1:$api_port" \
			--service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
			--service-cluster-ip-range=10.0.0.0/24 \
			--shutdown-send-retry-after=true
		# (On SIGTERM it then closes its clients' connections within 2 s,
		# once the requests in flight are answered; by default it waits a
		# minute for watches, such as a running node agent's, to end.)
	fi

	local began=$SECONDS
	until kubectl get --raw /readyz >/dev/null 2>&1; do
		for name in etcd kube-apiserver; do
			running "$name" || die "$name exited; the end of $state/$name.log:
$(tail -n 20 "$state/$name.log")"
		done
		[ $((SECONDS - began)) -lt 180 ] || die "kube-apiserver not ready after 180s; see $state/kube-apiserver.log"
		sleep 0.5
	done
	log "kube-apiserver ready on https://127.0.0.1:$api_port ($((SECONDS - began))s)"

	# Server-side apply: idempotent, and the CRDs are too large for the
	# last-applied annotation of a client-side apply. (-f of the folder
	# applies each of its YAML files.)
	kubectl apply --server-side --force-conflicts -f "$crds" >&2
	# (kubectl wait fails outright while a new CRD has no conditions yet.)
	began=$SECONDS
	for name in virtualmachineinstances virtualmachines virtualmachineinstancemigrations; do
		until [ "$(kubectl get crd "$name.kubevirt.io" \
			-o jsonpath='{.status.conditions[?(@.type=="Established")].status}')" = True ]; do
			[ $((SECONDS - began)) -lt 120 ] || die "the CRD $name.kubevirt.io is not Established after 120s"
			sleep 0.5
		done
	done
	log "KubeVirt's CRDs established (VirtualMachineInstance, VirtualMachine, VirtualMachineInstanceMigration)"

	cat <<EOF

The cluster is up. Its kubeconfig:

    $kubeconfig

Use the kubectl built with it:

    export KUBECONFIG=$kubeconfig PATH=$bin:\$PATH
    kubectl get vmi

Stop it with: bash .ci/cluster.sh down
EOF
}

down() {
	stop kube-apiserver
	stop etcd
	log "stopped; etcd's data and the certificates stay in $state"
}

case "${1:-}" in
up) up ;;
down) down ;;
*)
	echo "usage: bash .ci/cluster.sh up|down" >&2
	exit 2
	;;
esac
