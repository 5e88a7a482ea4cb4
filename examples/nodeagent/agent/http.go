package agent

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// httpServer serves, on one address, controller-runtime's metrics
// registry (its controllers' and client's metrics and the agent's) at
// /metrics, and the agent's health checks at /healthz (alive) and /readyz
// (its cache is synced and libvirt answers), with one sub-path per check
// (/readyz/libvirt) as controller-runtime's probe server has; and the
// stream ports of the node's VMIs at /consoles (consolesHandler).
//
// One listener for all three, opened before the manager starts, so that a
// port taken is an error at once and port 0 is logged with the port it
// got (two agents on one machine each pick their own).
type httpServer struct {
	listener net.Listener
	healthz  map[string]healthz.Checker
	readyz   map[string]healthz.Checker
	consoles http.Handler // /consoles and below
	log      *slog.Logger
}

// Start serves until ctx ends.
func (s *httpServer) Start(ctx context.Context) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	for path, checks := range map[string]map[string]healthz.Checker{"/healthz": s.healthz, "/readyz": s.readyz} {
		h := http.StripPrefix(path, &healthz.Handler{Checks: checks})
		mux.Handle(path, h)
		mux.Handle(path+"/", h)
	}
	mux.Handle("/consoles", s.consoles)
	mux.Handle("/consoles/", s.consoles)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	s.log.Info("nodeagent: serving metrics and health", "address", s.listener.Addr().String())
	if err := srv.Serve(s.listener); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-done
	return nil
}

// NeedLeaderElection is false: every agent serves its own.
func (s *httpServer) NeedLeaderElection() bool { return false }
