package stats

import (
	"reflect"
	"testing"
)

func TestMean(t *testing.T) {
	if got := Mean([]int{1, 2, 3, 4}); got != 2.5 {
		t.Errorf("Mean = %v, want 2.5", got)
	}
	if got := Mean(nil); got != 0 {
		t.Errorf("Mean(nil) = %v, want 0", got)
	}
}

func TestMedian(t *testing.T) {
	cases := []struct {
		name string
		xs   []int
		want float64
	}{
		{"odd", []int{5, 1, 3}, 3},
		{"even", []int{4, 1, 3, 2}, 2.5},
		{"one", []int{7}, 7},
		{"none", nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Median(c.xs); got != c.want {
				t.Errorf("Median(%v) = %v, want %v", c.xs, got, c.want)
			}
		})
	}
}

func TestClamp(t *testing.T) {
	cases := [][4]int{{5, 0, 10, 5}, {-1, 0, 10, 0}, {11, 0, 10, 10}, {0, 0, 10, 0}, {10, 0, 10, 10}}
	for _, c := range cases {
		if got := Clamp(c[0], c[1], c[2]); got != c[3] {
			t.Errorf("Clamp(%d, %d, %d) = %d, want %d", c[0], c[1], c[2], got, c[3])
		}
	}
}

func TestHistogram(t *testing.T) {
	got := Histogram([]int{0, 1, 9, 10, 25, -3}, 10)
	want := map[int]int{0: 3, 10: 1, 20: 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Histogram = %v, want %v", got, want)
	}
}

func TestAllPositive(t *testing.T) {
	if !AllPositive([]int{1, 2}) || AllPositive([]int{1, 0}) || !AllPositive(nil) {
		t.Error("AllPositive is wrong")
	}
}
