// Code generated from frond.ErrorCodes (codes.go) by TestClientErrorCodes
// (go test -run TestClientErrorCodes -update-clients .); DO NOT EDIT.

/** One of frond's stable error codes: what a server answers with, whether a retry may succeed, what to do. */
export interface CodeInfo {
  readonly retryable: boolean;
  readonly hint: string;
}

/** frond's stable error codes, one table for every protocol and client (codes.go). */
export const errorCodes = {
  invalid_argument: { retryable: false, hint: "fix the request" },
  tag_not_found: { retryable: false, hint: "create the tag first (frond tag create, or the tag administration of docs/api.md)" },
  serial_not_found: { retryable: false, hint: "configure it under serials: in the server's configuration (docs/kinds.md)" },
  tag_exists: { retryable: false, hint: "pick another name, or update the tag" },
  would_reissue: { retryable: false, hint: "max_id can only be raised" },
  tag_exhausted: { retryable: false, hint: "the tag has used up 63 bits; use a new tag" },
  sequence_overflow: { retryable: false, hint: "the serial's sequence outgrew {seq:W} this period: widen it or reset more often" },
  not_leasable: { retryable: false, hint: "take the IDs of a sequence tag request by request (the Go client does this by itself)" },
  form_not_carried: { retryable: false, hint: "ask for the tag's IDs where its form is answered: GET /v1/segment/{tag}, gRPC NextSegment, RESP SEGMENT, the Go client's NextStrings (docs/kinds.md#forms-across-protocols)" },
  store_unavailable: { retryable: true, hint: "retry later; check the segment store (see /readyz)" },
  store_lost_data: { retryable: false, hint: "the store lost acknowledged writes (a fail-over to a replica behind, a restored backup, a Redis restarted empty): nothing is handed out from it until it is re-armed above every ID and value handed out (frond stores rearm for segment tags, frond space rearm for a keyed sequence space; docs/operations.md#a-store-that-went-back)" },
  clock_backwards: { retryable: true, hint: "retry later; check the clock (NTP) if this persists (see /readyz)" },
  clock_skew: { retryable: true, hint: "fix this node's clock (NTP); it retries by itself (see /readyz)" },
  registry_behind: { retryable: true, hint: "retry later; check the worker registry (see /readyz)" },
  worker_unavailable: { retryable: true, hint: "retry later; check the worker registry (see /readyz); segment IDs are not affected" },
  no_worker_id: { retryable: true, hint: "free a worker ID or configure another one" },
  layout_expired: { retryable: false, hint: "the snowflake layout's time field has run out: configure a layout with a later epoch" },
  unavailable: { retryable: true, hint: "retry" },
  forbidden: { retryable: false, hint: "send a token that allows the tag (token parameter, X-Frond-Token header, x-frond-token metadata, RESP TOKEN; docs/tinyid.md)" },
  unauthorized: { retryable: false, hint: "" },
  not_found: { retryable: false, hint: "" },
  method_not_allowed: { retryable: false, hint: "" },
  request_too_large: { retryable: false, hint: "" },
  rate_limited: { retryable: false, hint: "" },
  internal: { retryable: false, hint: "report this: it is a bug" },
  overloaded: { retryable: true, hint: "retry in a moment, with a smaller batch, or on another node: the node's answers not yet read by their clients fill its budget (limits.answer_budget)" },
} as const satisfies Record<string, CodeInfo>;

/** A code of frond's table; "unknown" is one this client does not know (a newer server's), or no answer at all. */
export type ErrorCode = keyof typeof errorCodes | "unknown";
