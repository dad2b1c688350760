package worker

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/cicada-load/cicada/protocol"
)

// ErrBuiltinType is returned by RegisterMessage and SendMessage for a
// message type that Locust itself uses.
var ErrBuiltinType = errors.New("worker: built-in message type")

// MessageHandler handles a custom message from the master (Locust's
// runner.register_message). msg.Data is a *protocol.Custom holding the
// decoded value. It runs on the worker's receive goroutine, so it must
// return quickly; a panic is recovered and logged.
type MessageHandler func(w *Worker, msg protocol.Message)

var builtinTypes = map[string]bool{
	protocol.TypeClientReady: true, protocol.TypeAck: true, protocol.TypeHeartbeat: true,
	protocol.TypeSpawn: true, protocol.TypeSpawning: true, protocol.TypeSpawningComplete: true,
	protocol.TypeStats: true, protocol.TypeException: true, protocol.TypeStop: true,
	protocol.TypeClientStopped: true, protocol.TypeQuit: true, protocol.TypeReconnect: true,
	protocol.TypeLogs: true, protocol.TypeLocustfile: true, protocol.TypeUpdateUserClass: true,
}

// RegisterMessage installs h for messages of type typ from the master,
// replacing any earlier handler. Built-in types cannot be taken over.
func (w *Worker) RegisterMessage(typ string, h MessageHandler) error {
	if builtinTypes[typ] || typ == "" {
		return fmt.Errorf("%w: %q", ErrBuiltinType, typ)
	}
	w.customMu.Lock()
	defer w.customMu.Unlock()
	if h == nil {
		delete(w.custom, typ)
	} else {
		w.custom[typ] = h
	}
	return nil
}

// SendMessage sends a custom message to the master (Locust's
// runner.send_message). data may be nil, a bool, number, string, []byte,
// slice or map of those. It fails for built-in types, unencodable data, or
// before Run.
func (w *Worker) SendMessage(typ string, data any) error {
	if builtinTypes[typ] || typ == "" {
		return fmt.Errorf("%w: %q", ErrBuiltinType, typ)
	}
	d := w.dealer.Load()
	if d == nil {
		return fmt.Errorf("worker: SendMessage %q before Run", typ)
	}
	b, err := protocol.Encode(protocol.Message{Type: typ, Data: &protocol.Custom{Data: data}, NodeID: w.nodeID})
	if err != nil {
		return fmt.Errorf("worker: encode %q: %w", typ, err)
	}
	return d.Send(b)
}

func (w *Worker) onCustom(msg protocol.Message) {
	w.customMu.RLock()
	h := w.custom[msg.Type]
	w.customMu.RUnlock()
	if h == nil {
		w.logRepeated(slog.LevelWarn, causeUnknownType, "unknown message type received", "type", msg.Type)
		return
	}
	defer func() {
		if r := recover(); r != nil {
			w.logRepeated(slog.LevelError, causeHandlerPanic+" "+msg.Type, "custom message handler panicked", "type", msg.Type, "panic", fmt.Sprint(r))
		}
	}()
	h(w, msg)
}
