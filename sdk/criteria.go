package sdk

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// criteriaHead is the part of a criteria document every family shares.
type criteriaHead struct {
	CriteriaID       string   `json:"criteria_id"`
	CriteriaRevision string   `json:"criteria_revision"`
	Service          string   `json:"service"`
	Version          string   `json:"version"`
	Ops              []string `json:"ops"`
	Op               string   `json:"op"`
	Corpus           struct {
		ID     string `json:"id"`
		SHA256 string `json:"sha256"`
	} `json:"corpus"`
	Price struct {
		USDCUnits int64  `json:"usdc_units_per_call"`
		Label     string `json:"label"`
		Basis     string `json:"basis"`
	} `json:"price"`
	FreeTier struct {
		PerDay        int64 `json:"per_day"`
		MinIntervalMS int64 `json:"min_interval_ms"`
	} `json:"free_tier"`
	InputContract struct {
		Caps map[string]int64 `json:"caps"`
	} `json:"input_contract"`
}

// DescribeFromCriteria fills the parts of a FamilyDescription that a criteria
// document states (ids, ops, price, body cap, free tier, corpus pin) from the
// document itself, so a family cannot drift from what it serves. The family
// adds its ledger fields and tripwires.
func DescribeFromCriteria(doc []byte) (*pb.FamilyDescription, error) {
	var h criteriaHead
	if err := json.Unmarshal(doc, &h); err != nil {
		return nil, fmt.Errorf("criteria document: %w", err)
	}
	if len(h.Ops) == 0 && h.Op != "" {
		h.Ops = []string{h.Op} // some documents name their one op as "op"
	}
	body, ok := h.InputContract.Caps["body_bytes"]
	if !ok || body <= 0 {
		return nil, fmt.Errorf("criteria document: no input_contract.caps.body_bytes")
	}
	if h.CriteriaID == "" || h.Service == "" || len(h.Ops) == 0 {
		return nil, fmt.Errorf("criteria document: criteria_id, service and ops are required")
	}
	d := &pb.FamilyDescription{
		CriteriaId:       h.CriteriaID,
		CriteriaRevision: h.CriteriaRevision,
		Service:          h.Service,
		ServiceVersion:   h.Version,
		BodyBytes:        body,
		CriteriaDocument: doc,
		CorpusId:         h.Corpus.ID,
		CorpusSha256:     h.Corpus.SHA256,
		FreeTier:         &pb.FreeTier{PerDay: h.FreeTier.PerDay, MinIntervalMs: h.FreeTier.MinIntervalMS},
	}
	for _, op := range h.Ops {
		d.Ops = append(d.Ops, &pb.Op{
			Name:           op,
			PriceUsdcUnits: h.Price.USDCUnits,
			PriceLabel:     h.Price.Label,
			PriceBasis:     h.Price.Basis,
		})
	}
	return d, nil
}

// CorpusPin is a corpus file's pin, the value its criteria document states
// as corpus.sha256: the SHA-256 (hex) of the RFC 8785 form of the corpus
// object without its sha256 member. A host serves a family only when the
// corpus it ships has the pin its criteria state and passes whole.
func CorpusPin(corpus []byte) (string, error) {
	tree, err := DecodeJSON(corpus)
	if err != nil {
		return "", fmt.Errorf("corpus: %w", err)
	}
	obj, ok := tree.(map[string]any)
	if !ok {
		return "", errors.New("corpus is not a JSON object")
	}
	delete(obj, "sha256")
	canon, err := CanonicalJSON(obj)
	if err != nil {
		return "", fmt.Errorf("corpus: %w", err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}
