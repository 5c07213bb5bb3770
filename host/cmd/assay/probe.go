package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// probe is `assay probe URL`: a container healthcheck for an image with no
// shell and no curl. It succeeds on a 200 only and says why not in one
// line of static text (the status, or no answer): the body is never read
// out, so a healthcheck log cannot carry what an endpoint answered.
func probe(args []string, stderr io.Writer) error {
	fs := newFlags("probe")
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer; a host that takes longer counts as down")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("probe: name one URL, e.g. http://127.0.0.1:8402/readyz")
	}
	target := fs.Arg(0)
	if !strings.HasPrefix(target, "http://") && !strings.HasPrefix(target, "https://") {
		return errors.New("probe: the URL must be http:// or https://")
	}
	if *timeout <= 0 {
		return errors.New("probe: --timeout must be positive")
	}
	client := &http.Client{
		Timeout: *timeout,
		// the host itself is probed: no proxy from the environment in
		// between, and a redirect is an answer other than ready
		Transport:     &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Get(target)
	if err != nil {
		// err names the URL and the dial's detail: the reason stays static
		return fmt.Errorf("probe: no answer within %s", *timeout)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe: status %d", resp.StatusCode)
	}
	return nil
}
