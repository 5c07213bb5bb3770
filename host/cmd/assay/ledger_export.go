package main

import (
	"context"
	"errors"
	"io"
	"regexp"
	"time"

	"github.com/assay-audit/assay/host/ledger"
	"github.com/assay-audit/assay/host/store"
)

// exportOptions are `assay ledger export`'s checked flags.
type exportOptions struct {
	from, to string // UTC days, inclusive; "" leaves a side open
	format   string
}

var exportDay = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)

// parseExportOptions checks the flags before any store is opened: a
// malformed range is the operator's typo, not an empty export.
func parseExportOptions(from, to, format string, args []string) (exportOptions, error) {
	if len(args) != 0 {
		return exportOptions{}, errors.New("ledger export: takes no arguments (--from, --to and --format are flags)")
	}
	for _, d := range []struct{ name, value string }{{"--from", from}, {"--to", to}} {
		if d.value == "" {
			continue
		}
		if _, err := time.Parse(time.DateOnly, d.value); err != nil || !exportDay.MatchString(d.value) {
			return exportOptions{}, errors.New("ledger export: " + d.name + " is not a day: want YYYY-MM-DD")
		}
	}
	if from != "" && to != "" && from > to {
		return exportOptions{}, errors.New("ledger export: --from is after --to")
	}
	if format != "csv" && format != "json" {
		return exportOptions{}, errors.New("ledger export: --format is csv or json")
	}
	return exportOptions{from: from, to: to, format: format}, nil
}

// exportCmd is `assay ledger export`: every line in the range with its
// amendments applied, the books' raw material.
func exportCmd(ctx context.Context, st *store.Store, o exportOptions, stdout io.Writer) error {
	books, err := ledger.LoadBooks(ctx, st)
	if err != nil {
		return err
	}
	rows, err := ledger.Rows(books, o.from, o.to)
	if err != nil {
		return err
	}
	if o.format == "json" {
		return ledger.WriteJSON(stdout, rows)
	}
	return ledger.WriteCSV(stdout, rows)
}
