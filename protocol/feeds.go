package protocol

// Custom message types of unique feeds (scenario feeds in mode unique):
// the master hands out row numbers of a feed file that every cicada worker
// holds, so that each row is used once across the cluster.
const (
	// TypeCicadaFeedTake (W→M) asks for rows: {"feed": str (the feed's
	// name), "digest": str (hex SHA-256 of the file, the same on every
	// worker), "rows": int (the file's row count), "n": int (how many,
	// 1..MaxFeedBatch), "recycle": bool (start over when all were handed
	// out)}.
	TypeCicadaFeedTake = "cicada_feed_take"
	// TypeCicadaFeedRows (M→W) answers: {"feed": str, "start": int,
	// "count": int} — rows start..start+count-1 (0-based) are the
	// worker's; count 0 means the feed is exhausted — or {"feed": str,
	// "error": str} when the request is refused (another file under the
	// same name).
	TypeCicadaFeedRows = "cicada_feed_rows"
	// MaxFeedBatch is the most rows one TypeCicadaFeedTake may ask for.
	MaxFeedBatch = 4096
)
