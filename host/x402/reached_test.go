package x402

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Whether a payment may have reached the host is what happened to every
// request that carried it, not what the last one met: a paid request the
// host read and died on, then a re-send whose connection was refused, is
// Reached (the host may hold the payment); one whose every connection was
// refused is not.
func TestReachedIsAnyAttemptThatGotPastItsConnection(t *testing.T) {
	payer := &Payer{MarkerRetries: 1}
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// read the paid request, then die: no answer, and nothing listens
		// for the re-send
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		srv.Listener.Close()
	}))
	defer srv.Close()
	res, err := payer.Resend(context.Background(), srv.URL+"/s/op", []byte(`{}`), "eyJ4IjoxfQ")
	if err == nil || !NothingSent(err) || res == nil || !res.Reached || res.Status != 0 {
		t.Fatalf("a paid request read, then a refused re-send: %+v %v", res, err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	res, err = payer.Resend(context.Background(), closed+"/s/op", []byte(`{}`), "eyJ4IjoxfQ")
	if err == nil || !NothingSent(err) || res == nil || res.Reached {
		t.Fatalf("every connection refused: %+v %v", res, err)
	}
}
