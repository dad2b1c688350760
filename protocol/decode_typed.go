package protocol

import (
	"strconv"

	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// data decodes the data element of a message of type typ (as Locust 2.12.1
// sends and reads them: locust/runners.py, MasterRunner.client_listener and
// WorkerRunner.worker). Data depth starts at MaxDepth-1: the envelope is
// level 1.
func (d *decoder) data(typ string) (any, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	isNil := c == msgpcode.Nil
	switch typ {
	case TypeClientReady:
		return d.clientReady(c)
	case TypeAck:
		return d.ack(isNil)
	case TypeHeartbeat:
		if isNil {
			d.skipBytes(1)
			return &MasterHeartbeat{}, nil
		}
		return d.heartbeat()
	case TypeSpawn:
		return d.spawn()
	case TypeSpawningComplete:
		return d.spawningComplete()
	case TypeStats:
		return d.statsReport()
	case TypeException:
		return d.exception()
	case TypeLogs:
		return d.logs()
	case TypeLocustfile:
		if isNil {
			d.skipBytes(1)
			return &Locustfile{}, nil
		}
		m, err := d.stringKeyedMap(MaxDepth - 1)
		if err != nil {
			return nil, err
		}
		return &Locustfile{Data: m}, nil
	case TypeUpdateUserClass:
		m, err := d.stringKeyedMap(MaxDepth - 1)
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			m = nil
		}
		return &UpdateUserClass{Data: m}, nil
	case TypeSpawning, TypeStop, TypeClientStopped, TypeQuit, TypeReconnect:
		if isNil {
			d.skipBytes(1)
			return nil, nil
		}
	}
	// Unknown types, and known nil-data types that carry data anyway, pass
	// through as plain values.
	v, err := d.value(MaxDepth - 1)
	if err != nil {
		return nil, err
	}
	return &Custom{Data: v}, nil
}

// stringKeyedMap decodes a map whose keys must all be strings.
func (d *decoder) stringKeyedMap(depth int) (map[string]any, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	if !isMap(c) {
		return nil, malformed("want map, got " + codeKind(c))
	}
	v, err := d.plainMap(depth - 1)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, malformed("want map with str keys")
	}
	return m, nil
}

func (d *decoder) clientReady(c byte) (*ClientReady, error) {
	switch {
	case isStr(c) || isBin(c):
		s, err := d.string()
		if err != nil {
			return nil, err
		}
		return &ClientReady{Version: s}, nil
	case isInt(c) || isFloat(c):
		n, err := d.float64()
		if err != nil {
			return nil, err
		}
		if n == -1 {
			return &ClientReady{VersionSkipCheck: true}, nil
		}
		return nil, malformed("want version str or -1, got " + strconv.FormatFloat(n, 'g', -1, 64))
	}
	return nil, malformed("want version str or -1, got " + codeKind(c))
}

func (d *decoder) ack(isNil bool) (*Ack, error) {
	a := &Ack{Index: -1}
	if isNil {
		d.skipBytes(1)
		return a, nil
	}
	err := d.fields(MaxDepth-2, func(k []byte) (bool, error) {
		switch string(k) {
		case "index":
			i, err := d.int64()
			a.Index = i
			return true, err
		case "cicada":
			s, err := d.string()
			a.Cicada = s
			return true, err
		}
		return false, nil
	})
	return a, err
}

// fields iterates over a str-keyed map, calling f for each str key. f
// returns handled=false to have the value skipped. Entries whose key is not
// a str are skipped. Errors get the key as path element. depth is the
// nesting its keys and skipped values may open (see skip): MaxDepth-2 for
// the map of a message's data.
func (d *decoder) fields(depth int, f func(k []byte) (handled bool, err error)) error {
	n, err := d.mapLen()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		k, ok, err := d.key(depth)
		if err != nil {
			return at(err, "[key "+strconv.Itoa(i)+"]")
		}
		handled := false
		if ok {
			if handled, err = f(k); err != nil {
				return at(err, string(k))
			}
		}
		if !handled {
			if err := d.skip(depth); err != nil {
				return at(err, skippedPath(k, ok, i))
			}
		}
	}
	return nil
}

// skippedPath is the path element of an ignored entry's value: its key
// when the key is a str (as the stats decoder names them), else its
// index.
func skippedPath(k []byte, isStr bool, i int) string {
	if isStr {
		return string(k)
	}
	return "[" + strconv.Itoa(i) + "]"
}

func missing(key string) error { return at(malformed("missing"), key) }

// heartbeat decodes a worker's heartbeat, the most frequent message at the
// master; like fields, without the closure.
func (d *decoder) heartbeat() (*Heartbeat, error) {
	n, err := d.mapLen()
	if err != nil {
		return nil, err
	}
	h := &Heartbeat{MemoryUsage: -1}
	var seen uint8
	for i := 0; i < n; i++ {
		k, ok, err := d.key(MaxDepth - 2)
		if err != nil {
			return nil, at(err, "[key "+strconv.Itoa(i)+"]")
		}
		handled := ok
		if ok {
			switch string(k) {
			case "state":
				seen |= 1
				h.State, err = d.state()
			case "current_cpu_usage":
				seen |= 2
				h.CPUUsage, err = d.float64()
			case "current_memory_usage":
				if d.off < len(d.buf) && d.buf[d.off] == msgpcode.Nil {
					d.off++
					h.MemoryUsage = -1
				} else {
					h.MemoryUsage, err = d.int64()
				}
			case KeyCicadaConnections:
				if d.off < len(d.buf) && d.buf[d.off] == msgpcode.Nil {
					d.off++
				} else {
					h.Connections, err = d.connCounters()
				}
			default:
				handled = false
			}
			if err != nil {
				return nil, at(err, string(k))
			}
		}
		if !handled {
			if err := d.skip(MaxDepth - 2); err != nil {
				return nil, at(err, skippedPath(k, ok, i))
			}
		}
	}
	switch {
	case seen&1 == 0:
		return nil, missing("state")
	case seen&2 == 0:
		return nil, missing("current_cpu_usage")
	}
	return h, nil
}

