// Package lifecycle is the settlement-evidence/v1 engine (service
// lifecycle-analytics): it validates a seller's challenge-issuance log under
// the criteria's log-shape contract and malformed rule, and counts its
// lifecycle census at an evaluation instant. Plain Go: no gRPC, no I/O.
package lifecycle

import (
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Instant is a UTC instant exact to the nanosecond over years 0000–9999
// (time.Duration cannot span that range, so differences are computed here).
type Instant struct {
	Sec  int64 // seconds since the Unix epoch
	Nsec int64 // 0..999,999,999
}

// Compare orders two instants.
func (a Instant) Compare(b Instant) int {
	switch {
	case a.Sec < b.Sec:
		return -1
	case a.Sec > b.Sec:
		return 1
	case a.Nsec < b.Nsec:
		return -1
	case a.Nsec > b.Nsec:
		return 1
	}
	return 0
}

// Sub is a − b in nanoseconds, exactly.
func (a Instant) Sub(b Instant) *big.Int {
	d := big.NewInt(a.Sec - b.Sec)
	d.Mul(d, big.NewInt(1e9))
	return d.Add(d, big.NewInt(a.Nsec-b.Nsec))
}

// String prints the instant (ANNEX A-2): whole seconds, then the
// nanoseconds without trailing zeros when there are any.
func (a Instant) String() string {
	s := time.Unix(a.Sec, 0).UTC().Format("2006-01-02T15:04:05")
	if a.Nsec != 0 {
		s += "." + strings.TrimRight(strconv.FormatInt(1e9+a.Nsec, 10)[1:], "0")
	}
	return s + "Z"
}

// FromTime converts a time.
func FromTime(t time.Time) Instant {
	return Instant{Sec: t.Unix(), Nsec: int64(t.Nanosecond())}
}

var stamp = regexp.MustCompile(`^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?(?:(Z)|([+-])([0-9]{2}):([0-9]{2}))$`)

// ParseInstant parses the one timestamp form the ANNEX accepts.
func ParseInstant(s string) (Instant, bool) {
	m := stamp.FindStringSubmatch(s)
	if m == nil {
		return Instant{}, false
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	year, month, day, hour, min, sec := n(1), n(2), n(3), n(4), n(5), n(6)
	if month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || min > 59 || sec > 59 {
		return Instant{}, false
	}
	var offset int64
	if m[8] == "" {
		oh, om := n(10), n(11)
		if oh > 23 || om > 59 {
			return Instant{}, false
		}
		offset = int64(oh*3600 + om*60)
		if m[9] == "-" {
			offset = -offset
		}
	}
	var nsec int64
	if f := m[7]; f != "" {
		nsec, _ = strconv.ParseInt(f+strings.Repeat("0", 9-len(f)), 10, 64)
	}
	unix := time.Date(year, time.Month(month), day, hour, min, sec, 0, time.UTC).Unix() - offset
	if unix < firstSecond || unix > lastSecond {
		// an offset carried the instant outside 0000–9999: no printed
		// instant could name it (ANNEX A-2)
		return Instant{}, false
	}
	return Instant{Sec: unix, Nsec: nsec}, true
}

// firstSecond and lastSecond bound the instants a timestamp may name.
var (
	firstSecond = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	lastSecond  = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
)

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
