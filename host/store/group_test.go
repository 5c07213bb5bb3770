package store_test

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/store"
)

// Concurrent lines commit together (SQLite's group commit), and one that
// fails (its transaction already has a line) fails alone: every other
// line of its group is committed, and each caller hears only of its own.
func TestGroupedWritesFailAlone(t *testing.T) {
	for _, kind := range storetest.Kinds {
		t.Run(kind, func(t *testing.T) {
			s := storetest.Open(t, kind)
			at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
			line := func(tx string) store.Line {
				return store.Line{Service: "svc", CriteriaID: "svc/v1", CriteriaRevision: "1.0.0", At: at, PriceUSDCUnits: 1,
					TxID: &tx, CAD: store.CAD{Pending: true}, FamilyFields: `{}`}
			}
			if _, err := s.AppendLine(ctx, line("taken")); err != nil {
				t.Fatal(err)
			}
			const n = 96
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					tx := "tx" + strconv.Itoa(i)
					if i%8 == 0 {
						tx = "taken"
					}
					_, errs[i] = s.AppendLine(ctx, line(tx))
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if dup := i%8 == 0; dup != errors.Is(err, store.ErrDuplicateTx) || !dup && err != nil {
					t.Errorf("line %d: %v", i, err)
				}
			}
			lines, err := s.Lines(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := 1 + n - n/8; len(lines) != want {
				t.Errorf("%d lines committed, want %d", len(lines), want)
			}
		})
	}
}

// A write after the store closed is refused, never left waiting.
func TestGroupedWriteAfterClose(t *testing.T) {
	s, err := store.OpenSQLite(ctx, t.TempDir()+"/a.db")
	if err != nil {
		t.Fatal(err)
	}
	tx := "tx"
	if _, err := s.AppendLine(ctx, store.Line{Service: "svc", CriteriaID: "svc/v1", CriteriaRevision: "1.0.0", At: time.Now(), TxID: &tx, FamilyFields: `{}`}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	tx = "tx2"
	if _, err := s.AppendLine(ctx, store.Line{Service: "svc", CriteriaID: "svc/v1", CriteriaRevision: "1.0.0", At: time.Now(), TxID: &tx, FamilyFields: `{}`}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}
