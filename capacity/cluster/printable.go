package cluster

import (
	"fmt"
	"strings"
	"unicode"
)

// printable is s with every rune that is not printable (C0 and C1 control
// characters: line breaks, terminal escapes; format and unassigned runes)
// replaced by a space, so never longer than s. A worker's texts (its ZMTP
// identity, runtime, refusal, errors, generator limits) reach the
// controller's terminal, log and reports: a hostile worker must not inject
// log lines or terminal escape sequences there.
func printable(s string) string {
	if !strings.ContainsFunc(s, notPrintable) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if notPrintable(r) {
			return ' '
		}
		return r
	}, s)
}

func notPrintable(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }

// printableResult makes r's texts printable (see printable); two error
// kinds that become one are refused rather than summed.
func printableResult(r *Result) error {
	r.Error = printable(r.Error)
	t := &r.Trial
	t.GeneratorLimit, t.GeneratorStrain = printable(t.GeneratorLimit), printable(t.GeneratorStrain)
	if t.TLS != nil {
		t.TLS.Version, t.TLS.Cipher, t.TLS.Group = printable(t.TLS.Version), printable(t.TLS.Cipher), printable(t.TLS.Group)
	}
	var renamed map[string]int64
	for k, v := range t.Errors {
		if p := printable(k); p != k {
			delete(t.Errors, k)
			if _, dup := renamed[p]; dup {
				return dupKinds(p)
			}
			if renamed == nil {
				renamed = map[string]int64{}
			}
			renamed[p] = v
		}
	}
	for k, v := range renamed {
		if _, dup := t.Errors[k]; dup {
			return dupKinds(k)
		}
		t.Errors[k] = v
	}
	return nil
}

func dupKinds(k string) error {
	return fmt.Errorf("%w: %s: errors: two kinds read %q once their control characters are replaced", ErrMessage, TypeResult, k)
}
