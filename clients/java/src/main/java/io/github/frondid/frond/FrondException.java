package io.github.frondid.frond;

/**
 * An error of frond: a server's answer (its stable {@link ErrorCode}, the
 * HTTP status, the message, and the retry time it gave), or no answer at
 * all ({@link ErrorCode#UNKNOWN} with status 0: every server unreachable or
 * resting). {@link #retryable()} says whether trying again later may
 * succeed.
 */
public class FrondException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;
    private final String wire;
    private final int status;
    private final long retryAfterMillis;
    private final String serverHint;
    private volatile String server = "";

    /** An error a server answered (or, with status 0, none did). */
    public FrondException(ErrorCode code, String wire, int status, String message, long retryAfterMillis, Throwable cause) {
        this(code, wire, status, message, retryAfterMillis, cause, "");
    }

    /** An error a server answered with its own hint (the error body's {@code hint}). */
    public FrondException(ErrorCode code, String wire, int status, String message, long retryAfterMillis, Throwable cause, String hint) {
        super(message, cause);
        this.code = code;
        this.wire = wire == null ? code.wire() : wire;
        this.status = status;
        this.retryAfterMillis = retryAfterMillis;
        this.serverHint = hint == null ? "" : hint;
    }

    /** The same error (code, status, Retry-After, hint, server) said otherwise, caused by this one. */
    FrondException withMessage(String message) {
        FrondException e = new FrondException(code, wire, status, message, retryAfterMillis, this, serverHint);
        e.server = server;
        return e;
    }

    /**
     * What to do: the server's hint when it sent one (an unknown keyed sequence space: "create the space
     * first ..."), else frond's table's for the code ("" for {@link ErrorCode#UNKNOWN}).
     */
    public String hint() {
        if (!serverHint.isEmpty()) {
            return serverHint;
        }
        return code == ErrorCode.UNKNOWN ? "" : code.hint();
    }

    /** The server that answered, when the call knows it (else ""). */
    public String server() {
        return server;
    }

    void server(String base) {
        this.server = base;
    }

    /** The code ({@link ErrorCode#UNKNOWN} for one this client does not know, or no answer). */
    public ErrorCode code() {
        return code;
    }

    /** The code as the server sent it (also one this client does not know). */
    public String wireCode() {
        return wire;
    }

    /** The HTTP status, or 0 when no server answered. */
    public int status() {
        return status;
    }

    /** The server's Retry-After in milliseconds, or 0. */
    public long retryAfterMillis() {
        return retryAfterMillis;
    }

    /**
     * Whether the error may pass by itself (frond's table says so of its
     * code; no answer at all may too).
     */
    public boolean retryable() {
        return code == ErrorCode.UNKNOWN ? status == 0 || status >= 500 : code.retryable();
    }

    @Override
    public String toString() {
        return "FrondException(" + (wire.isEmpty() ? "no answer" : wire) + (status != 0 ? ", " + status : "") + "): " + getMessage();
    }
}
