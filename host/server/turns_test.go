package server_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// While a paid request is in hand, pre-checks reach the family one per
// core at a time (the server takes admission.Priority's turns in
// place): a paid request arriving then finds only those ahead of it. The
// paid call and every pre-check wait in the test family for one file; the
// pre-checks each touch a file of their own first, so the test counts
// how many are in the family at once, then lets them all go.
func TestPreChecksTakeTurnsBesideAPaidRequest(t *testing.T) {
	h := startPaid(t, testPkg)
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	defer os.WriteFile(release, nil, 0o600) // never leave the family waiting
	payer, _ := newPayer(t)
	paid := make(chan error, 1)
	go func() {
		body, _ := json.Marshal(map[string]any{"wait_file": release})
		res, err := payer.Call(context.Background(), h.URL+"/test-family/measure", body)
		if err == nil && res.Status != 200 {
			t.Errorf("paid call: %d %s", res.Status, res.Body)
		}
		paid <- err
	}()
	fam := h.Families["test-family"]
	for i := 0; fam.Measuring() == 0; i++ {
		if i == 1000 {
			t.Fatal("the paid request never reached its measurement")
		}
		time.Sleep(5 * time.Millisecond)
	}

	const n = 6
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, _ := json.Marshal(map[string]any{"touch_file": filepath.Join(dir, "in-"+string(rune('a'+i))), "wait_file": release})
			post(t, h.URL+"/test-family/precheck", body)
		}()
	}
	in := func() int {
		m, _ := filepath.Glob(filepath.Join(dir, "in-*"))
		return len(m)
	}
	turns := min(runtime.GOMAXPROCS(0), n-1)
	for i := 0; in() < turns; i++ {
		if i == 1000 {
			t.Fatalf("%d pre-checks reached the family, want %d", in(), turns)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// past the yield bound (100 ms) every pre-check has its place: only
	// the turns may be in the family
	time.Sleep(400 * time.Millisecond)
	if got := in(); got != turns {
		t.Fatalf("%d pre-checks in the family at once beside a paid request, want %d (one per core)", got, turns)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := <-paid; err != nil {
		t.Fatal(err)
	}
	if got := in(); got != n {
		t.Errorf("%d pre-checks answered, want %d", got, n)
	}
}
