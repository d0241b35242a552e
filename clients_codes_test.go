package frond_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/frond-id/frond"
)

var updateClients = flag.Bool("update-clients", false, "rewrite the client libraries' tables of error codes from frond.ErrorCodes")

// javaErrorCodes is the Java client's ErrorCode enum, generated from
// frond's one table of error codes.
func javaErrorCodes() string {
	var b strings.Builder
	b.WriteString(`// Code generated from frond.ErrorCodes (codes.go) by TestClientErrorCodes
// (go test -run TestClientErrorCodes -update-clients .); DO NOT EDIT.

package io.github.frondid.frond;

/**
 * frond's stable error codes, one table for every protocol and client
 * (codes.go): the code a server answers with, whether a retry may succeed,
 * and what to do.
 */
public enum ErrorCode {
`)
	for _, c := range frond.ErrorCodes() {
		hint := c.Hint
		if hint == "" {
			hint = "(no hint: the message says it)"
		}
		fmt.Fprintf(&b, "    /** %s */\n    %s(%q, %v, %q),\n", strings.ReplaceAll(hint, "*/", "* /"), strings.ToUpper(c.Name), c.Name, c.Retryable, c.Hint)
	}
	b.WriteString(`    /** A code this client does not know (a newer server's), or no answer of a server at all. */
    UNKNOWN("", false, "");

    private final String wire;
    private final boolean retryable;
    private final String hint;

    ErrorCode(String wire, boolean retryable, String hint) {
        this.wire = wire;
        this.retryable = retryable;
        this.hint = hint;
    }

    /** The code as servers send it ("tag_not_found"). */
    public String wire() {
        return wire;
    }

    /** Whether the error may pass by itself: retry later, or on another server. */
    public boolean retryable() {
        return retryable;
    }

    /** What to do, as frond's table says. */
    public String hint() {
        return hint;
    }

    /** The code named wire, or UNKNOWN. */
    public static ErrorCode of(String wire) {
        for (ErrorCode c : values()) {
            if (c.wire.equals(wire) && c != UNKNOWN) {
                return c;
            }
        }
        return UNKNOWN;
    }
}
`)
	return b.String()
}

// typescriptErrorCodes is the TypeScript client's table of codes.
func typescriptErrorCodes() string {
	var b strings.Builder
	b.WriteString(`// Code generated from frond.ErrorCodes (codes.go) by TestClientErrorCodes
// (go test -run TestClientErrorCodes -update-clients .); DO NOT EDIT.

/** One of frond's stable error codes: what a server answers with, whether a retry may succeed, what to do. */
export interface CodeInfo {
  readonly retryable: boolean;
  readonly hint: string;
}

/** frond's stable error codes, one table for every protocol and client (codes.go). */
export const errorCodes = {
`)
	for _, c := range frond.ErrorCodes() {
		fmt.Fprintf(&b, "  %s: { retryable: %v, hint: %q },\n", c.Name, c.Retryable, c.Hint)
	}
	b.WriteString(`} as const satisfies Record<string, CodeInfo>;

/** A code of frond's table; "unknown" is one this client does not know (a newer server's), or no answer at all. */
export type ErrorCode = keyof typeof errorCodes | "unknown";
`)
	return b.String()
}

// pythonErrorCodes is the Python client's table of codes.
func pythonErrorCodes() string {
	var b strings.Builder
	b.WriteString(`# Code generated from frond.ErrorCodes (codes.go) by TestClientErrorCodes
# (go test -run TestClientErrorCodes -update-clients .); DO NOT EDIT.
"""frond's stable error codes, one table for every protocol and client
(codes.go): the code a server answers with, whether a retry may succeed,
and what to do."""

import enum


class ErrorCode(str, enum.Enum):
    """One of frond's stable error codes; UNKNOWN is one this client does not
    know (a newer server's), or no answer of a server at all."""

`)
	for _, c := range frond.ErrorCodes() {
		fmt.Fprintf(&b, "    %s = %q\n", strings.ToUpper(c.Name), c.Name)
	}
	b.WriteString(`    UNKNOWN = ""

    @classmethod
    def of(cls, wire: str) -> "ErrorCode":
        """The code named wire, or UNKNOWN."""
        try:
            return cls(wire) if wire else cls.UNKNOWN
        except ValueError:
            return cls.UNKNOWN


# By code: whether a retry may succeed, and what to do.
ERROR_CODES = {
`)
	for _, c := range frond.ErrorCodes() {
		retry := "False"
		if c.Retryable {
			retry = "True"
		}
		fmt.Fprintf(&b, "    %q: (%s, %q),\n", c.Name, retry, c.Hint)
	}
	b.WriteString("}\n")
	return b.String()
}

// The client libraries' tables of error codes are frond.ErrorCodes: they
// are generated from it, and this test fails when one has drifted (a code
// added, a retry rule changed) until -update-clients writes it again.
func TestClientErrorCodes(t *testing.T) {
	for path, want := range map[string]string{
		"clients/java/src/main/java/io/github/frondid/frond/ErrorCode.java": javaErrorCodes(),
		"clients/typescript/src/codes.ts":                                   typescriptErrorCodes(),
		"clients/python/src/frond_client/codes.py":                          pythonErrorCodes(),
	} {
		if *updateClients {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s is not frond.ErrorCodes' table (%v): go test -run TestClientErrorCodes -update-clients .", path, err)
		}
	}
}
