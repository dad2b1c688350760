package protocol

import (
	"reflect"
	"testing"
)

func TestAckCicadaKey(t *testing.T) {
	tests := []Ack{{Index: -1}, {Index: 4}, {Index: -1, Cicada: "1"}, {Index: 2, Cicada: "1"}}
	for _, a := range tests {
		in := Message{Type: TypeAck, Data: &a, NodeID: "w_1"}
		b, err := Encode(in)
		if err != nil {
			t.Fatalf("Encode(%+v) = %v", a, err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(Encode(%+v)) = %v", a, err)
		}
		if !reflect.DeepEqual(got, in) {
			t.Errorf("round trip of %+v = %+v", a, got.Data)
		}
	}
}
