package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile("(?m)^#{1,6} (.+)$")
	slugDrop  = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// slug is the anchor GitHub gives a heading: lower case, punctuation
// dropped, spaces to hyphens.
func slug(h string) string {
	return strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), " ", "-")
}

// The README is the two-minute page and sends each reader to a page of
// their own: every relative link in it and in the docs (file and anchor)
// must lead somewhere, so a section moved between pages cannot leave a
// dead link behind.
func TestDocsLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	pages := []string{"README.md", "sdk/examples/adapter/README.md", "sdk/examples/family/README.md"}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		pages = append(pages, rel)
	}
	if len(pages) < 7 {
		t.Fatalf("pages: %v", pages)
	}
	headings := func(path string) map[string]bool {
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		out := map[string]bool{}
		inFence := false
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(line, "```") {
				inFence = !inFence
			}
			if m := mdHeading.FindStringSubmatch(line); m != nil && !inFence {
				out[slug(m[1])] = true
			}
		}
		return out
	}
	links := 0
	for _, page := range pages {
		raw, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(raw), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file, anchor, _ := strings.Cut(target, "#")
			path := filepath.Join(root, filepath.Dir(page), file)
			if file == "" {
				path = filepath.Join(root, page)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: no such file", page, target)
				continue
			}
			if anchor != "" && !headings(path)[anchor] {
				t.Errorf("%s: link %s: no heading with that anchor", page, target)
			}
		}
	}
	if links < 10 {
		t.Errorf("only %d relative links found: the check is not reading the pages", links)
	}
	readme, _ := os.ReadFile(filepath.Join(root, "README.md"))
	if n := strings.Count(string(readme), "\n"); n > 120 {
		t.Errorf("README.md is %d lines: it is the two-minute page; move detail to the audience's page under docs/", n)
	}
}
