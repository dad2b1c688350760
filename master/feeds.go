package master

import (
	"log/slog"

	"github.com/cicada-load/cicada/protocol"
)

// feedState hands out the rows of unique feeds (protocol.TypeCicadaFeedTake):
// per feed name, the next row number. Rows are handed out once for the
// master's whole life (a new test from the web UI does not reuse them),
// except that a worker asking with recycle starts the feed over when all
// rows were handed out. The master never reads the feed files: workers
// send the file's digest and row count, and a worker whose file differs
// from the first one's is refused.
type feedState struct {
	feeds map[string]*feedCursor
}

type feedCursor struct {
	digest string
	rows   int64
	next   int64
	rounds int64 // times recycled
	handed int64 // rows handed out in all
}

// maxFeeds bounds the feed names the master keeps (workers name them).
const maxFeeds = 1024

// feedTake answers a worker's request for rows. Precondition: loop.
func (m *Master) feedTake(id string, msg protocol.Message) {
	data, _ := msg.Data.(*protocol.Custom)
	var f map[string]any
	if data != nil {
		f, _ = data.Data.(map[string]any)
	}
	name, _ := f["feed"].(string)
	digest, _ := f["digest"].(string)
	rows, n := asInt64(f["rows"]), asInt64(f["n"])
	recycle, _ := f["recycle"].(bool)
	reply := func(fields map[string]any) {
		fields["feed"] = name
		m.send(id, protocol.TypeCicadaFeedRows, &protocol.Custom{Data: fields})
	}
	if name == "" || rows <= 0 || n <= 0 || n > protocol.MaxFeedBatch {
		m.logf(slog.LevelWarn, "bad feed request", "Bad feed request from worker %s: %v", id, f)
		reply(map[string]any{"error": "bad feed request (feed, rows and n 1..4096 are required)"})
		return
	}
	st := &m.st.feeds
	if st.feeds == nil {
		st.feeds = make(map[string]*feedCursor)
	}
	c := st.feeds[name]
	if c == nil {
		if len(st.feeds) >= maxFeeds {
			reply(map[string]any{"error": "too many feeds"})
			return
		}
		c = &feedCursor{digest: digest, rows: rows}
		st.feeds[name] = c
	}
	if c.digest != digest || c.rows != rows {
		m.logf(slog.LevelError, "feed mismatch "+name, "Worker %s has another file for feed %q (%d rows, digest %.12s) than the first worker (%d rows, digest %.12s): refused", id, name, rows, digest, c.rows, c.digest)
		reply(map[string]any{"error": "the worker's file for this feed differs from the one the first worker has (other rows or row count); give every worker the same file"})
		return
	}
	if c.next >= c.rows && recycle {
		c.next = 0
		c.rounds++
	}
	count := min(n, c.rows-c.next)
	start := c.next
	c.next += count
	c.handed += count
	reply(map[string]any{"start": start, "count": count})
}
