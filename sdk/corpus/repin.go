package corpus

import (
	"bytes"
	"errors"

	"github.com/assay-audit/assay/sdk"
)

// ErrNoCriteriaPin is a criteria document with no corpus.sha256 string.
var ErrNoCriteriaPin = errors.New(`the criteria document has no corpus.sha256 string member (add "corpus": {"id": "...", "sha256": ""})`)

// Repin writes a corpus's pin into both places that state it: the corpus
// file's own sha256 member (added at the end when missing) and the
// criteria document's corpus.sha256. Only the 64 characters of each value
// change: the criteria document is served byte for byte, so its layout,
// whatever it is, stays as written.
func Repin(corpusFile, criteria []byte) (newCorpus, newCriteria []byte, pin string, err error) {
	if pin, err = Pin(corpusFile); err != nil {
		return nil, nil, "", err
	}
	start, end, found, err := memberString(corpusFile, []string{"sha256"})
	if err != nil {
		return nil, nil, "", err
	}
	if found {
		newCorpus = splice(corpusFile, start, end, pin)
	} else {
		last := bytes.LastIndexByte(corpusFile, '}')
		head := bytes.TrimRight(corpusFile[:last], " \t\r\n")
		sep := ","
		if bytes.HasSuffix(head, []byte("{")) {
			sep = ""
		}
		newCorpus = append(append(append([]byte{}, head...), sep+`"sha256":"`+pin+`"`...), corpusFile[len(head):]...)
	}
	start, end, found, err = memberString(criteria, []string{"corpus", "sha256"})
	if err != nil {
		return nil, nil, "", err
	}
	if !found {
		return nil, nil, "", ErrNoCriteriaPin
	}
	return newCorpus, splice(criteria, start, end, pin), pin, nil
}

func splice(doc []byte, start, end int, value string) []byte {
	out := make([]byte, 0, len(doc)-(end-start)+len(value)+2)
	out = append(out, doc[:start]...)
	out = append(out, '"')
	out = append(out, value...)
	out = append(out, '"')
	return append(out, doc[end:]...)
}

// memberString finds the string value at path (member names from the
// top-level object down) and returns its byte span, quotes included.
func memberString(doc []byte, path []string) (start, end int, found bool, err error) {
	d, err := sdk.Locate(doc)
	if err != nil {
		return 0, 0, false, errors.New("not a JSON document")
	}
	v := d.Root()
	for _, name := range path {
		if v, found = v.Get(name); !found {
			return 0, 0, false, nil
		}
	}
	if v.Kind != '"' {
		return 0, 0, false, nil
	}
	return v.Start, v.End, true, nil
}
