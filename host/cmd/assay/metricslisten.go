package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/assay-audit/assay/host/metrics"
	"github.com/assay-audit/assay/host/server"
	"github.com/hashicorp/go-hclog"
)

// metricsListener serves the metrics on an address of their own (the
// operator's network, a scraper's), so the public listener never shows
// load, payment claims or stopped services. The returned stop closes it
// and waits for its goroutine; an address that cannot be bound refuses
// the start, as the public one does.
func metricsListener(addr string, met *metrics.Metrics, services []server.Service, log hclog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listen: %w", err)
	}
	names := make([]string, 0, len(services))
	for _, s := range services {
		names = append(names, s.Desc.GetService())
	}
	srv := &http.Server{Handler: met.Mux(names), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "error", err)
		}
	}()
	log.Info("metrics listening", "url", "http://"+ln.Addr().String()+"/metrics")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
