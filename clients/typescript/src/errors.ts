import { errorCodes, type ErrorCode } from "./codes.js";

/**
 * An error of frond: a server's answer (its stable code, the HTTP status,
 * the message, the retry time it gave), or no answer at all (code
 * "unknown", status 0: every server unreachable or resting).
 */
export class FrondError extends Error {
  /** The code; "unknown" for one this client does not know, or no answer. */
  readonly code: ErrorCode;
  /** The code as the server sent it (also one this client does not know). */
  readonly wireCode: string;
  /** The HTTP status, or 0 when no server answered. */
  readonly status: number;
  /** The server's Retry-After in milliseconds, or 0. */
  readonly retryAfterMs: number;
  /** The server that answered, when a call knows it (else ""). */
  server: string;
  private readonly serverHint: string;

  constructor(wireCode: string, status: number, message: string, retryAfterMs = 0, options?: { cause?: unknown; hint?: string; server?: string }) {
    super(message, options);
    this.name = "FrondError";
    this.wireCode = wireCode;
    this.code = wireCode in errorCodes ? (wireCode as ErrorCode) : "unknown";
    this.status = status;
    this.retryAfterMs = retryAfterMs;
    this.serverHint = options?.hint ?? "";
    this.server = options?.server ?? "";
  }

  /** The same error (code, status, Retry-After, hint, server) said otherwise, caused by this one. */
  withMessage(message: string): FrondError {
    return new FrondError(this.wireCode, this.status, message, this.retryAfterMs, { cause: this, hint: this.serverHint, server: this.server });
  }

  /** Whether the error may pass by itself: retry later, or on another server (frond's table says so of its code). */
  get retryable(): boolean {
    if (this.code === "unknown") {
      return this.status === 0 || this.status >= 500;
    }
    return errorCodes[this.code].retryable;
  }

  /**
   * What to do: the server's hint when it sent one (an unknown keyed
   * sequence space: "create the space first ..."), else frond's table's for
   * the code ("" for an unknown code).
   */
  get hint(): string {
    if (this.serverHint) return this.serverHint;
    return this.code === "unknown" ? "" : errorCodes[this.code].hint;
  }
}
