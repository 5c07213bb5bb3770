package store_test

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/store"
)

// BenchmarkLedgerAppend: one ledger line per op, from parallel writers.
func BenchmarkLedgerAppend(b *testing.B) {
	for _, kind := range storetest.Kinds {
		b.Run(kind, func(b *testing.B) {
			s := storetest.Open(b, kind)
			var n atomic.Int64
			at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					tx := "tx" + strconv.FormatInt(n.Add(1), 10)
					if _, err := s.AppendLine(ctx, store.Line{Service: "svc", CriteriaID: "svc/v1", CriteriaRevision: "1.0.0", At: at,
						PriceUSDCUnits: 50000, TxID: &tx, CAD: store.CAD{Pending: true}, FamilyFields: `{"byte_equal":true,"op":"compare"}`}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}

// BenchmarkAdmitFree: one admission per op (distinct callers, so each is
// admitted and writes), from parallel callers.
func BenchmarkAdmitFree(b *testing.B) {
	for _, kind := range storetest.Kinds {
		b.Run(kind, func(b *testing.B) {
			s := storetest.Open(b, kind)
			var n atomic.Int64
			now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					a, err := s.AdmitFree(ctx, "svc|svc/v1|1", fmt.Sprint("k", n.Add(1)), now, 100, 5*time.Second)
					if err != nil || !a.Admitted {
						b.Error("admission failed")
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "admits/s")
		})
	}
}
