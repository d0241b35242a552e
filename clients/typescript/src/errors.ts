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

  constructor(wireCode: string, status: number, message: string, retryAfterMs = 0, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "FrondError";
    this.wireCode = wireCode;
    this.code = wireCode in errorCodes ? (wireCode as ErrorCode) : "unknown";
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }

  /** Whether the error may pass by itself: retry later, or on another server (frond's table says so of its code). */
  get retryable(): boolean {
    if (this.code === "unknown") {
      return this.status === 0 || this.status >= 500;
    }
    return errorCodes[this.code].retryable;
  }

  /** What to do, as frond's table says ("" for an unknown code). */
  get hint(): string {
    return this.code === "unknown" ? "" : errorCodes[this.code].hint;
  }
}
