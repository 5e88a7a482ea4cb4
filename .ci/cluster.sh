#!/usr/bin/env bash
# .ci/cluster.sh — a one-machine Kubernetes API server for the node agent,
# for a person (the Go tests start their own through envtest):
#
#     bash .ci/cluster.sh up      # build if needed, start, install KubeVirt's CRDs, start the control plane
#     bash .ci/cluster.sh down    # stop the control plane and both servers
#
# `up` builds kube-apiserver, etcd and kubectl from their Go modules
# (.ci/kube/build.sh, cached) and KubeVirt's virtctl (.ci/kube/build-virtctl.sh,
# cached), generates a CA, a serving certificate, an admin client certificate
# and the service-account keys into /var/lib/vmi2libvirt/cluster/ (once), and
# the certificates of the aggregation layer, the control plane and the node
# agents' API (once; see aggregation_certificates), starts etcd and
# kube-apiserver listening on 127.0.0.1 only, with the aggregation layer,
# waits until the API server is ready, installs KubeVirt's CRDs
# (examples/nodeagent/crd), starts the control plane
# (examples/nodeagent/cmd/controlplane, built into the state folder: KubeVirt's
# virt-controller and virt-api roles) with credentials of its own — a client
# certificate of user vmi2libvirt-controlplane, whose rights are
# examples/nodeagent/deploy/controlplane-rbac.yaml — serving, on one HTTPS
# port, its admission webhooks and the subresource API (virtctl's), installs
# the webhook configurations that send VMs and VMIs to it
# (examples/nodeagent/deploy/admission-webhooks.yaml, with the CA as caBundle)
# once it is ready, KubeVirt's default role and the APIServices of
# subresources.kubevirt.io, and prints the kubeconfig's path, how to use the
# built kubectl and virtctl and how to start a node agent. A second `up` finds
# them running and only reinstalls the CRDs, the RBAC, the webhook
# configurations and the APIServices (a kube-apiserver started with other
# flags is restarted). `down` stops all three and leaves nothing running;
# etcd's data and the certificates stay for the next `up` (remove
# /var/lib/vmi2libvirt/cluster to start from scratch). While the control
# plane is stopped, the API server refuses VM and VMI writes (its webhooks'
# failurePolicy is Fail), as a KubeVirt cluster whose virt-api is down.
#
# Ports (127.0.0.1): kube-apiserver 6443, etcd 2379 (clients) and 2380
# (peers), the control plane 8443 (webhooks and the subresource API) and
# 8081 (metrics and health); VMI2LIBVIRT_APISERVER_PORT,
# VMI2LIBVIRT_ETCD_PORT (clients; peers on the next port),
# VMI2LIBVIRT_CONTROLPLANE_PORT and VMI2LIBVIRT_CONTROLPLANE_METRICS_PORT
# change them. Needs root (it writes under /var), openssl, flock and go; no
# systemd; reads no standard input.
set -euo pipefail
exec </dev/null

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state=/var/lib/vmi2libvirt/cluster
kubeconfig="$state/kubeconfig"
nodeagent="$repo/examples/nodeagent"
crds="$nodeagent/crd"
api_port="${VMI2LIBVIRT_APISERVER_PORT:-6443}"
etcd_port="${VMI2LIBVIRT_ETCD_PORT:-2379}"
peer_port=$((etcd_port + 1))
cp_port="${VMI2LIBVIRT_CONTROLPLANE_PORT:-8443}"
# The Service the API server reaches the subresource API through; the
# control plane's serving certificate names it (SERVICE.NAMESPACE.svc).
subresources_namespace=vmi2libvirt
subresources_service=subresources
cp_metrics_port="${VMI2LIBVIRT_CONTROLPLANE_METRICS_PORT:-8081}"
cp_kubeconfig="$state/controlplane.kubeconfig"

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

# start NAME ARGS...: start the binary NAME of $bin in its own session,
# detached from this script, with its output in NAME.log.
start() { start_program "$bin/$1" "$@"; }

# start_program PATH NAME ARGS...: start the program PATH, called NAME
# (its basename), as start does.
start_program() {
	local path=$1 name=$2
	shift 2
	log "starting $name (log: $state/$name.log)"
	setsid "$path" "$@" >>"$state/$name.log" 2>&1 </dev/null &
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
#   server, signed by the cluster's CA (the caBundle of the APIServices and
#   the webhook configurations), for the Service's name and 127.0.0.1 (the
#   webhooks' address);
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
  - port: $cp_port
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
    port: $cp_port
EOF
		done
	} | kubectl apply -f - >&2
	# The API server's availability controller probes each APIService's
	# discovery before it proxies to it; until then a client such as
	# virtctl gets 503 "the server is currently unable to handle the
	# request". up returns only once both say Available.
	local began=$SECONDS
	for v in v1 v1alpha3; do
		until [ "$(kubectl get apiservice "$v.subresources.kubevirt.io" \
			-o jsonpath='{.status.conditions[?(@.type=="Available")].status}')" = True ]; do
			[ $((SECONDS - began)) -lt 120 ] || die "the APIService $v.subresources.kubevirt.io is not Available after 120s: $(kubectl get apiservice "$v.subresources.kubevirt.io" -o jsonpath='{.status.conditions}')"
			sleep 0.5
		done
	done
}

