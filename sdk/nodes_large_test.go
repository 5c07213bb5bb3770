package sdk

import (
	"strconv"
	"strings"
	"testing"
)

// Containers of more children than a slab takes keep the scratch stack's
// array; what is parsed after them must not write into it.
func TestLargeContainersKeepTheirChildren(t *testing.T) {
	ints := func(n, from int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = strconv.Itoa(from + i)
		}
		return strings.Join(parts, ",")
	}
	const n = 3 * handOver
	doc := []byte(`[[` + ints(n, 0) + `],[7,8],{"a":[` + ints(n, n) + `],"b":{"c":[` + ints(handOver, 5*n) + `]},"d":3},[` + ints(n, 9*n) + `]]`)
	root, err := ParseNodes(doc)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, arr Node, count, from int) {
		t.Helper()
		if arr.Kind != '[' || len(arr.Elems) != count {
			t.Fatalf("%s: kind %q, %d elements, want %d", what, arr.Kind, len(arr.Elems), count)
		}
		for i, e := range arr.Elems {
			if got := string(doc[e.Start:e.End]); e.Kind != '0' || got != strconv.Itoa(from+i) {
				t.Fatalf("%s[%d] = %q (kind %q), want %d", what, i, got, e.Kind, from+i)
			}
		}
	}
	if len(root.Elems) != 4 {
		t.Fatalf("%d top elements", len(root.Elems))
	}
	check("first", root.Elems[0], n, 0)
	check("second", root.Elems[1], 2, 7)
	obj := root.Elems[2]
	a, _ := obj.Get("a")
	check("a", a, n, n)
	b, _ := obj.Get("b")
	c, _ := b.Get("c")
	check("c", c, handOver, 5*n)
	if d, _ := obj.Get("d"); string(doc[d.Start:d.End]) != "3" || len(obj.Members) != 3 {
		t.Fatalf("object members %d, d %q", len(obj.Members), doc[d.Start:d.End])
	}
	check("last", root.Elems[3], n, 9*n)
}

// BenchmarkParseNodesFlatArray: a 5 MiB record whose unused member is an
// array of 2.6 million zeros.
func BenchmarkParseNodesFlatArray(b *testing.B) {
	doc := []byte(`{"messages":[{"role":"user","content":"hi"}],"x":[0` + strings.Repeat(",0", 2_600_000) + `]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseNodes(doc); err != nil {
			b.Fatal(err)
		}
	}
}
