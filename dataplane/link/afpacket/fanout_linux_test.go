package afpacket

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/cicada-load/cicada/dataplane/lab/labtest"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// TestFanoutInKernelRoutesBySlice sends, from one veth end, TCP frames with
// ports in each of three slices plus ARP and ICMP frames to a fanout group
// of three Links on the other end, and checks that each Link received
// exactly its own frames: the program as the kernel runs it.
func TestFanoutInKernelRoutesBySlice(t *testing.T) {
	l := labtest.New(t)
	p, err := l.StackPair()
	if err != nil {
		t.Fatalf("StackPair = %v", err)
	}
	slices := [][2]uint16{{10000, 10499}, {10500, 10999}, {11000, 11499}}
	for _, side := range []Side{ClientSide, ServerSide} {
		var group []*Link
		var tx *Link
		if err := p.Cicada.Netns.Do(func() (err error) {
			group, err = OpenFanout(Config{Index: p.Cicada.Index, RetireTimeout: time.Millisecond},
				Fanout{Group: 7, Slices: slices, Side: side})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if err := p.Peer.Netns.Do(func() (err error) { tx, err = Open(Config{Index: p.Peer.Index}); return }); err != nil {
			t.Fatal(err)
		}
		// 100 frames per slice and 20 past every slice, 20 ARP, 20 ICMP.
		var sent []struct {
			f    []byte
			link int
		}
		add := func(f []byte, link int) {
			copy(f, p.Cicada.MAC)
			copy(f[6:], p.Peer.MAC)
			sent = append(sent, struct {
				f    []byte
				link int
			}{f, link})
		}
		for i := range 100 {
			for k, s := range slices {
				port := s[0] + uint16(i*5)
				if side == ClientSide {
					add(tcpFrame(80, port, 0, 0), k)
				} else {
					add(tcpFrame(port, 80, 0, 0), k)
				}
			}
		}
		for range 20 {
			add(tcpFrame(20000, 20000, 0, 0), 0)
			arp := make([]byte, 60)
			binary.BigEndian.PutUint16(arp[12:], 0x0806)
			add(arp, 0)
			icmp := tcpFrame(0, 0, 0, 0)
			icmp[14+9] = 1
			add(icmp, 0)
		}
		for i := 0; i < len(sent); {
			buf := tx.Buffer()
			if buf == nil {
				t.Fatal("no TX buffer")
			}
			tx.Transmit([][]byte{buf[:copy(buf, sent[i].f)]})
			i++
		}
		// Count what each Link received, by kind, until all arrived.
		got := make([]map[string]int, len(group))
		wantCount := make([]map[string]int, len(group))
		key := func(f []byte) string {
			switch binary.BigEndian.Uint16(f[12:]) {
			case 0x0806:
				return "arp"
			case 0x0800:
				if f[14+9] == 1 {
					return "icmp"
				}
				return "tcp " + string(rune(classify(&Fanout{Slices: slices, Side: side}, f)+'0'))
			}
			return "other"
		}
		for k := range group {
			got[k], wantCount[k] = map[string]int{}, map[string]int{}
		}
		for _, s := range sent {
			wantCount[s.link][key(s.f)]++
		}
		frames := make([][]byte, 64)
		total := 0
		err := testpeer.Poll(10*time.Second, time.Millisecond, func() bool {
			for k, g := range group {
				n := g.Receive(frames)
				for _, f := range frames[:n] {
					if len(f) >= 14 && bytes.Equal(f[6:12], p.Peer.MAC) {
						got[k][key(f)]++
						total++
					}
				}
			}
			return total >= len(sent)
		})
		if err != nil {
			t.Errorf("side %d: %d of %d frames arrived: %v", side, total, len(sent), err)
		}
		for k := range group {
			for kind, n := range wantCount[k] {
				if got[k][kind] != n {
					t.Errorf("side %d, link %d: %d %q frames; want %d (all: %v)", side, k, got[k][kind], kind, n, got[k])
				}
			}
			for kind, n := range got[k] {
				if wantCount[k][kind] == 0 {
					t.Errorf("side %d, link %d: %d %q frames; want none", side, k, n, kind)
				}
			}
		}
		for _, g := range append(group, tx) {
			_ = g.Close()
		}
	}
}

// TestFanoutIgnoresOwnFrames sends frames through the qdisc (where the
// interface's taps see outgoing frames) from a member of a fanout group:
// no member may receive them, as PACKET_IGNORE_OUTGOING promises for one
// socket, while the peer receives them all.
func TestFanoutIgnoresOwnFrames(t *testing.T) {
	l := labtest.New(t)
	p, err := l.StackPair()
	if err != nil {
		t.Fatalf("StackPair = %v", err)
	}
	var group []*Link
	var peer *Link
	if err := p.Cicada.Netns.Do(func() (err error) {
		group, err = OpenFanout(Config{Index: p.Cicada.Index, RetireTimeout: time.Millisecond, Qdisc: true},
			Fanout{Group: 9, Slices: [][2]uint16{{1, 30000}, {30001, 65535}}, Side: ClientSide})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.Peer.Netns.Do(func() (err error) {
		peer, err = Open(Config{Index: p.Peer.Index, RetireTimeout: time.Millisecond})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, g := range append(group, peer) {
			_ = g.Close()
		}
	}()
	const frames = 200
	for i := range frames {
		f := tcpFrame(80, uint16(i*300+1), 0, 0)
		copy(f, p.Peer.MAC)
		copy(f[6:], p.Cicada.MAC)
		g := group[i%2]
		buf := g.Buffer()
		if buf == nil {
			t.Fatal("no TX buffer")
		}
		g.Transmit([][]byte{buf[:copy(buf, f)]})
	}
	rx := make([][]byte, 64)
	got := 0
	if err := testpeer.Poll(10*time.Second, time.Millisecond, func() bool {
		n := peer.Receive(rx)
		for _, f := range rx[:n] {
			if bytes.Equal(f[6:12], p.Cicada.MAC) {
				got++
			}
		}
		return got >= frames
	}); err != nil {
		t.Fatalf("peer received %d of %d: %v", got, frames, err)
	}
	for k, g := range group {
		if n := g.Receive(rx); n != 0 || g.Stats().KernelPackets != 0 {
			t.Errorf("member %d received %d frames (kernel counted %d); want none of its group's own", k, n, g.Stats().KernelPackets)
		}
	}
}
