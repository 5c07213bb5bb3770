package sdk

import (
	"testing"
	"unsafe"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

func TestNodesLocateValues(t *testing.T) {
	doc := []byte(` {"a": [1, "x\"y", {"b": null}], "s": "plain é", "a": true} `)
	n, err := ParseNodes(doc)
	if err != nil || n.Kind != '{' || len(n.Members) != 3 {
		t.Fatalf("%v %+v", err, n)
	}
	if a, _ := n.Get("a"); a.Kind != 't' { // the last duplicate wins
		t.Errorf("a: %c", a.Kind)
	}
	first := n.Members[0].Node
	if first.Kind != '[' || len(first.Elems) != 3 || first.Elems[0].Kind != '0' || string(first.Elems[1].Raw(doc)) != `"x\"y"` {
		t.Errorf("array %+v", first)
	}
	if _, ok := first.Elems[1].TextSpan(doc); ok {
		t.Error("an escaped string has no text span")
	}
	s, _ := n.Get("s")
	span, ok := s.TextSpan(doc)
	if !ok || string(doc[span.GetOffset():span.GetOffset()+span.GetLength()]) != "plain é" {
		t.Errorf("span %v", span)
	}
	if _, err := ParseNodes([]byte(`{"a":`)); err == nil {
		t.Error("invalid JSON located")
	}
}

func TestResolveTextSpansChecksBoundsAndUTF8(t *testing.T) {
	record := []byte("{\"t\":\"ok text\",\"q\":\"\xe9\xff\"}")
	block := func(off, n uint64) *pb.SessionRecord {
		return &pb.SessionRecord{Messages: []*pb.Message{{Blocks: []*pb.Block{{TextSpan: &pb.Span{Offset: off, Length: n}}}}}}
	}
	good := block(6, 7)
	if err := ResolveTextSpans(good, record); err != nil || good.GetMessages()[0].GetBlocks()[0].GetText() != "ok text" {
		t.Fatalf("%v %v", err, good)
	}
	if text := good.GetMessages()[0].GetBlocks()[0].GetText(); unsafe.StringData(text) != &record[6] {
		t.Error("the text was copied out of the record")
	}
	// 20,2 is the invalid UTF-8; the others lie outside the record
	for _, bad := range []*pb.SessionRecord{block(20, 2), block(20, 100), block(1<<62, 1), block(27, 1)} {
		if err := ResolveTextSpans(bad, record); err == nil {
			t.Errorf("span %v resolved", bad.GetMessages()[0].GetBlocks()[0].GetTextSpan())
		}
	}
}
