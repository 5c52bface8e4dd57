package chains

import (
	"errors"
	"math/big"
	"testing"
)

func TestParseAmount(t *testing.T) {
	ok := []struct {
		in   string
		dec  int
		want string
	}{
		{"1", 6, "1000000"},
		{"1.5", 6, "1500000"},
		{"0.000001", 6, "1"},
		{".5", 6, "500000"},
		{"5.", 6, "5000000"},
		{"1.500000000", 6, "1500000"},
		{"007", 0, "7"},
		{"1.000000000000000001", 18, "1000000000000000001"},
	}
	for _, c := range ok {
		v, err := ParseAmount(c.in, c.dec)
		if err != nil || v.String() != c.want {
			t.Errorf("ParseAmount(%q,%d) = %v, %v; want %s", c.in, c.dec, v, err, c.want)
		}
	}
	bad := []struct {
		in  string
		dec int
	}{
		{"", 6}, {"-1", 6}, {"0", 6}, {"0.0", 6}, {"1.0000001", 6}, {"1e6", 6}, {"1,5", 6},
		{".", 6}, {"+1", 6}, {" 1", 6}, {"1.2.3", 6}, {"0x10", 6}, {"1.5", 0},
		{"100000000000000000000000000000000000000000000000000000000000000000000000000000000", 0},
	}
	for _, c := range bad {
		if v, err := ParseAmount(c.in, c.dec); !errors.Is(err, ErrInvalidAmount) {
			t.Errorf("ParseAmount(%q,%d) = %v, %v; want ErrInvalidAmount", c.in, c.dec, v, err)
		}
	}
}

func TestFormatAmount(t *testing.T) {
	cases := []struct {
		v    int64
		dec  int
		want string
	}{
		{1500000, 6, "1.5"}, {1, 6, "0.000001"}, {0, 6, "0"}, {1000000, 6, "1"}, {12, 0, "12"}, {-15, 1, "-1.5"},
	}
	for _, c := range cases {
		if got := FormatAmount(big.NewInt(c.v), c.dec); got != c.want {
			t.Errorf("FormatAmount(%d,%d) = %q; want %q", c.v, c.dec, got, c.want)
		}
	}
	for _, s := range []string{"1.5", "0.000001", "123456.789"} {
		v, err := ParseAmount(s, 6)
		if err != nil || FormatAmount(v, 6) != s {
			t.Errorf("round trip %q: %v %v", s, v, err)
		}
	}
}

func TestAmountIn(t *testing.T) {
	cases := []struct {
		in       string
		from, to int
		want     string // "" = ErrInvalidAmount
	}{
		{"1.5", 6, 6, "1500000"},
		{"1.5", 6, 18, "1500000000000000000"},
		{"1.5", 18, 7, "15000000"},
		{"0.00000001", 18, 7, ""},
		{"0.0000001", 18, 7, "1"},
		{"12", 7, 0, "12"},
	}
	for _, c := range cases {
		a, err := ParseAmountOf(c.in, c.from)
		if err != nil {
			t.Fatal(err)
		}
		v, err := a.In(c.to)
		switch {
		case c.want == "" && !errors.Is(err, ErrInvalidAmount):
			t.Errorf("%s (%d) in %d decimals = %v, %v; want ErrInvalidAmount", c.in, c.from, c.to, v, err)
		case c.want != "" && (err != nil || v.String() != c.want):
			t.Errorf("%s (%d) in %d decimals = %v, %v; want %s", c.in, c.from, c.to, v, err, c.want)
		}
	}
}
