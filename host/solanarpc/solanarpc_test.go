package solanarpc

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// OnError hears the method of every failed call (an error answer, an
// unreachable node, nonsense), and nothing of the calls that worked; the
// errors say which kind.
func TestOnErrorNamesTheMethodOfEachFailedCall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case strings.Contains(string(b), `"getBalance"`):
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"context":{"slot":1},"value":42}}`)
		case strings.Contains(string(b), `"isBlockhashValid"`):
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid param"}}`)
		default:
			_, _ = io.WriteString(w, `<html>`)
		}
	}))
	defer srv.Close()
	var failed []string
	c := New(srv.URL)
	c.OnError = func(m string) { failed = append(failed, m) }
	ctx := context.Background()
	if n, err := c.Balance(ctx, "x"); err != nil || n != 42 {
		t.Fatalf("getBalance: %d %v", n, err)
	}
	var rpcErr *Error
	if _, err := c.BlockhashValid(ctx, "h"); !errors.As(err, &rpcErr) || rpcErr.Code != -32602 {
		t.Errorf("an error answer: %v", err)
	}
	if _, err := c.LatestBlockhash(ctx); !errors.Is(err, ErrTransport) {
		t.Errorf("nonsense: %v", err)
	}
	srv.Close()
	if _, err := c.Balance(ctx, "x"); !errors.Is(err, ErrTransport) {
		t.Errorf("unreachable: %v", err)
	}
	if got := strings.Join(failed, ","); got != "isBlockhashValid,getLatestBlockhash,getBalance" {
		t.Errorf("OnError heard %q", got)
	}
}

// A node's URL carries its API key: an unreachable node's error names the
// method and the network's complaint, never the URL.
func TestTransportErrorsKeepTheURLOut(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	c := New(srv.URL + "/?api-key=secret-key-4711")
	_, err := c.GenesisHash(context.Background())
	if !errors.Is(err, ErrTransport) {
		t.Fatalf("unreachable: %v", err)
	}
	if strings.Contains(err.Error(), "secret-key-4711") || strings.Contains(err.Error(), "api-key") {
		t.Errorf("the error carries the URL: %v", err)
	}
	if !strings.Contains(err.Error(), "getGenesisHash") {
		t.Errorf("the error does not name the method: %v", err)
	}
}
