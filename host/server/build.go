package server

// Build is the plugin binaries a service's answers come from, by their
// pinned SHA-256: the family's, and the adapter's of each format it
// accepts that this host loaded. A report carries it so that anyone
// holding the submission can run the very same binaries on it again
// (assay verify --submission) and see every fact come out the same.
type Build struct {
	Family   string
	Adapters map[string]string
}

// member is the build as an answer's "build" member.
func (b *Build) member() map[string]any {
	adapters := make(map[string]any, len(b.Adapters))
	for format, pin := range b.Adapters {
		adapters[format] = pin
	}
	return map[string]any{"family_sha256": b.Family, "adapters_sha256": adapters}
}
