package testhost

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// FreePort is a loopback address no one listens on, for a host process
// the test starts. A port the kernel hands out for ":0" comes from the
// ephemeral range, and a host takes seconds (plugins, self-tests) before
// it binds: in that window another process's outbound connection (a
// PostgreSQL client of a neighbouring host) may take the same port, and the
// host's listen then fails. Ports below the ephemeral range are never given
// to outbound connections, so one picked there and found free stays free
// unless another test picks it too (one chance in thousands).
func FreePort(tb testing.TB) string {
	tb.Helper()
	low := ephemeralLow()
	const floor = 10000
	for range 200 {
		port := floor + rand.IntN(low-floor)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		l.Close()
		return addr
	}
	tb.Fatal(fmt.Sprintf("no free port found below %d", low))
	return ""
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default when the range cannot be read).
func ephemeralLow() int {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(raw)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
				return n
			}
		}
	}
	return 32768
}
