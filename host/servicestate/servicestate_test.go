package servicestate_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/store"
)

var key = servicestate.Key{Service: "svc", CriteriaID: "svc/v1", CriteriaRevision: "1.0.0"}

// twoHosts opens two stores on one database, as two hosts have.
func twoHosts(tb testing.TB, kind string) (*store.Store, *store.Store) {
	spec, dir := storetest.Spec(tb, kind)
	a, err := store.Open(context.Background(), spec, dir)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := store.Open(context.Background(), spec, dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// A stop written through one host reaches another host's running board
// (on SQLite and PostgreSQL); a local stop stays on its host and outranks
// the store's resume; a reason is printable text of bounded length.
func TestAStopReachesEveryHostOnTheStore(t *testing.T) {
	for _, kind := range storetest.Kinds {
		t.Run(kind, func(t *testing.T) {
			sa, sb := twoHosts(t, kind)
			a, b := servicestate.New(sa, nil, nil), servicestate.New(sb, nil, nil)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); b.Run(ctx, 50*time.Millisecond) }()
			defer func() { cancel(); <-done }()

			if err := a.Stop(context.Background(), key, "operator's reason", "operator:a"); err != nil {
				t.Fatal(err)
			}
			if !a.State(key).Stopped {
				t.Fatal("the stopping host does not apply its own stop at once")
			}
			waitFor(t, func() bool { return b.State(key).Stopped })
			if st := b.State(key); st.Reason != "operator's reason" || st.Actor != "operator:a" || st.Local {
				t.Errorf("the other host's state %+v", st)
			}
			if _, err := sa.AppendServiceEvent(context.Background(), store.ServiceEvent{At: time.Now(), Service: key.Service, CriteriaID: key.CriteriaID,
				CriteriaRevision: key.CriteriaRevision, Action: store.ServiceResume, Reason: "corpus passed", Actor: "operator:a"}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool { return !b.State(key).Stopped })
			// a later revision of the same service is another version
			if b.State(servicestate.Key{Service: "svc", CriteriaID: "svc/v1", CriteriaRevision: "1.0.1"}).Stopped {
				t.Error("a stop reached another criteria version")
			}
			b.StopLocal(key, "corpus failed at launch: 1 of 2", "launch self-test")
			if err := b.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := a.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			if st := b.State(key); !st.Stopped || !st.Local || a.State(key).Stopped {
				t.Errorf("a local stop: here %+v, there %+v", st, a.State(key))
			}
		})
	}
	for _, bad := range []string{"", "line\nbreak", string(make([]byte, 301))} {
		if servicestate.CheckReason(bad) == nil {
			t.Errorf("reason %q accepted", bad)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("the other host never saw the change")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BenchmarkStopPropagation measures how long a stop written by one host
// takes to reach another host polling the store every second, as `assay
// serve` does (the bound the fleet is promised: at most one poll and one
// query).
func BenchmarkStopPropagation(b *testing.B) {
	for _, kind := range storetest.Kinds {
		b.Run(kind, func(b *testing.B) {
			sa, sb := twoHosts(b, kind)
			a, other := servicestate.New(sa, nil, nil), servicestate.New(sb, nil, nil)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); other.Run(ctx, time.Second) }()
			defer func() { cancel(); <-done }()
			var worst time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if err := a.Stop(context.Background(), key, "bench", "bench"); err != nil {
					b.Fatal(err)
				}
				for !other.State(key).Stopped {
					time.Sleep(time.Millisecond)
				}
				worst = max(worst, time.Since(start))
				b.StopTimer()
				_, _ = sa.AppendServiceEvent(context.Background(), store.ServiceEvent{At: time.Now(), Service: key.Service, CriteriaID: key.CriteriaID,
					CriteriaRevision: key.CriteriaRevision, Action: store.ServiceResume, Reason: "bench", Actor: "bench"})
				for other.State(key).Stopped {
					time.Sleep(time.Millisecond)
				}
				// a stop lands at any moment of the other host's poll
				time.Sleep(time.Duration(rand.Int64N(int64(time.Second))))
				b.StartTimer()
			}
			b.ReportMetric(float64(worst.Milliseconds()), "worst-ms")
		})
	}
}
