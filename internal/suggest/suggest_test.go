package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"http-adr", "http-addr", 1}, {"thresold", "threshold", 1}, {"sgement", "segment", 1},
		{"ab", "ba", 1}, {"abc", "abc", 0}, {"größe", "grösse", 2},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestNearest(t *testing.T) {
	flags := []string{"http-addr", "grpc-addr", "resp-addr", "store", "node", "config"}
	for _, tc := range []struct{ word, want string }{
		{"http-adr", "http-addr"}, {"htp-addr", "http-addr"}, {"stroe", "store"}, {"confg", "config"},
		{"nod", ""}, // 1 edit of 3 letters: too short to guess
		{"port", ""}, {"http-addr", ""}, {"", ""},
	} {
		got, ok := Nearest(tc.word, flags)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("Nearest(%q) = %q, %v; want %q", tc.word, got, ok, tc.want)
		}
	}
}
