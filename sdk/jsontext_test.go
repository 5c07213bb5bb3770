package sdk

import "testing"

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
