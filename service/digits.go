package service

import "github.com/frond-id/frond"

// Digits reads a non-negative decimal number written in digits only, as
// every protocol reads the numbers of a request (a count, a version, an
// ID): "", "+5", " 5", "5;x" and "0x5" are refused, not read as a default;
// leading zeros are allowed; a number past int64 is refused. It is
// frond.ParseID's rule, without its error.
func Digits(raw string) (int64, bool) {
	n, err := frond.ParseID(raw)
	return int64(n), err == nil
}
