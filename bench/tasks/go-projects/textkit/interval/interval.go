// Package interval merges and queries closed integer intervals.
package interval

import "sort"

// Interval is [Lo, Hi], both ends included.
type Interval struct {
	Lo, Hi int
}

// Contains says whether x lies in the interval.
func (i Interval) Contains(x int) bool {
	return i.Lo <= x && x <= i.Hi
}

// Len is the number of integers in the interval.
func (i Interval) Len() int {
	if i.Hi < i.Lo {
		return 0
	}
	return i.Hi - i.Lo + 1
}

// Merge joins overlapping or touching intervals, sorted by their start.
func Merge(in []Interval) []Interval {
	if len(in) == 0 {
		return nil
	}
	sorted := append([]Interval(nil), in...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a].Lo < sorted[b].Lo })
	out := []Interval{sorted[0]}
	for _, next := range sorted[1:] {
		last := &out[len(out)-1]
		if next.Lo <= last.Hi+1 {
			if next.Hi > last.Hi {
				last.Hi = next.Hi
			}
			continue
		}
		out = append(out, next)
	}
	return out
}

// Total is the number of integers the intervals cover together.
func Total(in []Interval) int {
	total := 0
	for _, i := range Merge(in) {
		total += i.Len()
	}
	return total
}
