package testhost

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// PeakRSS is a process's high-water resident set (VmHWM) in bytes; pid
// "self" is the caller.
func PeakRSS(pid string) int64 { return procStatus(pid, "VmHWM:") }

// RSS is a process's resident set now (VmRSS) in bytes.
func RSS(pid string) int64 { return procStatus(pid, "VmRSS:") }

// procStatus reads one kB figure of /proc/<pid>/status, in bytes; 0 when
// the process or the line is absent.
func procStatus(pid, key string) int64 {
	raw, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, key) {
			kb, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// OpenSharedBodies counts the shared-body files (sdk/sharedbody) a process
// holds open now; pid "self" is the caller. After every request has
// answered it must be 0 everywhere: no body outlives its request.
func OpenSharedBodies(pid string) int {
	dir := "/proc/" + pid + "/fd"
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(dir + "/" + e.Name()); err == nil && strings.HasPrefix(target, "/memfd:assay-body") {
			n++
		}
	}
	return n
}

// SharedBodiesSettled is OpenSharedBodies once the process's requests have
// finished: the host flushes an answer to its client before the handler's
// deferred cleanup closes the body, so a client can read the answer an
// instant before the file is closed. It waits up to 5 s for 0.
func SharedBodiesSettled(pid string) int {
	n := OpenSharedBodies(pid)
	for deadline := time.Now().Add(5 * time.Second); n != 0 && time.Now().Before(deadline); n = OpenSharedBodies(pid) {
		time.Sleep(10 * time.Millisecond)
	}
	return n
}

// PIDs lists the host's plugin processes now running, families then
// adapters.
func (h *Host) PIDs() []string {
	var out []string
	for _, f := range h.Families {
		out = append(out, strconv.Itoa(f.PID()))
	}
	for _, a := range h.Adapters {
		out = append(out, strconv.Itoa(a.PID()))
	}
	return out
}
