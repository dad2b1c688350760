package stack

import "unsafe"

// RecordBytes is the size of one connection record: a stack's table takes
// ClientIPs × ports × RecordBytes bytes, allocated by New.
const RecordBytes = int(unsafe.Sizeof(conn{}))
