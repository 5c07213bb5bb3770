package lines

import (
	"testing"

	"github.com/assay-audit/assay/sdk/adaptertest"
)

func TestConformance(t *testing.T) {
	adaptertest.Run(t, Adapter{}, adaptertest.Cases{
		Valid:   [][]byte{[]byte(`["hello","world"]`), []byte(`[]`), []byte(`["a",null]`)},
		Invalid: [][]byte{[]byte(`{"lines":["secret text here"]}`), []byte(`[1,2]`), []byte(`not json at all`)},
	})
}
