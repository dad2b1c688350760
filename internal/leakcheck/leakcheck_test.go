package leakcheck

import (
	"testing"
	"time"
)

func TestFindsAndForgetsGoroutine(t *testing.T) {
	started, stop, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go park(started, stop, done)
	<-started
	if err := Check("/internal/leakcheck/", 100*time.Millisecond); err == nil {
		t.Fatal("Check found no goroutine while park runs")
	}
	close(stop)
	<-done
	if err := Check("/internal/leakcheck/", 10*time.Second); err != nil {
		t.Fatalf("Check after the goroutine ended: %v", err)
	}
}
