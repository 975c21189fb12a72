package interval_test

import (
	"reflect"
	"testing"

	"example.com/textkit/interval"
)

func TestContains(t *testing.T) {
	i := interval.Interval{Lo: 2, Hi: 4}
	for x, want := range map[int]bool{1: false, 2: true, 3: true, 4: true, 5: false} {
		if got := i.Contains(x); got != want {
			t.Errorf("Contains(%d) = %v, want %v", x, got, want)
		}
	}
}

func TestMerge(t *testing.T) {
	cases := []struct {
		name string
		in   []interval.Interval
		want []interval.Interval
	}{
		{"none", nil, nil},
		{"overlap", []interval.Interval{{1, 3}, {2, 6}}, []interval.Interval{{1, 6}}},
		{"touching", []interval.Interval{{5, 7}, {1, 4}}, []interval.Interval{{1, 7}}},
		{"apart", []interval.Interval{{1, 2}, {4, 5}}, []interval.Interval{{1, 2}, {4, 5}}},
		{"inside", []interval.Interval{{1, 10}, {3, 4}}, []interval.Interval{{1, 10}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := interval.Merge(c.in); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Merge(%v) = %v, want %v", c.in, got, c.want)
			}
		})
	}
}

func TestTotal(t *testing.T) {
	in := []interval.Interval{{1, 3}, {2, 5}, {10, 10}, {7, 6}}
	if got := interval.Total(in); got != 6 {
		t.Errorf("Total = %d, want 6", got)
	}
}
