package store

import (
	"context"
	"fmt"
	"strings"
)

// DumpText renders every row of every table as text (and each byte value
// raw): what the canary checks search for a submission's trace.
func (s *Store) DumpText(ctx context.Context) (string, error) {
	q := `SELECT name FROM sqlite_master WHERE type = 'table'`
	if s.d.name == "postgres" {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`
	}
	rows, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return "", fmt.Errorf("store: dump: %w", err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return "", fmt.Errorf("store: dump: %w", err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	var out strings.Builder
	for _, table := range tables {
		r, err := s.db.QueryContext(ctx, `SELECT * FROM `+quoteIdent(table))
		if err != nil {
			return "", fmt.Errorf("store: dump: %w", err)
		}
		cols, _ := r.Columns()
		for r.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := r.Scan(ptrs...); err != nil {
				r.Close()
				return "", fmt.Errorf("store: dump: %w", err)
			}
			fmt.Fprintf(&out, "%s %v\n", table, vals)
			for _, v := range vals {
				if b, ok := v.([]byte); ok {
					out.Write(b)
					out.WriteByte('\n')
				}
			}
		}
		r.Close()
	}
	return out.String(), nil
}

func quoteIdent(n string) string { return `"` + strings.ReplaceAll(n, `"`, `""`) + `"` }
