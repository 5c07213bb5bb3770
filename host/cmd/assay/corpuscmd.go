package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/assay-audit/assay/sdk/corpus"
)

// corpusCmd is `assay corpus pin|check`: a family author's pins, from
// any folder, on any layout. pin writes the corpus's pin into the corpus
// file's sha256 member and the criteria document's corpus.sha256 (only
// those 64 characters change: the criteria document is served byte for
// byte); check says whether both hold, naming the one that does not.
func corpusCmd(sub string, args []string, stdout io.Writer) error {
	fs := newFlags("corpus " + sub)
	corpusPath := fs.String("corpus", "corpus.json", "the corpus file")
	criteriaPath := fs.String("criteria", "criteria.json", "the criteria document that pins it")
	if err := parse(fs, args); err != nil {
		return err
	}
	corpusFile, err := os.ReadFile(*corpusPath)
	if err != nil {
		return fmt.Errorf("corpus %s: %w", sub, err)
	}
	criteria, err := os.ReadFile(*criteriaPath)
	if err != nil {
		return fmt.Errorf("corpus %s: %w", sub, err)
	}
	switch sub {
	case "check":
		var doc struct {
			Corpus struct {
				SHA256 *string `json:"sha256"`
			} `json:"corpus"`
		}
		if err := json.Unmarshal(criteria, &doc); err != nil {
			return fmt.Errorf("corpus check: %s: %w", *criteriaPath, err)
		}
		if doc.Corpus.SHA256 == nil {
			return fmt.Errorf("corpus check: %s: %w", *criteriaPath, corpus.ErrNoCriteriaPin)
		}
		c, err := corpus.Parse(corpusFile, *doc.Corpus.SHA256)
		if err != nil {
			return fmt.Errorf("corpus check: %w", err)
		}
		_, err = fmt.Fprintf(stdout, "pins hold: %s (%d cases; %s, %s)\n", c.SHA256, len(c.Cases), *corpusPath, *criteriaPath)
		return err
	case "pin":
		newCorpus, newCriteria, pin, err := corpus.Repin(corpusFile, criteria)
		if err != nil {
			return fmt.Errorf("corpus pin: %w", err)
		}
		if err := writeBeside(*corpusPath, newCorpus); err != nil {
			return fmt.Errorf("corpus pin: %w", err)
		}
		if err := writeBeside(*criteriaPath, newCriteria); err != nil {
			return fmt.Errorf("corpus pin: %w", err)
		}
		_, err = fmt.Fprintf(stdout, "pinned: %s (written into %s and %s)\n", pin, *corpusPath, *criteriaPath)
		return err
	}
	return errors.New("corpus: pin or check\n" + usage)
}

// writeBeside replaces path with data through a file in the same folder
// renamed over it, so a reader never sees half a document.
func writeBeside(path string, data []byte) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
