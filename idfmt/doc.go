// Package idfmt is how frond writes IDs other than as plain numbers, for
// every protocol alike:
//
//   - Encodings (Base62, Base32): short strings for 63-bit IDs, a shortest
//     form and a fixed-width form that sorts as the numbers do;
//   - Permutation: a keyed bijection of [0, 2^Width) (FF1 under AES, or the
//     older splitmix scheme) that makes sequential IDs non-guessable while
//     the key's holder maps them back;
//   - Template: business serial numbers (a payment number's prefix, time,
//     node and zero-padded sequence) and the period key that restarts their
//     sequence.
//
// It knows nothing of where IDs come from: package service applies it to
// the IDs the engines hand out.
package idfmt
