// Package yardstick is the measure the host's small-request cost is read
// against (issue #29): one Go process doing, per request, what the host
// does for the small stream-divergence compare with payments off — read
// the body, run the engine in process, sign the answer's RFC 8785 bytes
// with Ed25519, insert one ledger row into SQLite (WAL, synchronous
// NORMAL), answer. No plugin process, no free tier, no self-check, no
// admission: what remains between it and the host is the host's own cost.
package yardstick

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the host's SQLite driver

	"github.com/assay-audit/assay/plugins/stream-divergence/divergence"
	"github.com/assay-audit/assay/sdk"
)

// Server answers POST /stream-divergence/compare.
type Server struct {
	family *divergence.Family
	key    ed25519.PrivateKey
	db     *sql.DB
	insert *sql.Stmt
}

// New opens the yardstick's database in dir.
func New(dir string) (*Server, error) {
	f, err := divergence.New()
	if err != nil {
		return nil, err
	}
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "yardstick.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS ledger (id INTEGER PRIMARY KEY, service TEXT, ts_ns INTEGER, day TEXT, price INTEGER, fields TEXT)`); err != nil {
		return nil, err
	}
	ins, err := db.Prepare(`INSERT INTO ledger (service, ts_ns, day, price, fields) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return nil, err
	}
	return &Server{family: f, key: key, db: db, insert: ins}, nil
}

// Close closes the database.
func (s *Server) Close() error { return s.db.Close() }

// ServeHTTP does the steps.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 262144+1))
	if err != nil || len(body) > 262144 {
		http.Error(w, "body", http.StatusBadRequest)
		return
	}
	now := time.Now()
	c := s.family.Check(r.Context(), sdk.Request{Route: sdk.Op, Op: "compare", Body: body, Now: now})
	if c.Outcome() != sdk.Accepted || !c.Measures() {
		http.Error(w, "refused", http.StatusBadRequest)
		return
	}
	rep, err := c.Measure(r.Context(), time.Now)
	if err != nil {
		http.Error(w, "measure", http.StatusInternalServerError)
		return
	}
	members, err := sdk.CanonicalJSON(rep.Body)
	if err != nil {
		http.Error(w, "render", http.StatusInternalServerError)
		return
	}
	tree, err := sdk.DecodeJSON(members)
	if err != nil {
		http.Error(w, "render", http.StatusInternalServerError)
		return
	}
	answer := tree.(map[string]any)
	answer["service"], answer["op"], answer["kind"] = "stream-divergence", "compare", "report"
	answer["issued_at"] = sdk.Instant(rep.CheckEnd)
	payload, err := sdk.CanonicalJSON(answer)
	if err != nil {
		http.Error(w, "render", http.StatusInternalServerError)
		return
	}
	answer["signature"] = map[string]any{"alg": sdk.SignatureAlg, "key_id": "yardstick",
		"value": base64.RawURLEncoding.EncodeToString(ed25519.Sign(s.key, payload))}
	signed, err := sdk.CanonicalJSON(answer)
	if err != nil {
		http.Error(w, "render", http.StatusInternalServerError)
		return
	}
	fields, err := sdk.CanonicalJSON(rep.Ledger)
	if err != nil {
		http.Error(w, "render", http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.insert.ExecContext(ctx, "stream-divergence", now.UnixNano(), now.UTC().Format("2006-01-02"), 0, string(fields)); err != nil {
		http.Error(w, fmt.Sprintf("ledger %d", len(fields)), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(signed)
}
