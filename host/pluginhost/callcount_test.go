package pluginhost

import "testing"

// When a process dies, the calls failing with it read how many others it
// held at its end: the first to read fixes the figure before any of them
// has left, so each sees the same count, and a lone call sees none.
func TestCallCountTellsALoneRecordFromMates(t *testing.T) {
	var c callCount
	done1, done2, done3 := c.enter(), c.enter(), c.enter()
	done3() // answered before the end: not one of its mates
	if got := c.mates(); got != 1 {
		t.Fatalf("the first failing call sees %d mates, want 1", got)
	}
	done1()
	if got := c.mates(); got != 1 {
		t.Fatalf("the second failing call sees %d mates, want the same 1", got)
	}
	done2()
	var alone callCount
	leave := alone.enter()
	if got := alone.mates(); got != 0 {
		t.Fatalf("a lone call sees %d mates", got)
	}
	leave()
	var none *callCount // a family's connection counts nothing
	none.enter()()
	if none.mates() != 0 {
		t.Fatal("a nil count has mates")
	}
}
