// Package serve is the HTTP serving the node agent and the control plane
// share: a manager.Runnable that serves a handler on a listener opened
// before the manager starts (so that a port taken is an error at once, and
// port 0 is logged with the port it got), and the metrics and health
// endpoints both programs serve.
package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// shutdownTimeout is how long a stopping Server waits for the requests in
// flight.
const shutdownTimeout = 5 * time.Second

// Server serves Handler on Listener until its context ends; with TLS, over
// TLS. It is a controller-runtime manager.Runnable that needs no leader
// election. Start logs Message with the listener's address once it serves.
type Server struct {
	Listener net.Listener
	Handler  http.Handler
	TLS      *tls.Config // nil: plain HTTP
	Log      *slog.Logger
	Message  string // logged with "address" when serving starts
}

// Start serves until ctx ends, then shuts the server down, waiting up to 5
// s for the requests in flight.
func (s *Server) Start(ctx context.Context) error {
	srv := &http.Server{Handler: s.Handler, ReadHeaderTimeout: 10 * time.Second, TLSConfig: s.TLS}
	ln := s.Listener
	if s.TLS != nil {
		ln = tls.NewListener(ln, s.TLS)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	s.Log.Info(s.Message, "address", s.Listener.Addr().String())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-done
	return nil
}

// NeedLeaderElection is false: every process serves its own.
func (s *Server) NeedLeaderElection() bool { return false }

// MetricsAndHealth registers on mux controller-runtime's metrics registry
// (its controllers', work queues' and API client's metrics, and whatever
// the program registers there) at /metrics, and the checks of healthz
// (alive) and readyz (ready to work) at /healthz and /readyz, with one
// sub-path per check (/readyz/informers) as controller-runtime's probe
// server has.
func MetricsAndHealth(mux *http.ServeMux, healthzChecks, readyzChecks map[string]healthz.Checker) {
	mux.Handle("/metrics", promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	for path, checks := range map[string]map[string]healthz.Checker{"/healthz": healthzChecks, "/readyz": readyzChecks} {
		h := http.StripPrefix(path, &healthz.Handler{Checks: checks})
		mux.Handle(path, h)
		mux.Handle(path+"/", h)
	}
}
