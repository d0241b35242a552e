package io.github.frondid.frond;

/** IDs {@code start, start+stride, ...} below {@code end} (exclusive): {@code count} of them. */
public final class Range {
    public final long start, end, stride, count;

    public Range(long start, long end, long stride, long count) {
        if (stride < 1 || count < 0 || (count > 0 && start + (count - 1) * stride >= end)) {
            throw new IllegalArgumentException("range " + start + ".." + end + " by " + stride + " cannot hold " + count + " IDs");
        }
        this.start = start;
        this.end = end;
        this.stride = stride;
        this.count = count;
    }

    /** The i-th ID (0 &le; i &lt; count). */
    public long at(long i) {
        return start + i * stride;
    }

    @Override
    public String toString() {
        return stride == 1 ? "[" + start + ", " + end + ")" : "[" + start + ", " + end + ") by " + stride;
    }
}
