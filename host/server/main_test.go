package server_test

import (
	"os"
	"testing"

	"github.com/assay-audit/assay/host/internal/testhost"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testhost.Cleanup()
	os.Exit(code)
}
