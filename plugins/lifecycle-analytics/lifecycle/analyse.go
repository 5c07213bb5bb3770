package lifecycle

import (
	"math/big"
	"slices"
	"strings"

	"github.com/assay-audit/assay/sdk"
)

// NOT-COMPUTABLE reasons (ANNEX A-1), exact strings.
const (
	ReasonUsage = "no valid line carries the used_at field"
	ReasonRail  = "no valid line carries the rail field"
)

// Buckets are the criteria's window buckets, in order.
var Buckets = []string{"le_60", "61_300", "301_900", "901_3600", "gt_3600"}

// bucketEdges are the upper bounds (inclusive) of the first four buckets.
var bucketEdges = []int64{60, 300, 900, 3600}

// Census is a set of lifecycle counts; the three usage counts are absent
// (Computable false) when the log does not record usage.
type Census struct {
	Issued, Used, ExpiredUnused, Pending int
}

// Group is one rail's census.
type Group struct {
	// FirstLine names the group (ANNEX A-8): the log position of the first
	// valid line carrying its rail value, which is never printed.
	FirstLine int
	Census
}

// Analysis is every figure the report prints.
type Analysis struct {
	T               Instant
	FromAsOf        bool
	Submitted       int
	Valid           int
	Malformed       int
	UsageComputable bool
	Census          Census
	RailComputable  bool
	Groups          []Group
	RailAbsent      int
	Buckets         [5]int
	Min, Max        *big.Int // nanoseconds
	Sum             *big.Int
}

// Analyse classifies every valid line at T (ANNEX ).
func Analyse(l *Log, t Instant, fromAsOf bool) *Analysis {
	a := &Analysis{T: t, FromAsOf: fromAsOf, Submitted: l.Submitted, Valid: len(l.Valid), Malformed: l.Malformed(), Sum: new(big.Int)}
	groups := map[string]*Group{}
	for _, line := range l.Valid {
		a.UsageComputable = a.UsageComputable || line.HasUsedAt
		a.RailComputable = a.RailComputable || line.HasRail
		classify(&a.Census, line, t)
		if line.HasRail {
			g := groups[line.Rail]
			if g == nil {
				g = &Group{FirstLine: line.Index}
				groups[line.Rail] = g
			}
			classify(&g.Census, line, t)
		} else {
			a.RailAbsent++
		}
		w := line.Expires.Sub(line.Issued)
		a.Buckets[bucketOf(w)]++
		a.Sum.Add(a.Sum, w)
		if a.Min == nil || w.Cmp(a.Min) < 0 {
			a.Min = w
		}
		if a.Max == nil || w.Cmp(a.Max) > 0 {
			a.Max = w
		}
	}
	for _, g := range groups {
		a.Groups = append(a.Groups, *g)
	}
	slices.SortFunc(a.Groups, func(x, y Group) int { return x.FirstLine - y.FirstLine })
	return a
}

func classify(c *Census, l Line, t Instant) {
	c.Issued++
	switch {
	case l.Used:
		c.Used++
	case l.Expires.Compare(t) <= 0:
		c.ExpiredUnused++
	default:
		c.Pending++
	}
}

func bucketOf(ns *big.Int) int {
	for i, edge := range bucketEdges {
		if ns.Cmp(new(big.Int).Mul(big.NewInt(edge), big.NewInt(1e9))) <= 0 {
			return i
		}
	}
	return len(bucketEdges)
}

// Seconds prints a nanosecond count as exact decimal seconds (ANNEX A-6).
func Seconds(ns *big.Int) string {
	q, r := new(big.Int).QuoRem(ns, big.NewInt(1e9), new(big.Int))
	if r.Sign() == 0 {
		return q.String()
	}
	frac := strings.TrimRight(new(big.Int).Add(r, big.NewInt(1e9)).String()[1:], "0")
	return q.String() + "." + frac
}

// Mean prints the mean window in seconds, rounded half up to 3 decimals.
func (a *Analysis) Mean() string {
	return sdk.Ratio(a.Sum, new(big.Int).Mul(big.NewInt(int64(a.Valid)), big.NewInt(1e9)), 3)
}
