package pluginhost_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// echoEnv makes the test binary BenchmarkProcessHop's peer: it dials the
// unix socket the variable names and sends back whatever it reads.
const echoEnv = "ASSAY_ECHO_SOCKET"

func echo(path string) {
	c, err := net.Dial("unix", path)
	if err != nil {
		os.Exit(2)
	}
	buf := make([]byte, 512)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		if _, err := c.Write(buf[:n]); err != nil {
			return
		}
	}
}

// BenchmarkProcessHop is what one request's crossing to a family process
// costs on this machine, beside the floor under it: a 32-byte ping-pong
// with a child process over a unix socket (go-plugin's transport), and
// one whole session with the test family as the server runs it for a
// small paid call (the stream opened, the Start with the Proceed right
// behind it, the validation and the report read, the stream closed),
// where the family's own work is a few microseconds.
func BenchmarkProcessHop(b *testing.B) {
	b.Run("unix-socket", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "echo.sock")
		l, err := net.Listen("unix", path)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), echoEnv+"="+path)
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		_ = l.(*net.UnixListener).SetDeadline(time.Now().Add(10 * time.Second))
		c, err := l.Accept()
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		msg, back := make([]byte, 32), make([]byte, 32)
		for b.Loop() {
			if _, err := c.Write(msg); err != nil {
				b.Fatal(err)
			}
			for got := 0; got < len(back); {
				n, err := c.Read(back[got:])
				if err != nil {
					b.Fatal(err)
				}
				got += n
			}
		}
	})
	b.Run("session", func(b *testing.B) {
		f := startTestFamily(b)
		start := &pb.Start{Route: pb.Start_OP, Op: "measure", Body: []byte(`{"pad":"x"}`), NowUnixNano: time.Now().UnixNano()}
		for b.Loop() {
			s, err := f.Open(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			s.ProceedWithStart()
			if v, err := s.Start(start); err != nil || v.GetOutcome() != pb.Outcome_ACCEPTED {
				b.Fatalf("start: %v %v", v.GetOutcome(), err)
			}
			if _, err := s.Proceed(); err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
}
