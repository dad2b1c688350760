package scenario

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicada-load/cicada/internal/filelimit"
	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/worker"
)

// MaxFeedSize is the largest feed file a scenario loads (the rows are
// held in memory by every worker).
const MaxFeedSize = 256 << 20

// FeedBatch is how many rows of a unique feed a worker asks its master
// for at a time.
const FeedBatch = 64

// feedTimeout bounds a worker's wait for its master's answer to a
// request for rows.
const feedTimeout = 30 * time.Second

// Errors of feeds at run time (wrapped; the user stops).
var (
	// ErrFeedExhausted: every row of a feed in mode sequential or unique
	// was taken and on_exhausted is stop or fail.
	ErrFeedExhausted = errors.New("scenario: feed exhausted")
	// ErrFeedNeedsCicadaMaster: a unique feed's rows are handed out by a
	// cicada master; a Python Locust master cannot.
	ErrFeedNeedsCicadaMaster = errors.New("scenario: a unique feed needs a cicada master (a Python Locust master cannot hand out rows; use mode sequential or random, which each worker serves from its own copy)")
	// ErrFeedRefused: the master refused the request (another file).
	ErrFeedRefused = errors.New("scenario: the master refused the feed request")
)

type feedMode uint8

const (
	modeSequential feedMode = iota
	modeRandom
	modeUnique
)

type exhaustPolicy uint8

const (
	exhaustRecycle exhaustPolicy = iota
	exhaustStop
	exhaustFail
)

// feed is a loaded data feed: its rows in memory, and where the next
// one comes from.
type feed struct {
	name      string
	file      string // as resolved
	mode      feedMode
	exhausted exhaustPolicy
	columns   []string
	rows      [][]string
	digest    string // hex SHA-256 of the file

	cursor atomic.Uint64 // sequential: next row (may pass len(rows))
	logged atomic.Bool   // an error other than exhaustion was logged
}

// loadFeed reads a .csv (header row, then rows) or .jsonl (one JSON object
// per line) file. Errors name the file and line.
func loadFeed(path string) (cols []string, rows [][]string, digest string, err error) {
	data, err := filelimit.Read(path, MaxFeedSize)
	if err != nil {
		return nil, nil, "", err
	}
	sum := sha256.Sum256(data)
	digest = hex.EncodeToString(sum[:])
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		cols, rows, err = parseCSVFeed(path, data)
	case ".jsonl", ".ndjson":
		cols, rows, err = parseJSONLFeed(path, data)
	default:
		return nil, nil, "", fmt.Errorf("%s: a feed file is .csv (with a header row) or .jsonl (one JSON object per line)", path)
	}
	if err != nil {
		return nil, nil, "", err
	}
	if len(rows) == 0 {
		return nil, nil, "", fmt.Errorf("%s: the feed has no rows", path)
	}
	return cols, rows, digest, nil
}

func checkColumns(path string, line int, cols []string) error {
	seen := map[string]bool{}
	for _, c := range cols {
		if !validVar(c) {
			return fmt.Errorf("%s:%d: column %q is not a variable name (letters, digits, _; not starting with a digit)", path, line, c)
		}
		if seen[c] {
			return fmt.Errorf("%s:%d: duplicate column %q", path, line, c)
		}
		seen[c] = true
	}
	return nil
}

func parseCSVFeed(path string, data []byte) ([]string, [][]string, error) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	r.ReuseRecord = false
	head, err := r.Read()
	if err == io.EOF {
		return nil, nil, fmt.Errorf("%s: the feed is empty (a CSV feed starts with a header row)", path)
	}
	if err != nil {
		return nil, nil, csvError(path, err)
	}
	for i := range head {
		head[i] = strings.TrimSpace(head[i])
	}
	if err := checkColumns(path, 1, head); err != nil {
		return nil, nil, err
	}
	var rows [][]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, csvError(path, err)
		}
		rows = append(rows, rec)
	}
	return head, rows, nil
}

func csvError(path string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d: malformed CSV: %w", path, pe.Line, pe.Err)
	}
	return fmt.Errorf("%s: malformed CSV: %w", path, err)
}

func parseJSONLFeed(path string, data []byte) ([]string, [][]string, error) {
	var cols []string
	index := map[string]int{}
	var rows [][]string
	for n, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var obj map[string]any
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil || dec.More() || obj == nil {
			msg := "not one JSON object"
			if err != nil {
				msg = err.Error()
			}
			return nil, nil, fmt.Errorf("%s:%d: malformed JSON line: %s", path, n+1, msg)
		}
		if cols == nil {
			for k := range obj {
				cols = append(cols, k)
			}
			sort.Strings(cols)
			if err := checkColumns(path, n+1, cols); err != nil {
				return nil, nil, err
			}
			for i, c := range cols {
				index[c] = i
			}
		}
		if len(obj) != len(cols) {
			return nil, nil, fmt.Errorf("%s:%d: the line has keys %v, the first line %v: every line needs the same keys", path, n+1, sortedKeys(obj), cols)
		}
		row := make([]string, len(cols))
		for k, v := range obj {
			i, ok := index[k]
			if !ok {
				return nil, nil, fmt.Errorf("%s:%d: key %q is not in the first line (%v)", path, n+1, k, cols)
			}
			row[i] = jsonText(v)
		}
		rows = append(rows, row)
	}
	if cols == nil {
		return nil, nil, fmt.Errorf("%s: the feed is empty", path)
	}
	return cols, rows, nil
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// take returns the index of the user's next row.
func (f *feed) take(ctx context.Context, u *worker.User) (int, error) {
	switch f.mode {
	case modeRandom:
		return rand.IntN(len(f.rows)), nil
	case modeSequential:
		i := f.cursor.Add(1) - 1
		n := uint64(len(f.rows))
		if i >= n && f.exhausted != exhaustRecycle {
			return 0, fmt.Errorf("feed %s: all %d rows taken: %w", f.name, n, ErrFeedExhausted)
		}
		return int(i % n), nil
	}
	w := u.Worker()
	if w == nil || !w.CicadaMaster() {
		return 0, fmt.Errorf("feed %s: %w", f.name, ErrFeedNeedsCicadaMaster)
	}
	return registerFeedClient(w).take(ctx, f)
}

