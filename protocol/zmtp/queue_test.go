package zmtp

import (
	"errors"
	"testing"
	"time"
)

func TestSendQueueBounds(t *testing.T) {
	tests := []struct {
		name       string
		limit      int
		limitBytes int64
		sizes      []int
		wantErrAt  int // index of the first push that fails, -1 for none
	}{
		{"by count", 3, 1 << 20, []int{1, 1, 1, 1}, 3},
		{"by bytes", 100, 10, []int{4, 4, 4}, 2},
		{"big message into empty queue", 100, 10, []int{50, 1}, 1},
		{"exactly at byte limit", 100, 8, []int{4, 4, 1}, 2},
		{"fits", 10, 100, []int{10, 10}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newSendQueue(tt.limit, tt.limitBytes)
			got := -1
			for i, n := range tt.sizes {
				if err := q.push(make([]byte, n)); err != nil {
					if !errors.Is(err, ErrQueueFull) {
						t.Fatalf("push #%d = %v", i, err)
					}
					got = i
					break
				}
			}
			if got != tt.wantErrAt {
				t.Fatalf("first failing push = %d; want %d", got, tt.wantErrAt)
			}
		})
	}
}

func TestSendQueueTakeBatches(t *testing.T) {
	q := newSendQueue(10000, 1<<40)
	for range 3000 {
		q.push(make([]byte, 1000))
	}
	q.push(make([]byte, 3<<20))
	q.push(make([]byte, 10))
	var sizes []int
	for {
		b := q.take(nil)
		if len(b) == 0 {
			break
		}
		total := 0
		for _, m := range b {
			total += len(m)
		}
		if len(b) > maxBatchMsgs || (len(b) > 1 && total > maxBatchBytes) {
			t.Fatalf("batch of %d messages, %d bytes", len(b), total)
		}
		sizes = append(sizes, len(b))
		q.written()
	}
	// 3000 x 1000 B in batches of at most 1 MiB (1024 messages: 1,024,000 B
	// fit), then the 3 MiB message alone, then the last one.
	want := []int{1024, 1024, 952, 1, 1}
	if len(sizes) != len(want) {
		t.Fatalf("batches = %v; want %v", sizes, want)
	}
	for i := range want {
		if sizes[i] != want[i] {
			t.Fatalf("batches = %v; want %v", sizes, want)
		}
	}
	if q.mu.bytes != 0 {
		t.Fatalf("bytes after draining = %d", q.mu.bytes)
	}
}

func TestSendQueueWaitIdleAndClose(t *testing.T) {
	q := newSendQueue(10, 1<<20)
	if !q.waitIdle(time.Millisecond, nil) {
		t.Fatal("waitIdle on an empty queue = false")
	}
	q.push([]byte("x"))
	if q.waitIdle(time.Millisecond, nil) {
		t.Fatal("waitIdle with a queued message = true")
	}
	done := make(chan bool)
	go func() { done <- q.waitIdle(waitLong, nil) }()
	b := q.take(nil)
	if len(b) != 1 {
		t.Fatalf("take = %d messages", len(b))
	}
	q.written()
	if !<-done {
		t.Fatal("waitIdle did not see the queue drain")
	}
	q.push([]byte("y"))
	q.close(ErrClosed)
	if err := q.push([]byte("z")); !errors.Is(err, ErrClosed) {
		t.Fatalf("push after close = %v; want ErrClosed", err)
	}
	if q.len() != 0 {
		t.Fatalf("len after close = %d", q.len())
	}
}