# write_kubeconfig [FILE USER]: a kubeconfig of the client certificate
# pki/USER.crt (default: the administrator's, into $kubeconfig).
write_kubeconfig() {
	local pki="$state/pki" file="${1:-$kubeconfig}" user="${2:-admin}"
	cat >"$file.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: vmi2libvirt
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 "$pki/$user.crt")
    client-key-data: $(base64 -w0 "$pki/$user.key")
contexts:
- name: vmi2libvirt
  context:
    cluster: vmi2libvirt
    user: $user
current-context: vmi2libvirt
EOF
	chmod 0600 "$file.tmp"
	mv "$file.tmp" "$file"
}

kubectl() { "$bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }

# controlplane_certificates: the control plane's client certificate of
# the API server (user vmi2libvirt-controlplane, no group: its rights are
# the RBAC's), of the cluster's CA (once). It serves with pki/subresources.
controlplane_certificates() {
	local dir="$state/pki"
	[ -f "$dir/vmi2libvirt-controlplane.crt" ] && return 0
	log "generating the control plane's client certificate into $dir"
	(
		cd "$dir"
		openssl req -newkey rsa:2048 -nodes -subj "/CN=vmi2libvirt-controlplane" \
			-keyout client.key -out client.csr 2>/dev/null
		printf 'extendedKeyUsage=clientAuth\n' >client.ext
		openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
			-extfile client.ext -out client.crt 2>/dev/null
		rm -f client.csr client.ext ca.srl
		chmod 0600 client.key
		mv client.key vmi2libvirt-controlplane.key
		mv client.crt vmi2libvirt-controlplane.crt # last: it marks them done
	)
}

# http_ok PORT PATH: true when GET http://127.0.0.1:PORT/PATH answers 200.
http_ok() {
	local status
	{ exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
	printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
	read -r _ status _ <&3 || status=
	exec 3>&-
	[ "$status" = 200 ]
}

# controlplane_up: the control plane's credentials and RBAC, the control
# plane itself (built, unless one runs: it is kept), ready, then the webhook
# configurations that send VMs and VMIs to it.
controlplane_up() {
	local pki="$state/pki" began
	controlplane_certificates
	write_kubeconfig "$cp_kubeconfig" vmi2libvirt-controlplane
	kubectl apply --server-side --force-conflicts -f "$nodeagent/deploy/controlplane-rbac.yaml" >&2
	if running controlplane; then
		log "controlplane is running (pid $(cat "$state/controlplane.pid"))"
	else
		log "building the control plane (examples/nodeagent/cmd/controlplane)"
		mkdir -p "$state/bin"
		(cd "$nodeagent" && go build -o "$state/bin/controlplane" ./cmd/controlplane)
		start_program "$state/bin/controlplane" controlplane -kubeconfig "$cp_kubeconfig" \
			-tls-cert-file "$pki/subresources/tls.crt" -tls-private-key-file "$pki/subresources/tls.key" \
			-nodeagent-certs "$pki/controlplane" \
			-bind-address "127.0.0.1:$cp_port" -metrics-address "127.0.0.1:$cp_metrics_port"
	fi
	began=$SECONDS
	until http_ok "$cp_metrics_port" /readyz; do
		running controlplane || die "controlplane exited; the end of $state/controlplane.log:
$(tail -n 20 "$state/controlplane.log")"
		[ $((SECONDS - began)) -lt 120 ] || die "the control plane is not ready after 120s; see $state/controlplane.log"
		sleep 0.5
	done
	log "control plane ready on https://127.0.0.1:$cp_port ($((SECONDS - began))s)"
	# The committed configurations name the default port and no caBundle:
	# each url gets this one's port, and the cluster's CA beside it.
	sed -e "s|^\( *\)url: https://127.0.0.1:8443/\(.*\)\$|\1url: https://127.0.0.1:$cp_port/\2\n\1caBundle: $(base64 -w0 "$pki/ca.crt")|" \
		"$nodeagent/deploy/admission-webhooks.yaml" | kubectl apply --server-side --force-conflicts -f - >&2
	log "admission webhooks installed (virt-api-mutator, virt-api-validator)"
	register_subresources
	log "APIServices v1 and v1alpha3 of subresources.kubevirt.io registered and Available (served by the control plane on 127.0.0.1:$cp_port)"
}

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

	controlplane_up

	cat <<EOF

The cluster is up. Its kubeconfig:

    $kubeconfig

Use the kubectl and virtctl built with it:

    export KUBECONFIG=$kubeconfig PATH=$bin:$virtctl_bin:\$PATH
    kubectl get vm,vmi

Start a node agent on this machine, which runs the VMIs, and serves them to
virtctl (console, vnc, pause...) through the control plane with the
certificates made for it:

    (cd examples/nodeagent && go run . -kubeconfig "\$KUBECONFIG" -node "\$(hostname)" -emulate -claim \\
        -api-address 127.0.0.1:8186 -api-certs $state/pki/nodeagent)

Stop it with: bash .ci/cluster.sh down
EOF
}

down() {
	stop controlplane
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
