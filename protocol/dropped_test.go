package protocol

import (
	"errors"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestStatsReportDroppedRoundTrip(t *testing.T) {
	for _, dropped := range []int64{0, 1, 1 << 40} {
		m := Message{Type: TypeStats, NodeID: "w", Data: &StatsReport{UserCount: 3, Dropped: dropped}}
		b, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		var raw []any
		if err := msgpack.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		_, has := raw[1].(map[string]any)[KeyCicadaDropped]
		if has != (dropped != 0) {
			t.Errorf("dropped %d: key %s present = %v (only a non-zero count is sent)", dropped, KeyCicadaDropped, has)
		}
		for _, dec := range []func([]byte) (Message, error){Decode, DecodePooled} {
			got, err := dec(b)
			if err != nil {
				t.Fatal(err)
			}
			r := got.Data.(*StatsReport)
			if r.Dropped != dropped || r.UserCount != 3 {
				t.Errorf("dropped %d: decoded %d (user_count %d)", dropped, r.Dropped, r.UserCount)
			}
			r.Release()
		}
	}
}

func TestStatsReportDroppedRefused(t *testing.T) {
	b, err := Encode(Message{Type: TypeStats, NodeID: "w", Data: &StatsReport{UserCount: -1}})
	if err != nil {
		t.Fatal(err)
	}
	var raw []any
	if err := msgpack.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []any{int64(-1), "many", 1.5e300} {
		raw[1].(map[string]any)[KeyCicadaDropped] = bad
		enc, err := msgpack.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(enc); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s = %v: Decode error %v, want ErrMalformed", KeyCicadaDropped, bad, err)
		}
	}
}
