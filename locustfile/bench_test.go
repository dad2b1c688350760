package locustfile

import (
	"fmt"
	"strings"
	"testing"
)

// bigLocustfile returns a locustfile of about lines lines: user classes of
// ten tasks each, with f-strings, checks and captures.
func bigLocustfile(lines int) string { return bigLocustfileOf(lines, true) }

// bigLocustfileOf writes captures only if captures is set (today's
// scenario package does not hold them yet).
func bigLocustfileOf(lines int, captures bool) string {
	var b strings.Builder
	b.WriteString("from locust import HttpUser, task, between\n\nBASE = \"/api\"\n\n")
	n := 4
	for c := 0; n < lines; c++ {
		fmt.Fprintf(&b, "\nclass User%d(HttpUser):\n    wait_time = between(1, 2)\n\n", c)
		n += 4
		capt, item := `item = r.json()["items"][0]["id"]`, "item"
		if !captures {
			capt, item = "pass", "1"
		}
		for t := 0; t < 10 && n < lines; t++ {
			fmt.Fprintf(&b, `    @task(%d)
    def task%d(self):
        """Task %d."""
        with self.client.get(f"{BASE}/items/%d", name="items", catch_response=True) as r:
            if r.status_code != 200:
                r.failure("status")
            %s
        self.client.post("/orders", json={"item": %s, "qty": %d}, headers={"X-T": "%d"})

`, t+1, t, t, t, capt, item, t, t)
			n += 9
		}
	}
	return b.String()
}

// BenchmarkRead2000Lines is the figure of issue #18: the parse and
// translation time of a 2,000-line locustfile.
func BenchmarkRead2000Lines(b *testing.B) {
	src := []byte(bigLocustfile(2000))
	if got := strings.Count(string(src), "\n"); got < 1990 {
		b.Fatalf("%d lines", got)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		m, err := Read("big.py", src)
		if err != nil || len(m.Users) == 0 {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad2000Lines adds the YAML round trip through package
// scenario (what -f locustfile.py costs at start).
func BenchmarkLoad2000Lines(b *testing.B) {
	src := []byte(bigLocustfileOf(2000, false))
	b.ReportAllocs()
	for b.Loop() {
		m, err := Read("big.py", src)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Translate([]*Module{m}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBigLocustfileReads(t *testing.T) {
	m, err := Read("big.py", []byte(bigLocustfile(2000)))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Users) < 15 || len(m.Refused) != 0 {
		t.Fatalf("%d users, refused %v", len(m.Users), m.Refused)
	}
}
