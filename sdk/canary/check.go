package canary

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/assay-audit/assay/sdk/corpus"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/selfcheck"
)

// Send answers one request as a host would (in process, or over HTTP):
// the status and the answer's bytes.
type Send func(method, path string, body []byte) (status int, answer []byte)

// Result is what planting found in a family's answers.
type Result struct {
	// Sent counts the planted requests.
	Sent int
	// Leaks name each answer that prints a planted string outside the
	// members the family's criteria let it print as submitted (its
	// tripwires' exempt_members): the case, how it was planted, and the
	// member's path (a planted member name shown as <caller>). Custody:
	// a family with a leak must not be served.
	Leaks []string
	// Withheld name each accepted case a caller can make unissuable:
	// with a forbidden phrase in its strings, or a forbidden or
	// count-typed name among its members, the answer is withheld by the
	// self-check (500 self_check_failed). The family lets caller-chosen
	// strings reach members the self-check judges; a warning.
	Withheld []string
}

// Check plants the canary in every corpus case of a family (in every
// string and as an extra member of every object, then as extra members
// only, which most families still accept) and searches every answer; and
// for every case the corpus expects to be accepted (200), sends it again
// with strings that trip the family's own tripwires, to see whether a
// caller can have its answers withheld.
func (c *Canary) Check(cs *corpus.Corpus, tw *pb.Tripwires, send Send) Result {
	var r Result
	exempt := tw.GetExemptMembers()
	for _, tc := range cs.Cases {
		body, err := tc.Body(nil)
		if err != nil {
			continue
		}
		for _, v := range []struct {
			how  string
			body []byte
		}{{"planted everywhere", c.Plant(body)}, {"planted as members", c.PlantMembers(body)}} {
			status, answer := send(tc.Method(), tc.Request.Path, v.body)
			r.Sent++
			for _, p := range c.Paths(answer, exempt) {
				r.Leaks = append(r.Leaks, fmt.Sprintf("%s (%s): the answer (%d) prints a submitted string at %s", tc.Name, v.how, status, p))
			}
		}
		if tc.Expect.Status != http.StatusOK {
			continue
		}
		for _, p := range TripProbes(tw, body) {
			status, answer := send(tc.Method(), tc.Request.Path, p.Body)
			r.Sent++
			if rule, ok := withheld(status, answer); ok {
				r.Withheld = append(r.Withheld, fmt.Sprintf("%s (%s): the answer is withheld%s", tc.Name, p.Name, rule))
			}
		}
	}
	return r
}

func withheld(status int, answer []byte) (rule string, ok bool) {
	var a struct {
		Error struct{ Code, Rule string } `json:"error"`
	}
	if status != http.StatusInternalServerError || json.Unmarshal(answer, &a) != nil || a.Error.Code != "self_check_failed" {
		return "", false
	}
	if a.Error.Rule != "" {
		return " (rule " + a.Error.Rule + ")", true
	}
	return "", true
}

// Paths are the JSON paths in answer (outside the exempt members, at any
// depth) of each string value holding the canary in any form, and of
// each member whose name holds it (the name shown as <caller>). An answer
// that is not JSON is one path, "$", when it holds the canary at all.
func (c *Canary) Paths(answer []byte, exempt []string) []string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(answer))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		if len(c.Find(answer)) > 0 {
			return []string{"$"}
		}
		return nil
	}
	skip := map[string]bool{}
	for _, n := range exempt {
		skip[n] = true
	}
	var out []string
	c.walk(v, "$", skip, &out)
	return out
}

func (c *Canary) walk(v any, path string, skip map[string]bool, out *[]string) {
	switch t := v.(type) {
	case string:
		if len(c.Find([]byte(t))) > 0 {
			*out = append(*out, path)
		}
	case []any:
		for i, x := range t {
			c.walk(x, fmt.Sprintf("%s[%d]", path, i), skip, out)
		}
	case map[string]any:
		names := make([]string, 0, len(t))
		for k := range t {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if skip[k] {
				continue
			}
			if strings.Contains(k, c.Value) || len(c.Find([]byte(k))) > 0 {
				*out = append(*out, path+"."+strings.ReplaceAll(k, c.Value, "<caller>")+" (its name)")
				continue
			}
			c.walk(t[k], path+"."+k, skip, out)
		}
	}
}

// Probe is a request body changed to trip one of a family's tripwires
// if what a caller sends reaches a member the self-check judges.
type Probe struct {
	Name string
	Body []byte
}

// TripProbes are body's probes for tw: a forbidden phrase added to every
// string (base64 strings left whole, so bytes fields stay valid), a
// forbidden member name, and a count-typed name holding a string, each
// added to every object. A list the family leaves empty gives no probe;
// a body that is not JSON gives none.
func TripProbes(tw *pb.Tripwires, body []byte) []Probe {
	var out []Probe
	// the family's own phrase first, else a baseline verdict word: every
	// family has one the host forbids
	if ps := selfcheck.Phrases(tw); len(ps) > 0 && ps[0] != "" {
		out = appendProbe(out, "a forbidden phrase in every string", body, func(v any) any { return withPhrase(v, ps[0]) })
	}
	if ms := tw.GetForbiddenMembers(); len(ms) > 0 && ms[0] != "" {
		out = appendProbe(out, "a forbidden member name in every object", body, func(v any) any { return withMember(v, ms[0], "x") })
	}
	name := ""
	if ns := tw.GetCountNames(); len(ns) > 0 {
		name = ns[0]
	} else if ss := tw.GetCountSuffixes(); len(ss) > 0 {
		name = "probe" + ss[0]
	}
	if name != "" {
		out = appendProbe(out, "a count-named member holding a string in every object", body, func(v any) any { return withMember(v, name, "x") })
	}
	return out
}

func appendProbe(out []Probe, name string, body []byte, change func(any) any) []Probe {
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return out
	}
	b, err := json.Marshal(change(v))
	if err != nil {
		return out
	}
	return append(out, Probe{Name: name, Body: b})
}

func withPhrase(v any, phrase string) any {
	switch t := v.(type) {
	case string:
		if _, err := base64.StdEncoding.Strict().DecodeString(t); err == nil && len(t) >= 4 {
			return t
		}
		return t + " " + phrase
	case []any:
		for i := range t {
			t[i] = withPhrase(t[i], phrase)
		}
	case map[string]any:
		for k, x := range t {
			t[k] = withPhrase(x, phrase)
		}
	}
	return v
}

func withMember(v any, name string, value any) any {
	switch t := v.(type) {
	case []any:
		for i := range t {
			t[i] = withMember(t[i], name, value)
		}
	case map[string]any:
		for k, x := range t {
			t[k] = withMember(x, name, value)
		}
		if _, taken := t[name]; !taken {
			t[name] = value
		}
	}
	return v
}
