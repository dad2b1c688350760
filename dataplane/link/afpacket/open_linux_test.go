package afpacket_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/link"
	"github.com/cicada-load/cicada/dataplane/link/afpacket"
)

func TestOpenRefusesBadConfig(t *testing.T) {
	for _, c := range []afpacket.Config{
		{},                          // no interface
		{Index: 1, FrameSize: 1000}, // not a power of two
		{Index: 1, BlockSize: 1000}, // not a multiple of the page size
		{Index: 1, Blocks: 1},       // one block
		{Index: 1, RetireTimeout: time.Microsecond},
		{Index: 1, TxFrames: -1},
	} {
		if l, err := afpacket.Open(c); !errors.Is(err, link.ErrConfig) {
			if l != nil {
				_ = l.Close()
			}
			t.Errorf("Open(%+v) = %v; want ErrConfig", c, err)
		}
	}
}
