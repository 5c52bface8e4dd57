package prefix

import "testing"

func TestPrefixEnd(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"", "", false},
		{"a", "b", true},
		{"a/", "a0", true},
		{"a\xff", "b", true},
		{"a\xff\xff", "b", true},
		{"\xfe\xff", "\xff", true},
		{"\xff", "", false},
		{"\xff\xff", "", false},
	}
	for _, tc := range tests {
		got, ok := End([]byte(tc.in))
		if string(got) != tc.want || ok != tc.ok {
			t.Errorf("End(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
