package version

import "testing"

// A stamped version wins over the build info: -buildvcs=false and a build
// context without .git leave the build info with nothing but "(devel)".
func TestStampedWins(t *testing.T) {
	t.Cleanup(func() { stamped = "" })
	stamped = "v9.9.9-3-gabcdef0-dirty"
	if got := String(); got != "v9.9.9-3-gabcdef0-dirty" {
		t.Fatalf("String() = %q, want the stamped version", got)
	}
}

// Unstamped, String is what the build info says, never empty: a host
// writes it to the store, and status shows "" as a host older than the
// column.
func TestUnstampedFallsBackToBuildInfo(t *testing.T) {
	if stamped != "" {
		t.Skip("this test binary was linked with a stamp")
	}
	got := String()
	if got == "" {
		t.Fatal("String() is empty without a stamp")
	}
	if got != fromBuildInfo() {
		t.Fatalf("String() = %q, want the build info's %q", got, fromBuildInfo())
	}
}
