package web

import "github.com/cicada-load/cicada/stats"

// appendDroppedByJSON writes /stats/requests' "dropped_iterations_by_name"
// (cicada, arrival-rate tests that dropped iterations): the per-name
// drops (stats.Snapshot.DroppedBy: the first request of the task each
// dropped iteration would have run), sorted by name then method, at most
// maxRows of them, as [{"dropped", "method", "name"}]. Nothing without
// drops by name.
func appendDroppedByJSON(w *jsonWriter, snap *stats.Snapshot) {
	if len(snap.DroppedBy) == 0 {
		return
	}
	w.key("dropped_iterations_by_name")
	w.beginArray()
	for i, d := range snap.DroppedBy {
		if i == maxRows {
			break
		}
		w.elem()
		w.beginObject()
		w.kInt("dropped", d.Count)
		w.kStr("method", d.Method)
		w.kStr("name", d.Name)
		w.endObject()
	}
	w.endArray()
}
