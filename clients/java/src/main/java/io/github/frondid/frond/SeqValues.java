package io.github.frondid.frond;

/**
 * Values of a key in a keyed sequence space: {@code first} to {@code last}, each above every value the key was
 * given before (docs/sequences.md).
 */
public final class SeqValues {
    public final String space, key;
    public final long first, last;

    public SeqValues(String space, String key, long first, long last) {
        if (last < first) {
            throw new IllegalArgumentException("values " + first + " to " + last);
        }
        this.space = space;
        this.key = key;
        this.first = first;
        this.last = last;
    }

    /** How many values: last - first + 1. */
    public long count() {
        return last - first + 1;
    }

    @Override
    public String toString() {
        return space + "/" + key + ": " + first + ".." + last;
    }
}
