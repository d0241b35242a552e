package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/knadh/koanf/v2"

	"github.com/frond-id/frond/internal/suggest"
)

// A key's name pattern: "*" stands for a name of the user's (a serial, a tag).
type keyInfo struct {
	pattern []string
	typ     reflect.Type
}

// keyInfos lists the keys of Config from its koanf tags, walking sections
// (structs) and named entries (maps).
func keyInfos() []keyInfo {
	var out []keyInfo
	var walk func(t reflect.Type, prefix []string)
	walk = func(t reflect.Type, prefix []string) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("koanf")
			if tag == "" {
				continue
			}
			p := append(append([]string(nil), prefix...), tag)
			switch {
			case f.Type.Kind() == reflect.Struct:
				walk(f.Type, p)
			case f.Type.Kind() == reflect.Map && f.Type.Elem().Kind() == reflect.Struct:
				walk(f.Type.Elem(), append(p, "*"))
			case f.Type.Kind() == reflect.Map:
				out = append(out, keyInfo{append(p, "*"), f.Type.Elem()})
			default:
				out = append(out, keyInfo{p, f.Type})
			}
		}
	}
	walk(reflect.TypeFor[Config](), nil)
	return out
}

// match reports whether the first len(pattern) parts of key match pattern.
func match(pattern, key []string) bool {
	if len(key) < len(pattern) {
		return false
	}
	for i, p := range pattern {
		if p != "*" && p != key[i] {
			return false
		}
	}
	return true
}

// checkKeys refuses unknown keys and values that are not of their key's
// type, in words rather than Go types. source says where a key was set.
func checkKeys(k *koanf.Koanf, source func(key string) string) error {
	infos := keyInfos()
	for _, key := range k.Keys() {
		parts := strings.Split(key, ".")
		var info *keyInfo
		for i := range infos {
			if match(infos[i].pattern, parts) {
				info = &infos[i]
				break
			}
		}
		if info == nil {
			// A section given a value ("segment: 5") or a key no one knows.
			for _, in := range infos {
				if len(in.pattern) > len(parts) && match(in.pattern[:len(parts)], parts) {
					return keyErr(fmt.Errorf("%q is not a section of keys", fmt.Sprint(k.Get(key))), key)
				}
			}
			hint := "the keys are listed in docs/configuration.md"
			if near, ok := suggest.Nearest(key, keyNames(infos, parts)); ok {
				hint = fmt.Sprintf("did you mean %q? The keys are listed in docs/configuration.md", near)
			}
			return fmt.Errorf("%w: unknown key %q %s (%s)", ErrInvalid, key, source(key), hint)
		}
		leaf := strings.Join(parts[:len(info.pattern)], ".")
		if len(parts) > len(info.pattern) {
			return keyErr(fmt.Errorf("is a section of keys, not %s", article(info.typ)), leaf)
		}
		if err := checkValue(k.Get(key), info.typ); err != nil {
			return keyErr(err, leaf)
		}
	}
	return nil
}

// keyNames are the keys of infos as they would be written where parts is
// (a map's key, "*" in a pattern, taken from parts), for suggestions.
func keyNames(infos []keyInfo, parts []string) []string {
	var out []string
	for _, in := range infos {
		name := make([]string, len(in.pattern))
		for i, p := range in.pattern {
			if p == "*" && i < len(parts) {
				p = parts[i]
			}
			name[i] = p
		}
		out = append(out, strings.Join(name, "."))
	}
	return out
}

// article describes a type: "a whole number", "a duration", ...
func article(t reflect.Type) string {
	if t == reflect.TypeFor[time.Duration]() {
		return "a duration (a number and a unit: 500ms, 10s, 15m)"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Uint:
		return "a whole number from 0"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	}
	return "a text"
}

func checkValue(v any, t reflect.Type) error {
	if v == nil {
		return nil // an empty value: zero
	}
	if t.Kind() == reflect.Slice {
		list, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%q is not a list (write [a, b])", fmt.Sprint(v))
		}
		for _, e := range list {
			if err := checkValue(e, t.Elem()); err != nil {
				return fmt.Errorf("in the list: %w", err)
			}
		}
		return nil
	}
	if k := reflect.TypeOf(v).Kind(); k == reflect.Slice || k == reflect.Map {
		return fmt.Errorf("a list or section is not %s", article(t))
	}
	s := fmt.Sprint(v)
	var err error
	switch {
	case t == reflect.TypeFor[time.Duration]():
		_, err = time.ParseDuration(s)
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		_, err = strconv.ParseInt(s, 10, 64)
	case t.Kind() == reflect.Uint:
		_, err = strconv.ParseUint(s, 10, 64)
	case t.Kind() == reflect.Float64:
		_, err = strconv.ParseFloat(s, 64)
	case t.Kind() == reflect.Bool:
		_, err = strconv.ParseBool(s)
	}
	if err != nil {
		return fmt.Errorf("%q is not %s", s, article(t))
	}
	return nil
}
