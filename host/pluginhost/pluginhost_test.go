package pluginhost_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
)

const testPkg = "host/internal/testfamily"

func TestChecksumMismatchRefusesToLoad(t *testing.T) {
	path := testhost.Plugin(t, testPkg)
	log := &testhost.Log{}
	wrong := strings.Repeat("0", 64)
	_, err := pluginhost.StartFamily(context.Background(), pluginhost.Spec{Name: "testfamily", Path: path, SHA256: wrong},
		pluginhost.Options{Logger: hclog.New(&hclog.LoggerOptions{Output: log})}, nil)
	if !errors.Is(err, pluginhost.ErrChecksum) {
		t.Fatalf("err = %v, want ErrChecksum", err)
	}
	if !strings.Contains(log.String(), "does not match its pinned SHA-256") {
		t.Errorf("the refusal is not logged: %s", log.String())
	}
	// a pin that is not a SHA-256 at all never starts anything either
	if _, err := pluginhost.StartFamily(context.Background(), pluginhost.Spec{Name: "x", Path: path, SHA256: "abc"}, pluginhost.Options{}, nil); err == nil {
		t.Error("a malformed pin was accepted")
	}
}

func TestPluginPathMayNotLeaveThePluginDir(t *testing.T) {
	path := testhost.Plugin(t, testPkg)
	sum, _ := pluginhost.PinOf(path)
	dir := t.TempDir()
	for _, p := range []string{"../" + filepath.Base(path), path} {
		_, err := pluginhost.StartFamily(context.Background(), pluginhost.Spec{Name: "x", Path: p, SHA256: sum}, pluginhost.Options{Dir: dir}, nil)
		if err == nil || !strings.Contains(err.Error(), "leaves the plugin dir") {
			t.Errorf("path %s: %v", p, err)
		}
	}
}

// TestKilledHostLeavesNoPlugin runs a host in a child process (this test
// binary, re-executed), SIGKILLs it, and checks its plugin died with it.
func TestKilledHostLeavesNoPlugin(t *testing.T) {
	if os.Getenv("ASSAY_CHILD_HOST") != "" {
		return // the child side runs in TestMain
	}
	path := testhost.Plugin(t, testPkg)
	sum, _ := pluginhost.PinOf(path)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "ASSAY_CHILD_HOST="+path, "ASSAY_CHILD_SUM="+sum)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child host: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		t.Fatalf("child host said %q", line)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("plugin %d not running before the kill: %v", pid, err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return // gone
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("plugin %d outlived its killed host", pid)
}

func TestMain(m *testing.M) {
	if path := os.Getenv("ASSAY_CHILD_HOST"); path != "" {
		f, err := pluginhost.StartFamily(context.Background(),
			pluginhost.Spec{Name: "child", Path: path, SHA256: os.Getenv("ASSAY_CHILD_SUM")}, pluginhost.Options{}, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(f.PID())
		select {} // wait to be killed
	}
	code := m.Run()
	testhost.Cleanup()
	os.Exit(code)
}