// feedClient is one worker's side of its unique feeds: rows received from
// the master and not yet taken, per feed.
type feedClient struct {
	w  *worker.Worker
	mu sync.Mutex
	st map[string]*feedBuf
}

// feedBuf is one feed's rows on a worker. It asks for the next batch when
// half of the rows it holds are taken, so users rarely wait for the
// master; a batch that came too late (users waited) doubles the next
// one, up to maxFeedBatch.
type feedBuf struct {
	ranges    [][2]int      // row ranges [start, end) received, in order
	held      int           // rows in ranges
	batch     int           // rows to ask for next
	wait      chan struct{} // closed when the pending request is answered; nil if none
	exhausted bool
	starved   bool // a user waited for rows since the last request
	err       error
}

// maxFeedBatch bounds the adaptive batch: rows a worker holds unused when
// a test ends are not handed out again.
const maxFeedBatch = 1024

// workerClients maps each worker to its one feedClient (the message
// handler is per worker, shared by the feeds of every scenario).
var workerClients sync.Map // *worker.Worker → *feedClient

func registerFeedClient(w *worker.Worker) *feedClient {
	c := &feedClient{w: w, st: make(map[string]*feedBuf)}
	if old, loaded := workerClients.LoadOrStore(w, c); loaded {
		return old.(*feedClient)
	}
	_ = w.RegisterMessage(protocol.TypeCicadaFeedRows, func(_ *worker.Worker, msg protocol.Message) {
		c.onRows(msg)
	}) // never fails: not a built-in type
	return c
}

func (c *feedClient) onRows(msg protocol.Message) {
	data, _ := msg.Data.(*protocol.Custom)
	var m map[string]any
	if data != nil {
		m, _ = data.Data.(map[string]any)
	}
	name, _ := m["feed"].(string)
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.st[name]
	if b == nil || b.wait == nil {
		return // not asked (a late answer after a timeout)
	}
	if e, _ := m["error"].(string); e != "" {
		b.err = fmt.Errorf("feed %s: %w: %s", name, ErrFeedRefused, e)
	} else {
		start, count := toInt(m["start"]), toInt(m["count"])
		if count <= 0 {
			b.exhausted = true
		} else {
			b.ranges = append(b.ranges, [2]int{start, start + count})
			b.held += count
		}
	}
	close(b.wait)
	b.wait = nil
}

func toInt(v any) int {
	switch x := v.(type) {
	case int64:
		return int(x)
	case uint64:
		return int(x)
	case int:
		return x
	case float64:
		return int(x)
	}
	return 0
}

// take returns a row of f for one user, asking the master for a batch
// when the worker has none left (or half of its batch is taken).
func (c *feedClient) take(ctx context.Context, f *feed) (int, error) {
	var deadline <-chan time.Time
	c.mu.Lock()
	for {
		b := c.st[f.name]
		if b == nil {
			b = &feedBuf{batch: FeedBatch}
			c.st[f.name] = b
		}
		switch {
		case b.err != nil:
			err := b.err
			c.mu.Unlock()
			return 0, err
		case b.held > 0:
			r := &b.ranges[0]
			i := r[0]
			r[0]++
			if r[0] == r[1] {
				b.ranges = b.ranges[1:]
			}
			b.held--
			if b.held < b.batch/2 && b.wait == nil && !b.exhausted {
				// Prefetch; if it cannot be sent, the take that finds
				// no rows asks again and reports the error.
				_ = c.ask(b, f)
			}
			c.mu.Unlock()
			if i < 0 || i >= len(f.rows) {
				return 0, fmt.Errorf("feed %s: %w: row %d of %d", f.name, ErrFeedRefused, i, len(f.rows))
			}
			return i, nil
		case b.exhausted:
			c.mu.Unlock()
			return 0, fmt.Errorf("feed %s: all %d rows handed out across the cluster: %w", f.name, len(f.rows), ErrFeedExhausted)
		}
		b.starved = true // a user waits: the next batch is larger
		if b.wait == nil {
			if err := c.ask(b, f); err != nil {
				c.mu.Unlock()
				return 0, err
			}
		}
		wait := b.wait
		c.mu.Unlock()
		if deadline == nil {
			t := time.NewTimer(feedTimeout)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-deadline:
			c.mu.Lock()
			if b.wait == wait {
				close(b.wait)
				b.wait = nil // ask again next time
			}
			c.mu.Unlock()
			return 0, fmt.Errorf("feed %s: no answer from the master within %v", f.name, feedTimeout)
		}
		c.mu.Lock()
	}
}

// ask sends a request for b.batch rows. Precondition: c.mu held, no
// request pending.
func (c *feedClient) ask(b *feedBuf, f *feed) error {
	if b.starved {
		b.batch = min(2*b.batch, maxFeedBatch) // the last batch came too late
	}
	b.starved = false
	b.wait = make(chan struct{})
	err := c.w.SendMessage(protocol.TypeCicadaFeedTake, map[string]any{
		"feed": f.name, "digest": f.digest, "rows": int64(len(f.rows)),
		"n": int64(b.batch), "recycle": f.exhausted == exhaustRecycle,
	})
	if err != nil {
		close(b.wait)
		b.wait = nil
		return fmt.Errorf("feed %s: ask the master for rows: %w", f.name, err)
	}
	return nil
}
