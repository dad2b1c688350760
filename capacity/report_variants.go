package capacity

import (
	"fmt"
	"strconv"
)

// variantLines are the report's lines on TLS and traffic mixes: what the
// trials negotiated (RFC 9411 section 6.3) and the mix's bytes per size at
// the reported trial (the best pass, or else the last trial).
func (r *Report) variantLines() []string {
	trials := r.Result.Trials
	if len(trials) == 0 {
		return nil
	}
	idx := len(trials) - 1
	for i := len(trials) - 1; i >= 0; i-- {
		if trials[i].Verdict == Pass && trials[i].Load == r.Result.Max {
			idx = i
			break
		}
	}
	var lines []string
	var full, resumed int64
	var first *TLSInfo
	mixed := false
	for i := range trials {
		if t := trials[i].TLS; t != nil {
			full, resumed = full+t.Full, resumed+t.Resumed
			if first == nil {
				first = t
			} else if t.Version != first.Version || t.Cipher != first.Cipher || t.Group != first.Group {
				mixed = true
			}
			mixed = mixed || t.Mixed
		}
	}
	if first != nil {
		s := fmt.Sprintf("TLS negotiated: version %s, cipher suite %s, key exchange %s", first.Version, first.Cipher, first.Group)
		if mixed {
			s += " (and other parameters in some handshakes)"
		}
		lines = append(lines, s+fmt.Sprintf("; %d full and %d resumed handshakes in the search", full, resumed))
		if t := trials[idx].TLS; t != nil {
			lines = append(lines, fmt.Sprintf("TLS at trial %d: %d full, %d resumed handshakes", idx+1, t.Full, t.Resumed))
		}
	}
	if m := trials[idx].Mix; m != nil {
		var total, bytes int64
		for _, c := range m {
			total += c.Count + c.Failed
			bytes += c.Bytes
		}
		s := fmt.Sprintf("Mix at trial %d (%d transactions, %d body bytes):", idx+1, total, bytes)
		for i, c := range m {
			if i > 0 {
				s += ","
			}
			share := 0.0
			if total > 0 {
				share = 100 * float64(c.Count+c.Failed) / float64(total)
			}
			s += " " + strconv.FormatInt(c.Size, 10) + " B " + strconv.FormatFloat(share, 'f', 1, 64) + "% (" +
				strconv.FormatInt(c.Count, 10) + " ok, " + strconv.FormatInt(c.Failed, 10) + " failed, " + strconv.FormatInt(c.Bytes, 10) + " bytes)"
		}
		lines = append(lines, s)
	}
	return lines
}

// variantCells are a trial's CSV cells of CSVHeader's TLS and mix columns.
func variantCells(t *Trial) []string {
	if t.TLS == nil {
		return []string{"", "", "", MixSummary(t.Mix)}
	}
	return []string{strconv.FormatInt(t.TLS.Full, 10), strconv.FormatInt(t.TLS.Resumed, 10),
		t.TLS.Version + " " + t.TLS.Cipher + " " + t.TLS.Group, MixSummary(t.Mix)}
}
