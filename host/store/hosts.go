package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// HostStatus is one running host's own view, as it last wrote it: whether
// it is ready and how it stands on each service it loaded. A host rewrites
// its row every few seconds and deletes it when it stops; a row not
// rewritten for long is a host that died.
type HostStatus struct {
	HostID string
	// Label names the host for an operator: its machine name and listen
	// address.
	Label   string
	Started time.Time
	Seen    time.Time
	Ready   bool
	// EventsSeen is the newest service_events row this host has acted on:
	// a command that wrote row N knows the host has seen it once this is
	// at least N.
	EventsSeen int64
	Services   []HostService
	// Version is the build the host runs ("" when it wrote its row with
	// an Assay older than the column: during a rolling upgrade, the
	// previous version).
	Version string
}

// HostService is one service version as a host serves it.
type HostService struct {
	Service          string `json:"service"`
	CriteriaID       string `json:"criteria_id"`
	CriteriaRevision string `json:"criteria_revision"`
	// State is "serving", "starting" (its launch proof runs) or "stopped".
	State string `json:"state"`
	// Reason is why it is stopped (the operator's words, or the host's:
	// its launch self-test's result); never anything submitted.
	Reason string `json:"reason,omitempty"`
	// Local is a stop of this host alone (its launch self-test failed).
	Local bool `json:"local,omitempty"`
}

// PutHost writes a host's row.
func (s *Store) PutHost(ctx context.Context, h HostStatus) error {
	services, err := json.Marshal(h.Services)
	if err != nil {
		return fmt.Errorf("store: host status: %w", err)
	}
	// the version carries the start it belongs to: a host of an older
	// Assay restarted on the same data dir rewrites started_ns and not the
	// version, which then no longer matches and reads as unknown
	version := h.Version + "@" + strconv.FormatInt(h.Started.UnixNano(), 10)
	_, err = s.db.ExecContext(ctx, s.q(`INSERT INTO hosts (host_id, label, started_ns, seen_ns, ready, events_seen, services, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (host_id) DO UPDATE SET label = excluded.label, started_ns = excluded.started_ns, seen_ns = excluded.seen_ns,
			ready = excluded.ready, events_seen = excluded.events_seen, services = excluded.services, version = excluded.version`),
		h.HostID, h.Label, h.Started.UnixNano(), h.Seen.UnixNano(), h.Ready, h.EventsSeen, string(services), version)
	if err != nil {
		return fmt.Errorf("store: host status: %w", err)
	}
	return nil
}

// DropHost deletes a host's row (it stops), and every row last written
// before staleBefore (hosts that died long ago).
func (s *Store) DropHost(ctx context.Context, hostID string, staleBefore time.Time) error {
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM hosts WHERE host_id = ? OR seen_ns < ?`), hostID, staleBefore.UnixNano()); err != nil {
		return fmt.Errorf("store: host status: %w", err)
	}
	return nil
}

// Hosts lists every host's row, by label.
func (s *Store) Hosts(ctx context.Context) ([]HostStatus, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT host_id, label, started_ns, seen_ns, ready, events_seen, services, version FROM hosts ORDER BY label, host_id`)
	if err != nil {
		return nil, fmt.Errorf("store: hosts: %w", err)
	}
	defer rows.Close()
	var out []HostStatus
	for rows.Next() {
		var h HostStatus
		var started, seen int64
		var services string
		var version sql.NullString
		if err := rows.Scan(&h.HostID, &h.Label, &started, &seen, &h.Ready, &h.EventsSeen, &services, &version); err != nil {
			return nil, fmt.Errorf("store: hosts: %w", err)
		}
		if i := strings.LastIndex(version.String, "@"); i >= 0 && version.String[i+1:] == strconv.FormatInt(started, 10) {
			h.Version = version.String[:i]
		}
		h.Started, h.Seen = time.Unix(0, started).UTC(), time.Unix(0, seen).UTC()
		if err := json.Unmarshal([]byte(services), &h.Services); err != nil {
			return nil, fmt.Errorf("store: hosts: %w", err)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}
