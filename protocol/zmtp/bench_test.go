package zmtp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

var benchSizes = []int{64, 1 << 10, 100 << 10}

func sizeName(n int) string {
	if n >= 1<<10 {
		return fmt.Sprintf("%dKB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

func BenchmarkAppendMessage(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(sizeName(size), func(b *testing.B) {
			frames := [][]byte{make([]byte, size)}
			buf := make([]byte, 0, size+16)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				buf = appendMessage(buf[:0], frames)
			}
		})
	}
}

// cycleReader returns data over and over.
type cycleReader struct {
	data []byte
	off  int
}

func (c *cycleReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m := copy(p[n:], c.data[c.off:])
		n += m
		c.off = (c.off + m) % len(c.data)
	}
	return n, nil
}

func BenchmarkReadMessage(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(sizeName(size), func(b *testing.B) {
			enc := appendMessage(nil, [][]byte{make([]byte, size)})
			fr := frameReader{br: bufio.NewReaderSize(&cycleReader{data: enc}, readBufferSize), max: DefaultMaxFrameSize}
			noCmd := func(name, data []byte) error { return nil }
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := fr.readMessage(noCmd); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDealerToRouter measures messages/s from a Dealer to a Router
// over loopback TCP, end to end.
func BenchmarkDealerToRouter(b *testing.B) {
	for _, size := range []int{1 << 10, 100 << 10} {
		b.Run(sizeName(size), func(b *testing.B) {
			r := newRouter(b, Options{Linger: -1})
			d := newDealer(b, endpointOf(r), "bench", Options{Linger: -1})
			payload := make([]byte, size)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			done := make(chan error, 1)
			n := b.N
			go func() {
				for range n {
					if _, _, err := r.Recv(context.Background()); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			b.ResetTimer()
			for range n {
				for {
					err := d.Send(payload)
					if err == nil {
						break
					}
					if !errors.Is(err, ErrQueueFull) {
						b.Fatal(err)
					}
					time.Sleep(50 * time.Microsecond)
				}
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		})
	}
}
