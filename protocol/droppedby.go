package protocol

import "strconv"

// KeyCicadaDroppedBy is the extra top-level stats message key carrying
// StatsReport.DroppedBy.
const KeyCicadaDroppedBy = "cicada_dropped_by"

// DroppedName is the arrival-rate iterations dropped in a report window
// that are attributed to one (method, name): the first request of the
// task they would have run (package worker, rate.go, says how a worker
// attributes them).
//
// Wire form: an array [method, name, count] (str, str, int); the
// report's DroppedBy is an array of them under KeyCicadaDroppedBy, sent
// only when not empty, at most MaxReportEntries long. A count must be
// positive; a Python master ignores the key.
type DroppedName struct {
	Method, Name string
	Count        int64
}

func (e *encoder) droppedBy(ds []DroppedName) {
	e.arrayLen(len(ds))
	for i := range ds {
		e.arrayLen(3)
		e.str(ds[i].Method)
		e.str(ds[i].Name)
		e.int(ds[i].Count)
	}
}

// droppedBy reads KeyCicadaDroppedBy's array; nil for an empty one.
func (d *decoder) droppedBy() ([]DroppedName, error) {
	n, err := d.arrayLen()
	if err != nil || n == 0 {
		return nil, err
	}
	if n > MaxReportEntries {
		return nil, outOfRange(strconv.Itoa(n) + " dropped names, more than MaxReportEntries (" + strconv.Itoa(MaxReportEntries) + ")")
	}
	if err := d.checkLen(n, 1); err != nil { // no allocation beyond the payload; a short element is named below
		return nil, err
	}
	out := make([]DroppedName, n)
	for i := range out {
		if err := d.droppedName(&out[i]); err != nil {
			return nil, at(err, "["+strconv.Itoa(i)+"]")
		}
	}
	return out, nil
}

func (d *decoder) droppedName(dn *DroppedName) error {
	n, err := d.arrayLen()
	if err != nil {
		return err
	}
	if n != 3 {
		return malformed("want [method, name, count], got an array of " + strconv.Itoa(n))
	}
	if dn.Method, err = d.string(); err != nil {
		return at(err, "[0]")
	}
	if dn.Name, err = d.string(); err != nil {
		return at(err, "[1]")
	}
	if dn.Count, err = d.int64(); err != nil {
		return at(err, "[2]")
	}
	if dn.Count <= 0 {
		return at(outOfRange("count "+strconv.FormatInt(dn.Count, 10)+" is not positive"), "[2]")
	}
	return nil
}
