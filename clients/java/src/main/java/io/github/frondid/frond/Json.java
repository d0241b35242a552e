package io.github.frondid.frond;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small, strict JSON reader for frond's answers (the client has no
 * dependency). Objects are {@code Map<String, Object>}, arrays
 * {@code List<Object>}, strings {@code String}, true and false
 * {@code Boolean}, null {@code null}; a number without a fraction or
 * exponent is a {@code Long} when it fits (every 64-bit ID exactly), a
 * {@code BigInteger} when it does not, otherwise a {@code Double}.
 * Anything else (trailing data, a control character in a string, nesting
 * past 64 levels, a lone surrogate escape is kept as is) throws
 * {@link IllegalArgumentException}.
 */
final class Json {
    private static final int MAX_DEPTH = 64;

    private final String s;
    private int i;

    private Json(String s) {
        this.s = s;
    }

    /** Parses one JSON value, the whole of text. */
    static Object parse(String text) {
        Json j = new Json(text);
        j.space();
        Object v = j.value(0);
        j.space();
        if (j.i != j.s.length()) {
            throw j.error("data after the value");
        }
        return v;
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("JSON: " + what + " at offset " + i);
    }

    private void space() {
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            i++;
        }
    }

    private Object value(int depth) {
        if (depth > MAX_DEPTH) {
            throw error("nesting deeper than " + MAX_DEPTH);
        }
        if (i >= s.length()) {
            throw error("end of input");
        }
        char c = s.charAt(i);
        switch (c) {
            case '{':
                return object(depth);
            case '[':
                return array(depth);
            case '"':
                return string();
            case 't':
                return word("true", Boolean.TRUE);
            case 'f':
                return word("false", Boolean.FALSE);
            case 'n':
                return word("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("unexpected '" + c + "'");
        }
    }

    private Object word(String w, Object v) {
        if (!s.startsWith(w, i)) {
            throw error("bad literal");
        }
        i += w.length();
        return v;
    }

    private Map<String, Object> object(int depth) {
        Map<String, Object> m = new LinkedHashMap<>();
        i++; // {
        space();
        if (i < s.length() && s.charAt(i) == '}') {
            i++;
            return m;
        }
        while (true) {
            space();
            if (i >= s.length() || s.charAt(i) != '"') {
                throw error("want a key");
            }
            String k = string();
            space();
            if (i >= s.length() || s.charAt(i) != ':') {
                throw error("want ':'");
            }
            i++;
            space();
            m.put(k, value(depth + 1));
            space();
            if (i >= s.length()) {
                throw error("end of input in an object");
            }
            char c = s.charAt(i++);
            if (c == '}') {
                return m;
            }
            if (c != ',') {
                throw error("want ',' or '}'");
            }
        }
    }

    private List<Object> array(int depth) {
        List<Object> l = new ArrayList<>();
        i++; // [
        space();
        if (i < s.length() && s.charAt(i) == ']') {
            i++;
            return l;
        }
        while (true) {
            space();
            l.add(value(depth + 1));
            space();
            if (i >= s.length()) {
                throw error("end of input in an array");
            }
            char c = s.charAt(i++);
            if (c == ']') {
                return l;
            }
            if (c != ',') {
                throw error("want ',' or ']'");
            }
        }
    }

    private String string() {
        i++; // "
        StringBuilder b = null;
        int start = i;
        while (true) {
            if (i >= s.length()) {
                throw error("end of input in a string");
            }
            char c = s.charAt(i);
            if (c == '"') {
                String out = b == null ? s.substring(start, i) : b.append(s, start, i).toString();
                i++;
                return out;
            }
            if (c < 0x20) {
                throw error("control character in a string");
            }
            if (c != '\\') {
                i++;
                continue;
            }
            if (b == null) {
                b = new StringBuilder();
            }
            b.append(s, start, i);
            i++;
            if (i >= s.length()) {
                throw error("end of input in an escape");
            }
            char e = s.charAt(i++);
            switch (e) {
                case '"': b.append('"'); break;
                case '\\': b.append('\\'); break;
                case '/': b.append('/'); break;
                case 'b': b.append('\b'); break;
                case 'f': b.append('\f'); break;
                case 'n': b.append('\n'); break;
                case 'r': b.append('\r'); break;
                case 't': b.append('\t'); break;
                case 'u':
                    if (i + 4 > s.length()) {
                        throw error("short \\u escape");
                    }
                    int cp = 0;
                    for (int k = 0; k < 4; k++) {
                        int d = Character.digit(s.charAt(i + k), 16);
                        if (d < 0) {
                            throw error("bad \\u escape");
                        }
                        cp = cp * 16 + d;
                    }
                    i += 4;
                    b.append((char) cp);
                    break;
                default:
                    throw error("bad escape \\" + e);
            }
            start = i;
        }
    }

    private Object number() {
        int start = i;
        if (s.charAt(i) == '-') {
            i++;
        }
        int digits = i;
        while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
            i++;
        }
        if (i == digits || (s.charAt(digits) == '0' && i - digits > 1)) {
            throw error("bad number");
        }
        boolean integer = true;
        if (i < s.length() && s.charAt(i) == '.') {
            integer = false;
            i++;
            int f = i;
            while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
                i++;
            }
            if (i == f) {
                throw error("bad fraction");
            }
        }
        if (i < s.length() && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
            integer = false;
            i++;
            if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-')) {
                i++;
            }
            int x = i;
            while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
                i++;
            }
            if (i == x) {
                throw error("bad exponent");
            }
        }
        String n = s.substring(start, i);
        if (!integer) {
            return Double.parseDouble(n);
        }
        BigInteger v = new BigInteger(n);
        return v.bitLength() < 64 ? (Object) v.longValue() : v;
    }

    // Typed access to an answer's fields.

    @SuppressWarnings("unchecked")
    static Map<String, Object> object(Object v, String what) {
        if (!(v instanceof Map)) {
            throw new IllegalArgumentException("frond's answer: " + what + " is not an object");
        }
        return (Map<String, Object>) v;
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Map<String, Object> m, String key) {
        Object v = m.get(key);
        if (!(v instanceof List)) {
            throw new IllegalArgumentException("frond's answer: no list \"" + key + "\"");
        }
        return (List<Object>) v;
    }

    static long getLong(Map<String, Object> m, String key) {
        Object v = m.get(key);
        if (!(v instanceof Long)) {
            throw new IllegalArgumentException("frond's answer: no 64-bit integer \"" + key + "\"");
        }
        return (Long) v;
    }

    static String getString(Map<String, Object> m, String key) {
        Object v = m.get(key);
        return v instanceof String ? (String) v : null;
    }
}
