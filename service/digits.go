package api

import "strconv"

// Digits reads a non-negative decimal number written in digits only, as
// every protocol reads the numbers of a request (a count, a version, an
// ID): "", "+5", " 5", "5;x" and "0x5" are refused, not read as a default;
// leading zeros are allowed; a number past int64 is refused.
func Digits(raw string) (int64, bool) {
	if raw == "" {
		return 0, false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	return n, err == nil
}
