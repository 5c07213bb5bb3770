package sdk

import (
	"encoding/json"
	"testing"
)

func TestHasLoneSurrogate(t *testing.T) {
	for s, want := range map[string]bool{
		`"\ud83d\ude00"`: false, `"\udc00"`: true, `"\ud800"`: true, `"\ud800x"`: true, `"\ud800\u0041"`: true,
		`"\\udc00"`: false, `"plain"`: false, `"\u00e9"`: false, `"\ud800\udfff"`: false,
	} {
		if got := HasLoneSurrogate([]byte(s)); got != want {
			t.Errorf("%s: %v", s, got)
		}
	}
	if !JSONKind([]byte(" \n{}"), '{') || JSONKind([]byte(""), '{') || JSONKind([]byte("[]"), '{') {
		t.Error("JSONKind")
	}
}

func TestStringOfAgreesWithEncodingJSON(t *testing.T) {
	for _, raw := range []string{`"plain"`, `"esc\"aped\n"`, `"\u00e9t\u00e9"`, `" padded "`, ` "ws around" `, `"bad utf8 ` + "\xff" + `"`, `"é"`, `12`, `null`, `["x"]`, `""`} {
		got, ok := StringOf([]byte(raw))
		var want string
		wantOK := JSONKind([]byte(raw), '"') && json.Unmarshal([]byte(raw), &want) == nil
		if ok != wantOK || got != want {
			t.Errorf("%q: %q %v, want %q %v", raw, got, ok, want, wantOK)
		}
	}
}
