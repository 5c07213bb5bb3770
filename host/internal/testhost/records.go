package testhost

import (
	"os"
	"strconv"
	"strings"
)

// PeakRSS is a process's high-water resident set (VmHWM) in bytes; pid
// "self" is the caller.
func PeakRSS(pid string) int64 {
	raw, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			kb, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
