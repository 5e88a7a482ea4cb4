#!/usr/bin/env bash
# .ci/cluster.sh — a one-machine Kubernetes API server for the node agent,
# for a person (the Go tests start their own through envtest):
#
#     bash .ci/cluster.sh up      # build if needed, start, install the VMI CRD
#     bash .ci/cluster.sh down    # stop both servers
#
# `up` builds kube-apiserver, etcd and kubectl from their Go modules
# (.ci/kube/build.sh, cached) and KubeVirt's virtctl (.ci/kube/build-virtctl.sh,
# cached), generates a CA, a serving certificate, an admin client certificate
# and the service-account keys into /var/lib/vmi2libvirt/cluster/ (once), and
# the certificates of the aggregation layer, the subresource API and the node
# agents' API (once; see aggregation_certificates), starts etcd and
# kube-apiserver listening on 127.0.0.1 only, with the aggregation layer,
# waits until the API server is ready, installs KubeVirt's
# VirtualMachineInstance CRD (examples/nodeagent/crd), KubeVirt's default role
# and the APIServices of subresources.kubevirt.io (served by the control plane
# on 127.0.0.1:8443), and prints the kubeconfig's path and how to use the built
# kubectl and virtctl. A second `up` finds them running and only reinstalls
# the CRD and the APIServices (a kube-apiserver started with other flags is
# restarted). `down` stops both and leaves nothing running; etcd's data and the
# certificates stay for the next `up` (remove /var/lib/vmi2libvirt/cluster to
# start from scratch).
#
# Ports (127.0.0.1): kube-apiserver 6443, etcd 2379 (clients) and 2380
# (peers), the control plane's subresource API 8443;
# VMI2LIBVIRT_APISERVER_PORT, VMI2LIBVIRT_ETCD_PORT (clients; peers on the
# next port) and VMI2LIBVIRT_SUBRESOURCES_PORT change them. Needs root (it writes under /var),
# openssl and flock; no systemd; reads no standard input.
set -euo pipefail
exec </dev/null

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state=/var/lib/vmi2libvirt/cluster
kubeconfig="$state/kubeconfig"
crd="$repo/examples/nodeagent/crd/virtualmachineinstances.kubevirt.io.yaml"
api_port="${VMI2LIBVIRT_APISERVER_PORT:-6443}"
etcd_port="${VMI2LIBVIRT_ETCD_PORT:-2379}"
subresources_port="${VMI2LIBVIRT_SUBRESOURCES_PORT:-8443}"
# The Service the API server reaches the subresource API through; its
# serving certificate names it (SERVICE.NAMESPACE.svc).
subresources_namespace=vmi2libvirt
subresources_service=subresources
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

# issue DIR CN USAGE CA [SAN]: a certificate of common name CN for USAGE
# (serverAuth, clientAuth), signed by CA (CA.crt, CA.key), with the subject
# alternative names SAN, into DIR as a Kubernetes TLS secret holds one:
# tls.crt, tls.key, and the authority as ca.crt.
issue() {
	local dir=$1 cn=$2 usage=$3 ca=$4 san=${5:-}
	mkdir -p "$dir"
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$cn" \
		-keyout "$dir/tls.key" -out "$dir/tls.csr" 2>/dev/null
	{
		echo "extendedKeyUsage=$usage"
		[ -z "$san" ] || echo "subjectAltName=$san"
	} >"$dir/tls.ext"
	openssl x509 -req -in "$dir/tls.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial -days 3650 \
		-extfile "$dir/tls.ext" -out "$dir/tls.crt" 2>/dev/null
	cp "$ca.crt" "$dir/ca.crt"
	rm -f "$dir/tls.csr" "$dir/tls.ext" "$ca.srl"
	chmod 0600 "$dir/tls.key"
}

