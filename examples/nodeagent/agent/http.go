package agent

import (
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/serve"
)

// httpHandler serves, on the agent's one HTTP address, controller-runtime's
// metrics registry (its controllers' and client's metrics and the agent's)
// at /metrics, and the agent's health checks at /healthz (alive) and
// /readyz (its cache is synced and libvirt answers), with one sub-path per
// check (/readyz/libvirt) as controller-runtime's probe server has; and the
// stream ports of the node's VMIs at /consoles (consolesHandler).
//
// One listener for all three (a serve.Server), opened before the manager
// starts, so that a port taken is an error at once and port 0 is logged
// with the port it got (two agents on one machine each pick their own).
func httpHandler(healthzChecks, readyzChecks map[string]healthz.Checker, consoles http.Handler) http.Handler {
	mux := http.NewServeMux()
	serve.MetricsAndHealth(mux, healthzChecks, readyzChecks)
	mux.Handle("/consoles", consoles)
	mux.Handle("/consoles/", consoles)
	return mux
}
