package pluginhost_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/sharedbody"
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
	if path := os.Getenv(echoEnv); path != "" {
		echo(path)
		return
	}
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

// A body the host read into a shared file reaches a family that takes
// bodies inline as bytes, and one that reads shared files as the file;
// either way the file stays the caller's after the session closes.
func TestStartSharedReachesEitherKindOfFamily(t *testing.T) {
	path := testhost.Plugin(t, testPkg)
	sum, _ := pluginhost.PinOf(path)
	const body = `{"pad":"a body read straight into a shared file"}`
	for _, inline := range []bool{true, false} {
		f, err := pluginhost.StartFamily(context.Background(), pluginhost.Spec{Name: "testfamily", Path: path, SHA256: sum},
			pluginhost.Options{InlineBodies: inline}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		linux := runtime.GOOS == "linux"
		if f.TakesSharedBodies() != (linux && !inline) {
			t.Errorf("inline %v: takes shared bodies %v", inline, f.TakesSharedBodies())
		}
		shared, err := sharedbody.New([]byte(body))
		if !linux {
			if !errors.Is(err, sharedbody.ErrUnsupported) {
				t.Errorf("no memfd here, yet New said %v", err)
			}
			continue // the host reads bodies as bytes here: Start, tested everywhere
		}
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.Open(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.StartShared(&pb.Start{Route: pb.Start_PRECHECK, NowUnixNano: time.Now().UnixNano()}, shared)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(v.GetBody(), &got); err != nil || v.GetOutcome() != pb.Outcome_ACCEPTED || got["body_bytes"] != float64(len(body)) {
			t.Errorf("inline %v: %v %s", inline, v.GetOutcome(), v.GetBody())
		}
		s.Close()
		if sent, want := f.SharedBodiesSent(), map[bool]int64{true: 0, false: 1}[inline]; sent != want {
			t.Errorf("inline %v: %d bodies shared, want %d", inline, sent, want)
		}
		if _, err := shared.ReadAt(make([]byte, 1), 0); err != nil {
			t.Errorf("inline %v: the caller's file was closed by the session: %v", inline, err)
		}
		shared.Close()
	}
}

// A family whose description no router can take (an op named precheck,
// the free route) is refused at load with the first problem named, before
// a route is registered: it would otherwise end the host as it routes.
func TestADescriptionAHostCannotRouteIsRefused(t *testing.T) {
	path := testhost.Plugin(t, testPkg)
	sum, _ := pluginhost.PinOf(path)
	_, err := pluginhost.StartFamily(context.Background(), pluginhost.Spec{Name: "testfamily", Path: path, SHA256: sum},
		pluginhost.Options{Env: []string{"TESTFAMILY_OP_PRECHECK=1"}}, nil)
	if !errors.Is(err, pluginhost.ErrDescription) || !strings.Contains(err.Error(), "op 1 is named precheck, the free route every service has") {
		t.Fatalf("err = %v, want ErrDescription naming the op", err)
	}
}

// With Proceed sent behind Start (nothing between validation and
// measurement), an accepted request is measured in one round trip and a
// refused one still answers its refusal, however soon the family ended
// the stream after it (requests side by side, so some refusals end their
// stream before the Proceed is sent).
func TestProceedWithStart(t *testing.T) {
	f := startTestFamily(t)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				body, want := []byte(`{"refuse":true}`), pb.Outcome_REFUSED
				if (i+w)%3 == 0 {
					body, want = []byte(`{"pad":"x"}`), pb.Outcome_ACCEPTED
				}
				s, err := f.Open(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				s.ProceedWithStart()
				v, err := s.Start(&pb.Start{Route: pb.Start_OP, Op: "measure", Body: body, NowUnixNano: time.Now().UnixNano()})
				if err != nil || v.GetOutcome() != want {
					t.Errorf("request %d: %v %v, want %v", i, v.GetOutcome(), err, want)
					s.Close()
					return
				}
				if want == pb.Outcome_ACCEPTED {
					if r, err := s.Proceed(); err != nil || len(r.GetBody()) == 0 {
						t.Errorf("request %d: report %v", i, err)
					}
				}
				s.Close()
			}
		}()
	}
	wg.Wait()
}

// startTestFamily starts the test family as a host does, stopped when
// the test ends.
func startTestFamily(t testing.TB) *pluginhost.Family {
	t.Helper()
	path := testhost.Plugin(t, testPkg)
	sum, _ := pluginhost.PinOf(path)
	f, err := pluginhost.StartFamily(context.Background(), pluginhost.Spec{Name: "testfamily", Path: path, SHA256: sum}, pluginhost.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// ProceedIf runs its decision once the Start is sent, before the
// validation is read: true sends the Proceed behind it (the family begins
// measuring before Proceed is called, and the report comes without
// another send), false leaves the family waiting, measuring nothing,
// until Proceed is called.
func TestProceedIf(t *testing.T) {
	f := startTestFamily(t)
	for _, proceed := range []bool{true, false} {
		began := filepath.Join(t.TempDir(), "measuring")
		body, _ := json.Marshal(map[string]any{"touch_file": began})
		s, err := f.Open(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		s.ProceedIf(func() bool { calls++; return proceed })
		v, err := s.Start(&pb.Start{Route: pb.Start_OP, Op: "measure", Body: body, NowUnixNano: time.Now().UnixNano()})
		if err != nil || v.GetOutcome() != pb.Outcome_ACCEPTED || calls != 1 {
			t.Fatalf("proceed %v: %v %v, decided %d times", proceed, v.GetOutcome(), err, calls)
		}
		// true: the measurement begins with no Proceed called (a bound,
		// met at once); false: none begins in the time it would have
		// taken, and the file appears only once Proceed is called
		seen := fileAppears(began, 5*time.Second)
		if !proceed {
			seen = fileAppears(began, 300*time.Millisecond)
		}
		if seen != proceed {
			t.Fatalf("proceed %v: the family measured before Proceed: %v", proceed, seen)
		}
		if r, err := s.Proceed(); err != nil || len(r.GetBody()) == 0 {
			t.Errorf("proceed %v: report %v", proceed, err)
		}
		if _, err := os.Stat(began); err != nil {
			t.Errorf("proceed %v: no measurement after Proceed: %v", proceed, err)
		}
		s.Close()
	}
}

// fileAppears is true once path exists, false when within passed first.
func fileAppears(path string, within time.Duration) bool {
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
	}
	_, err := os.Stat(path)
	return err == nil
}
