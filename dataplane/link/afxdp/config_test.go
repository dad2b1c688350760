package afxdp

import (
	"errors"
	"testing"

	"github.com/cicada-load/cicada/dataplane/link"
)

func TestCheckCores(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want error
	}{{1, nil}, {2, ErrOneCore}, {64, ErrOneCore}, {0, link.ErrConfig}, {-1, link.ErrConfig}} {
		err := CheckCores(tc.n)
		if (tc.want == nil) != (err == nil) || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("CheckCores(%d) = %v; want %v", tc.n, err, tc.want)
		}
	}
}
