package main

import (
	"context"
	"fmt"
	"io"

	"github.com/assay-audit/assay/host/config"
)

// reprove is `assay plugins reprove`: it forgets every launch proof the
// store holds, so each host proves its plugin set again at its next start
// (a proof is keyed by everything it depends on and never goes stale by
// itself; this is for an operator who wants the proof seen again, e.g.
// after a change to the machine the plugins run on).
func reprove(args []string, stdout io.Writer) error {
	fs := newFlags("plugins reprove")
	cfgPath := fs.String("config", "", "HCL config file (default: assay.hcl beside the binary, if present)")
	dataDir := fs.String("data-dir", "", "data directory (default ./var)")
	storeSpec := fs.String("store", "", "sqlite (default), sqlite:PATH, or a postgres:// URL")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath, func(c *config.Config) map[*string]*string {
		return map[*string]*string{dataDir: &c.DataDir, storeSpec: &c.Store}
	})
	if err != nil {
		return err
	}
	ctx := context.Background()
	st, err := openStore(ctx, cfg, false, stdout, stdout)
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := st.ForgetProofs(ctx)
	if err != nil {
		return fmt.Errorf("plugins reprove: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "forgot %d launch proofs: every host on the store proves its plugin set again at its next start (running hosts serve on)\n", n)
	return err
}
