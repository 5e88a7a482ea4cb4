// Package vcpumask reads the mask of a realtime VMI's vCPUs
// (spec.domain.cpu.realtime.mask) as KubeVirt's virt-handler reads it
// (pkg/hypervisor/common's ParseCPUMask and CPUMask.IsEnabled), for api,
// which refuses what it cannot read, and convert, which schedules the
// vCPUs it names.
//
// The mask is a comma-separated list of terms, each trimmed of spaces: N
// (one vCPU), N-M (a range, N not above M) or ^N (not that vCPU), in
// decimal digits. KubeVirt's reading differs from libvirt's bitmaps in
// three ways, which is why convert writes the vCPUs the mask names rather
// than the mask: the order of the terms does not matter (a vCPU is named
// when a positive term names it and no ^ term does: "^1,0-3" is 0, 2 and 3,
// where libvirt clears 1 and then sets 0-3); an empty mask names every
// vCPU (libvirt refuses an empty bitmap); and spaces are taken around a
// term only, not inside a range ("1 - 2" is refused). A single or negated
// term compares its digits as text with the vCPU's number, so "01" or
// "^01" names no vCPU in KubeVirt while libvirt reads vCPU 1: Parse
// refuses a leading zero there (ranges read numbers: "01-03" is 1-3).
package vcpumask

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The three forms of a term, as KubeVirt matches them.
var (
	rangeTerm  = regexp.MustCompile(`^(\d+)-(\d+)$`)
	singleTerm = regexp.MustCompile(`^(\d+)$`)
	negTerm    = regexp.MustCompile(`^\^(\d+)$`)
)

// Mask is a parsed mask. The zero Mask (the empty mask's) names every vCPU.
type Mask struct {
	// some tells that the mask has terms (an empty one names every vCPU).
	some bool
	// ranges are the positive terms, single vCPUs as ranges of one.
	ranges [][2]uint64
	// not are the vCPUs of the ^ terms.
	not map[uint64]bool
	// highest is the highest vCPU a term names.
	highest uint64
}

// Parse reads a mask as KubeVirt's ParseCPUMask does, and refuses what it
// refuses: a term of none of the three forms, a number too big for an
// int, a range whose start is above its end. It refuses too a single or
// negated term with a leading zero, which KubeVirt and libvirt read
// differently.
func Parse(mask string) (Mask, error) {
	var m Mask
	if mask == "" {
		return m, nil
	}
	m.some = true
	for _, raw := range strings.Split(mask, ",") {
		term := strings.TrimSpace(raw)
		var lo, hi uint64
		var err error
		switch {
		case rangeTerm.MatchString(term):
			g := rangeTerm.FindStringSubmatch(term)
			if lo, err = number(g[1], false); err == nil {
				hi, err = number(g[2], false)
			}
			if err == nil && lo > hi {
				err = fmt.Errorf("range %q starts above its end", term)
			}
			if err == nil {
				m.ranges = append(m.ranges, [2]uint64{lo, hi})
			}
		case singleTerm.MatchString(term):
			if lo, err = number(term, true); err == nil {
				hi = lo
				m.ranges = append(m.ranges, [2]uint64{lo, lo})
			}
		case negTerm.MatchString(term):
			if lo, err = number(term[1:], true); err == nil {
				hi = lo
				if m.not == nil {
					m.not = map[uint64]bool{}
				}
				m.not[lo] = true
			}
		default:
			err = fmt.Errorf("%q is not a vCPU (N), a range (N-M) or an exclusion (^N)", raw)
		}
		if err != nil {
			return Mask{}, err
		}
		m.highest = max(m.highest, hi)
	}
	return m, nil
}

// number reads a term's decimal number, which must fit an int (KubeVirt's
// strconv.Atoi); text, for a single or negated term, refuses a leading
// zero.
func number(s string, text bool) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, strconv.IntSize-1)
	if err != nil {
		return 0, fmt.Errorf("%s is not a vCPU number", s)
	}
	if text && len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("%s has a leading zero: KubeVirt compares it as text with the vCPU's number and names no vCPU, libvirt would read vCPU %d", s, n)
	}
	return n, nil
}

// All tells whether the mask is empty, and so names every vCPU.
func (m Mask) All() bool { return !m.some }

// Highest is the highest vCPU a term of the mask names (0 for the empty
// mask).
func (m Mask) Highest() uint64 { return m.highest }

// Names tells whether the mask names vCPU id: every vCPU for the empty
// mask; else one a positive term names and no ^ term.
func (m Mask) Names(id uint64) bool {
	if m.All() {
		return true
	}
	if m.not[id] {
		return false
	}
	for _, r := range m.ranges {
		if r[0] <= id && id <= r[1] {
			return true
		}
	}
	return false
}
