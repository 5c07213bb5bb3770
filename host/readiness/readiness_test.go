package readiness_test

import (
	"context"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/readiness"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
)

// A service an operator stopped for the whole fleet does not make a host
// unready (it does as it should); one stopped on this host alone does;
// before the store's first ping the host does not claim a store it has
// not reached.
func TestReadyOnlyWhenItServesAllItShould(t *testing.T) {
	st := storetest.Open(t, "sqlite")
	board := servicestate.New(st, nil, nil)
	keys, err := signing.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := servicestate.Key{Service: "a", CriteriaID: "a/v1", CriteriaRevision: "1"}
	b := servicestate.Key{Service: "b", CriteriaID: "b/v1", CriteriaRevision: "1"}
	h := readiness.New(readiness.Config{Store: st, Board: board, Keys: keys, Services: []servicestate.Key{a, b}, HostID: "h", Label: "h"})
	if r := h.Report(); r.Ready || r.Store.OK || r.Store.Reason != "not checked yet" {
		t.Errorf("before the first ping: %+v", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for i := 0; !h.Report().Store.OK && i < 100; i++ {
		time.Sleep(50 * time.Millisecond) // the first ping runs as Run starts
	}
	if r := h.Report(); !r.Ready || len(r.Services) != 2 {
		t.Fatalf("all served: %+v", r)
	}
	if err := board.Stop(context.Background(), a, "criteria audit", "operator"); err != nil {
		t.Fatal(err)
	}
	if r := h.Report(); !r.Ready || r.Services[0].State != "stopped" || !r.Services[0].Ready || r.Services[0].Reason != "criteria audit" {
		t.Errorf("a stopped by the operator: %+v", r)
	}
	board.StopLocal(b, "corpus failed at launch: 2 of 9 cases failed", "launch self-test")
	if r := h.Report(); r.Ready || r.Services[1].Ready || !r.Services[1].Local {
		t.Errorf("b stopped on this host alone: %+v", r)
	}
}
