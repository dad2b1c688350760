package engine

import (
	"reflect"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/dataplane/stack"
)

// TestAddCountersEveryField sets field i to i+1 in one Counters and
// 100*(i+1) in another: every field must be summed, except ...Max fields,
// which keep the larger. A field of a kind addCounters does not handle
// fails the test, so stack.Counters cannot grow one unnoticed.
func TestAddCountersEveryField(t *testing.T) {
	var a, b stack.Counters
	va, vb := reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem()
	for i := range va.NumField() {
		switch va.Field(i).Kind() {
		case reflect.Uint64:
			va.Field(i).SetUint(uint64(i + 1))
			vb.Field(i).SetUint(uint64(100 * (i + 1)))
		case reflect.Int64:
			va.Field(i).SetInt(int64(i + 1))
			vb.Field(i).SetInt(int64(100 * (i + 1)))
		default:
			t.Fatalf("field %s of kind %v", va.Type().Field(i).Name, va.Field(i).Kind())
		}
	}
	var sum stack.Counters
	addCounters(&sum, &a)
	addCounters(&sum, &b)
	vs := reflect.ValueOf(sum)
	for i := range vs.NumField() {
		name := vs.Type().Field(i).Name
		want := int64(101 * (i + 1))
		if strings.HasSuffix(name, "Max") {
			want = int64(100 * (i + 1))
		}
		var got int64
		if f := vs.Field(i); f.Kind() == reflect.Uint64 {
			got = int64(f.Uint())
		} else {
			got = f.Int()
		}
		if got != want {
			t.Errorf("%s = %d; want %d", name, got, want)
		}
	}
}

func TestMACBitsRoundTrip(t *testing.T) {
	for _, m := range [][6]byte{{}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, {2, 0, 0, 0, 1, 0x0b}} {
		v := macBits(m)
		if v >= hopValid || bitsMAC(v|hopValid) != m {
			t.Errorf("%x: bits %#x, back %x", m, v, bitsMAC(v|hopValid))
		}
	}
}