// state reads a worker state, returning the State constant for Locust's
// states (no allocation) and an interned copy for others.
func (d *decoder) state() (string, error) {
	b, err := d.strRaw()
	if err != nil {
		return "", err
	}
	switch string(b) {
	case StateRunning:
		return StateRunning, nil
	case StateSpawning:
		return StateSpawning, nil
	case StateReady:
		return StateReady, nil
	case StateStopped:
		return StateStopped, nil
	case StateCleanup:
		return StateCleanup, nil
	case StateStopping:
		return StateStopping, nil
	}
	return d.internValid(b)
}

func (d *decoder) spawn() (*Spawn, error) {
	s := &Spawn{}
	var seen uint8
	err := d.fields(MaxDepth-2, func(k []byte) (bool, error) {
		var err error
		switch string(k) {
		case "timestamp":
			seen |= 1
			s.Timestamp, err = d.float64()
		case "user_classes_count":
			seen |= 2
			s.UserClassesCount, err = d.strIntMap()
		case "host":
			seen |= 4
			var h string
			var ok bool
			if h, ok, err = d.stringOrNil(); ok {
				s.Host = &h
			}
		case "stop_timeout":
			seen |= 8
			s.StopTimeout, err = d.floatOrNil()
		case "parsed_options":
			seen |= 16
			s.ParsedOptions, err = d.stringKeyedMap(MaxDepth - 2)
			if len(s.ParsedOptions) == 0 {
				s.ParsedOptions = nil
			}
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	for i, k := range [...]string{"timestamp", "user_classes_count", "host", "stop_timeout", "parsed_options"} {
		if seen&(1<<i) == 0 {
			return nil, missing(k)
		}
	}
	return s, nil
}

func (d *decoder) spawningComplete() (any, error) {
	var classes map[string]int64
	var hasClasses, hasCount bool
	count := int64(-1)
	err := d.fields(MaxDepth-2, func(k []byte) (bool, error) {
		var err error
		switch string(k) {
		case "user_classes_count":
			hasClasses = true
			classes, err = d.strIntMap()
		case "user_count":
			hasCount = true
			count, err = d.int64()
		default:
			return false, nil
		}
		return true, err
	})
	switch {
	case err != nil:
		return nil, err
	case hasClasses:
		return &SpawningComplete{UserClassesCount: classes, UserCount: count}, nil
	case hasCount:
		return &MasterSpawningComplete{UserCount: count}, nil
	}
	return nil, missing("user_classes_count")
}

// strIntMap decodes a map of str → int (user_classes_count). An empty map
// decodes to nil.
func (d *decoder) strIntMap() (map[string]int64, error) {
	return d.strIntMapInto(nil)
}

// strIntMapInto is strIntMap filling reuse's map when reuse is not nil.
func (d *decoder) strIntMapInto(reuse *reuseMap[string, int64]) (map[string]int64, error) {
	n, err := d.mapLen()
	if err != nil || n == 0 {
		return nil, err
	}
	var m map[string]int64
	if reuse != nil {
		m = reuse.get(n)
	} else {
		m = make(map[string]int64, n)
	}
	for i := 0; i < n; i++ {
		k, err := d.string()
		if err != nil {
			return nil, at(err, "[key "+strconv.Itoa(i)+"]")
		}
		v, err := d.int64()
		if err != nil {
			return nil, at(err, "["+strconv.Quote(k)+"]")
		}
		m[k] = v
	}
	return m, nil
}

func (d *decoder) exception() (*Exception, error) {
	x := &Exception{}
	var seen uint8
	err := d.fields(MaxDepth-2, func(k []byte) (bool, error) {
		var err error
		switch string(k) {
		case "msg":
			seen |= 1
			x.Msg, err = d.string()
		case "traceback":
			seen |= 2
			x.Traceback, err = d.string()
		default:
			return false, nil
		}
		return true, err
	})
	switch {
	case err != nil:
		return nil, err
	case seen&1 == 0:
		return nil, missing("msg")
	case seen&2 == 0:
		return nil, missing("traceback")
	}
	return x, nil
}

func (d *decoder) logs() (*Logs, error) {
	l := &Logs{}
	var seen uint8
	err := d.fields(MaxDepth-2, func(k []byte) (bool, error) {
		switch string(k) {
		case "worker_id":
			seen |= 1
			var err error
			l.WorkerID, err = d.string()
			return true, err
		case "logs":
			seen |= 2
			n, err := d.arrayLen()
			if err != nil {
				return true, err
			}
			if n > 0 {
				l.Logs = make([]string, n)
			}
			for i := range l.Logs {
				if l.Logs[i], err = d.string(); err != nil {
					return true, at(err, "["+strconv.Itoa(i)+"]")
				}
			}
			return true, nil
		}
		return false, nil
	})
	switch {
	case err != nil:
		return nil, err
	case seen&1 == 0:
		return nil, missing("worker_id")
	case seen&2 == 0:
		return nil, missing("logs")
	}
	return l, nil
}
