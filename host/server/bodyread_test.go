package server_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
)

// serveWithReadTimeout serves h's handler behind a server with a short
// read timeout, as `assay serve` does with its own.
func serveWithReadTimeout(t *testing.T, h *testhost.Host, d time.Duration) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h.Server, ReadTimeout: d, WriteTimeout: 10 * d}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

// rawPost sends the headers of a POST declaring 1,000 bytes, then what
// send writes, and returns the status line and body of the answer.
func rawPost(t *testing.T, addr string, send func(net.Conn)) (string, []byte) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "POST /test-family/measure HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
	send(c)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.Status, body
}

// A body that is still arriving when the read timeout passes gets a signed
// 408, and a body whose sender stops short a signed 400: never a 200 with
// nothing in it.
func TestABodyThatDoesNotArriveIsNeverA200(t *testing.T) {
	h := testhost.Start(t, testhost.Options{}, testPkg)
	addr := serveWithReadTimeout(t, h, 300*time.Millisecond)

	status, body := rawPost(t, addr, func(c net.Conn) {
		for i := 0; i < 20; i++ { // a byte every 100 ms: past the timeout
			if _, err := c.Write([]byte("{")); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	var a struct {
		Kind  string                `json:"kind"`
		Error struct{ Code string } `json:"error"`
	}
	if err := json.Unmarshal(body, &a); err != nil || !strings.HasPrefix(status, "408") || a.Error.Code != "body_read_timeout" || a.Kind != "refusal" {
		t.Errorf("slow body: %s %s", status, body)
	}
	verified(t, h, reply{status: 408, raw: body})

	status, body = rawPost(t, addr, func(c net.Conn) {
		_, _ = io.WriteString(c, `{"a":1}`)
		_ = c.(*net.TCPConn).CloseWrite() // 7 of the declared 1,000 bytes, then the end
	})
	a.Error.Code = ""
	if err := json.Unmarshal(body, &a); err != nil || !strings.HasPrefix(status, "400") || a.Error.Code != "body_incomplete" {
		t.Errorf("short body: %s %s", status, body)
	}
}
