// Package stats summarises samples of integers.
package stats

import "sort"

// Mean is the average of xs; 0 for none.
func Mean(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	total := 0
	for _, x := range xs {
		total += x
	}
	return float64(total) / float64(len(xs))
}

// Median is the middle value of xs (the mean of the two middle ones for an even count).
func Median(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	sorted := append([]int(nil), xs...)
	sort.Ints(sorted)
	mid := len(sorted) / 2
	if len(sorted)%2 == 1 {
		return float64(sorted[mid])
	}
	return float64(sorted[mid-1]+sorted[mid]) / 2
}

// Clamp keeps x within [lo, hi].
func Clamp(x, lo, hi int) int {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

// Histogram counts xs into buckets of the given size, starting at 0; negative values are
// left out.
func Histogram(xs []int, size int) map[int]int {
	counts := map[int]int{}
	for _, x := range xs {
		if x < 0 {
			continue
		}
		counts[x/size*size]++
	}
	return counts
}

// AllPositive says whether every x is above 0.
func AllPositive(xs []int) bool {
	for _, x := range xs {
		if x <= 0 {
			return false
		}
	}
	return true
}
