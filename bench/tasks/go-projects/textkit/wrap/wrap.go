// Package wrap breaks text into lines of at most a given width.
package wrap

import "strings"

// Wrap splits text into words and fills lines of at most width characters, greedily. A word
// longer than width is a line of its own.
func Wrap(text string, width int) []string {
	words := strings.Fields(text)
	if len(words) == 0 {
		return nil
	}
	lines := []string{}
	current := words[0]
	for _, word := range words[1:] {
		if len(current)+1+len(word) <= width {
			current += " " + word
		} else {
			lines = append(lines, current)
			current = word
		}
	}
	return append(lines, current)
}

// Indent prefixes every line with n spaces.
func Indent(lines []string, n int) []string {
	out := make([]string, 0, len(lines))
	pad := strings.Repeat(" ", n)
	for _, line := range lines {
		out = append(out, pad+line)
	}
	return out
}

// Truncate shortens s to at most max runes, ending it with "..." when it was cut.
func Truncate(s string, max int) string {
	runes := []rune(s)
	if len(runes) <= max {
		return s
	}
	if max < 3 {
		return string(runes[:max])
	}
	return string(runes[:max-3]) + "..."
}
