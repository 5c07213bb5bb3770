package main

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// memGroup is a memory cgroup (v1) that `assay serve` is started in, so
// that the kernel counts the host and every plugin together: what they
// hold at the same instant (not the sum of each one's own peak, which
// come at different moments), their anonymous memory and the shared body
// file, and not the binaries' code pages (charged to whoever first read
// the files, here the build). It is the machine's own answer to "how much
// memory does a request take".
type memGroup struct{ dir string }

// newMemGroup makes a child of this process's memory cgroup, or returns
// nil where there is none to write to (cgroup v2 only, or read-only): the
// benchmark then reports the per-process figures alone.
func newMemGroup(b *testing.B) *memGroup {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	defer f.Close()
	var parent string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		// hierarchy-id:controllers:path
		if parts := strings.SplitN(sc.Text(), ":", 3); len(parts) == 3 && parts[1] == "memory" {
			parent = "/sys/fs/cgroup/memory" + parts[2]
		}
	}
	if parent == "" {
		return nil
	}
	dir := parent + "/assay-bench-" + strconv.Itoa(os.Getpid())
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil
	}
	// after the benchmark's own defer has stopped the host; its plugins
	// die with it, a moment later, and a group with members cannot go
	b.Cleanup(func() {
		for i := 0; os.Remove(dir) != nil && i < 100; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	})
	return &memGroup{dir: dir}
}

// start runs cmd inside the group: a shell moves itself in, then execs
// the command, so every process it starts is born inside.
func (g *memGroup) start(cmd *exec.Cmd) error {
	if g != nil {
		cmd.Args = append([]string{"/bin/sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, g.dir, cmd.Path}, cmd.Args[1:]...)
		cmd.Path = "/bin/sh"
	}
	return cmd.Start()
}

func (g *memGroup) read(name string) int64 {
	raw, err := os.ReadFile(g.dir + "/" + name)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	return n
}

// usage is what the group holds now, in bytes.
func (g *memGroup) usage() int64 { return g.read("memory.usage_in_bytes") }

// peak is the most the group has held since resetPeak.
func (g *memGroup) peak() int64 { return g.read("memory.max_usage_in_bytes") }

// resetPeak starts a new high-water mark from the usage now.
func (g *memGroup) resetPeak() {
	_ = os.WriteFile(g.dir+"/memory.max_usage_in_bytes", []byte("0"), 0o644)
}
