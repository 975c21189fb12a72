package wrap

import (
	"reflect"
	"testing"
)

func TestWrap(t *testing.T) {
	cases := []struct {
		name  string
		text  string
		width int
		want  []string
	}{
		{"empty", "   ", 10, nil},
		{"fits", "a bc", 4, []string{"a bc"}},
		{"breaks", "the quick brown fox", 9, []string{"the quick", "brown fox"}},
		{"long word", "a supercalifragilistic b", 5, []string{"a", "supercalifragilistic", "b"}},
		{"exact", "ab cd ef", 5, []string{"ab cd", "ef"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Wrap(c.text, c.width); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Wrap(%q, %d) = %q, want %q", c.text, c.width, got, c.want)
			}
		})
	}
}

func TestIndent(t *testing.T) {
	got := Indent([]string{"a", "b"}, 2)
	if !reflect.DeepEqual(got, []string{"  a", "  b"}) {
		t.Errorf("Indent = %q", got)
	}
}

func TestTruncate(t *testing.T) {
	cases := []struct {
		s    string
		max  int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello world", 8, "hello..."},
		{"héllo wörld", 7, "héll..."},
		{"hello", 2, "he"},
	}
	for _, c := range cases {
		if got := Truncate(c.s, c.max); got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.s, c.max, got, c.want)
		}
	}
}
