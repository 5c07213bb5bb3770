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

func TestTopLevelAgreesWithEncodingJSON(t *testing.T) {
	for _, body := range []string{
		`{}`, ` { "a" : 1 , "b":[1,{"c":"}]\"\\"}], "d" : "x\\\\" ,"e":null,"f":true,"g":-1.5e3 } `,
		`{"dup":1,"dup":{"x":[]}}`, `{"esc\u0061ped":"v","":""}`, `{"s":"a\"b","t":"\\\\\\\""}`,
	} {
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		members, ok := TopLevel([]byte(body))
		if !ok {
			t.Fatalf("%s: not an object", body)
		}
		got := map[string]json.RawMessage{}
		for _, m := range members {
			got[m.Name] = json.RawMessage(body[m.Start:m.End])
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d members, want %d", body, len(got), len(want))
		}
		for k, v := range want {
			if string(got[k]) != string(v) {
				t.Errorf("%s: member %q = %s, want %s", body, k, got[k], v)
			}
		}
	}
	for _, body := range []string{`[1]`, `"x"`, `3`} {
		if _, ok := TopLevel([]byte(body)); ok {
			t.Errorf("%s taken for an object", body)
		}
	}
}

func FuzzTopLevel(f *testing.F) {
	f.Add([]byte(`{"a":{"b":["c",1]},"d":"e\"f"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var want map[string]json.RawMessage
		if !json.Valid(body) || json.Unmarshal(body, &want) != nil || want == nil {
			return
		}
		members, ok := TopLevel(body)
		if !ok {
			t.Fatalf("an object not taken for one")
		}
		got := map[string]string{}
		for _, m := range members {
			got[m.Name] = string(body[m.Start:m.End])
		}
		for k, v := range want {
			if got[k] != string(v) {
				t.Fatalf("member %q = %s, want %s", k, got[k], v)
			}
		}
	})
}
