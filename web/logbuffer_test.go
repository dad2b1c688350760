package web

import (
	"fmt"
	"strings"
	"testing"
)

func TestLogBuffer(t *testing.T) {
	b := NewLogBuffer(3)
	if got := b.Lines(); len(got) != 0 {
		t.Fatalf("empty Lines() = %q", got)
	}
	fmt.Fprint(b, "one\ntw")
	fmt.Fprint(b, "o\nthree\n")
	if got := strings.Join(b.Lines(), "|"); got != "one|two|three" {
		t.Errorf("Lines() = %q; want one|two|three", got)
	}
	fmt.Fprint(b, "four\nfive\n")
	if got := strings.Join(b.Lines(), "|"); got != "three|four|five" {
		t.Errorf("Lines() after wrap = %q; want three|four|five", got)
	}
	if NewLogBuffer(0).max != DefaultLogLines {
		t.Errorf("NewLogBuffer(0) does not use DefaultLogLines")
	}
}