# aggregation_certificates makes, once, in pki/:
# - front-proxy/: the aggregation layer's authority (ca.crt, kube-apiserver's
#   --requestheader-client-ca-file) and its client certificate (tls.crt,
#   front-proxy-client, --proxy-client-cert-file), as kubeadm makes them;
# - subresources/: the serving certificate of the control plane's HTTPS
#   server, signed by the cluster's CA (the APIServices' caBundle), for the
#   Service's name and 127.0.0.1 (the webhooks' address);
# - nodeagent/ and controlplane/: the node agents' API under an authority of
#   its own (nodes-ca), the agents' serving certificate (DNS name
#   vmi2libvirt-nodeagent) and the control plane's client certificate
#   (vmi2libvirt-controlplane), each with that authority as ca.crt
#   (package examples/nodeagent/nodeapi).
aggregation_certificates() {
	local dir="$state/pki"
	[ -f "$dir/controlplane/tls.crt" ] && return 0
	log "generating the aggregation layer's and the node API's certificates into $dir"
	(
		cd "$dir"
		rm -rf front-proxy subresources nodeagent controlplane
		openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=front-proxy-ca" \
			-keyout front-proxy-ca.key -out front-proxy-ca.crt 2>/dev/null
		issue front-proxy front-proxy-client clientAuth front-proxy-ca
		issue subresources "$subresources_service" serverAuth ca \
			"DNS:$subresources_service.$subresources_namespace.svc,DNS:localhost,IP:127.0.0.1"
		openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=vmi2libvirt-nodes-ca" \
			-keyout nodes-ca.key -out nodes-ca.crt 2>/dev/null
		issue nodeagent vmi2libvirt-nodeagent serverAuth nodes-ca DNS:vmi2libvirt-nodeagent
		issue controlplane vmi2libvirt-controlplane clientAuth nodes-ca
		chmod 0600 ./*.key
	)
}

# register_subresources installs KubeVirt's default role (every user may read
# the subresource API's version) and the APIServices v1 and v1alpha3 of
# subresources.kubevirt.io, as KubeVirt's operator does, behind an
# ExternalName Service: the API server proxies to localhost, where the
# control plane serves them (no kube-proxy on this one-machine cluster, so
# no cluster IP, and no --enable-aggregator-routing).
register_subresources() {
	kubectl apply -f "$repo/examples/nodeagent/subresources/default-rbac.yaml" >&2
	local v
	{
		cat <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: $subresources_namespace
---
apiVersion: v1
kind: Service
metadata:
  name: $subresources_service
  namespace: $subresources_namespace
spec:
  type: ExternalName
  externalName: localhost
  ports:
  - port: $subresources_port
EOF
		for v in v1 v1alpha3; do
			cat <<EOF
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: $v.subresources.kubevirt.io
spec:
  group: subresources.kubevirt.io
  version: $v
  groupPriorityMinimum: 1000
  versionPriority: 15
  caBundle: $(base64 -w0 "$state/pki/ca.crt")
  service:
    namespace: $subresources_namespace
    name: $subresources_service
    port: $subresources_port
EOF
		done
	} | kubectl apply -f - >&2
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
	virtctl_bin="$(bash "$repo/.ci/kube/build-virtctl.sh" | tail -n1)"
	mkdir -p "$state"
	chmod 0700 "$state"
	certificates
	aggregation_certificates
	write_kubeconfig

	if running etcd; then
		log "etcd is running (pid $(cat "$state/etcd.pid"))"
	else
		start etcd --name vmi2libvirt --data-dir "$state/etcd" \
			--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
			--listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
			--initial-cluster "vmi2libvirt=http://127.0.0.1:$peer_port"
	fi

	local pki="$state/pki"
	local api_args=(
		--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port"
		--etcd-servers="http://127.0.0.1:$etcd_port"
		--tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key"
		--client-ca-file="$pki/ca.crt" --authorization-mode=RBAC
		--service-account-issuer="https://127.0.0.1:$api_port"
		--service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key"
		--service-cluster-ip-range=10.0.0.0/24
		--shutdown-send-retry-after=true
		# The aggregation layer, as kubeadm sets it up: aggregated API
		# servers (the subresource API) authenticate the API server by its
		# front-proxy client certificate and read the user from these
		# headers (kube-system/extension-apiserver-authentication says so).
		--requestheader-client-ca-file="$pki/front-proxy/ca.crt"
		--requestheader-allowed-names=front-proxy-client
		--requestheader-username-headers=X-Remote-User
		--requestheader-group-headers=X-Remote-Group
		--requestheader-extra-headers-prefix=X-Remote-Extra-
		--proxy-client-cert-file="$pki/front-proxy/tls.crt" --proxy-client-key-file="$pki/front-proxy/tls.key"
	)
	# (On SIGTERM it then closes its clients' connections within 2 s, once
	# the requests in flight are answered; by default it waits a minute for
	# watches, such as a running node agent's, to end.)
	if running kube-apiserver && [ "$(cat "$state/kube-apiserver.args" 2>/dev/null)" != "${api_args[*]}" ]; then
		log "kube-apiserver runs with other flags: restarting it"
		stop kube-apiserver
	fi
	if running kube-apiserver; then
		log "kube-apiserver is running (pid $(cat "$state/kube-apiserver.pid"))"
	else
		start kube-apiserver "${api_args[@]}"
		echo "${api_args[*]}" >"$state/kube-apiserver.args"
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

	# Server-side apply: idempotent, and the CRD is too large for the
	# last-applied annotation of a client-side apply.
	kubectl apply --server-side --force-conflicts -f "$crd" >&2
	# (kubectl wait fails outright while a new CRD has no conditions yet.)
	began=$SECONDS
	until [ "$(kubectl get crd virtualmachineinstances.kubevirt.io \
		-o jsonpath='{.status.conditions[?(@.type=="Established")].status}')" = True ]; do
		[ $((SECONDS - began)) -lt 120 ] || die "the VirtualMachineInstance CRD is not Established after 120s"
		sleep 0.5
	done
	log "VirtualMachineInstance CRD established"

	register_subresources
	log "APIServices v1 and v1alpha3 of subresources.kubevirt.io registered (served by the control plane on 127.0.0.1:$subresources_port)"

	cat <<EOF

The cluster is up. Its kubeconfig:

    $kubeconfig

Use the kubectl and virtctl built with it:

    export KUBECONFIG=$kubeconfig PATH=$bin:$virtctl_bin:\$PATH
    kubectl get vmi

A node agent whose VMIs virtctl reaches (console, vnc, pause...) serves the
node API with the certificates made for it:

    (cd examples/nodeagent && go run . -kubeconfig $kubeconfig -node \$(hostname) -emulate -claim \\
        -api-address 127.0.0.1:8186 -api-certs $state/pki/nodeagent)

The control plane serves the subresource API on 127.0.0.1:$subresources_port, with
the serving certificate $state/pki/subresources and the client
certificate of the node API $state/pki/controlplane.

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
