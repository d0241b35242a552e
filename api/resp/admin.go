package resp

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/redcon"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/service"
)

// admitted reports whether the connection may run an admin command (see
// mayAdmin); if not, it answers UNAUTHORIZED or FORBIDDEN.
func (s *Server) admitted(c redcon.Conn) bool {
	if err := s.mayAdmin(c); err != nil {
		s.writeErr(c, err)
		return false
	}
	return true
}

// mayAdmin is the rule of who may administer tags and read their details:
// the connection gave the admin token (AUTH), or none is configured and
// the client is on this machine.
func (s *Server) mayAdmin(c redcon.Conn) error {
	if s.o.AdminToken == "" {
		return api.AdminWithoutToken(c.RemoteAddr())
	}
	if sess(c).authed {
		return nil
	}
	return &api.Error{Code: frond.CodeUnauthorized, Msg: "this command needs the admin token: send AUTH <token> first"}
}

// tag runs TAG LIST | GET name | CREATE name STEP s [MAXID m] [DESCRIPTION d] [MODE segment|sequence]
// | UPDATE name [STEP s] [MAXID m] [DESCRIPTION d] | DELETE name.
// (LIST takes [AFTER name] [COUNT n]: see listArgs.)
func (s *Server) tag(c redcon.Conn, args [][]byte) {
	if !s.admitted(c) {
		return
	}
	ctx, cancel := s.ctx()
	defer cancel()
	sub := strings.ToUpper(string(args[1]))
	if sub == "LIST" {
		// TAG LIST [AFTER name] [COUNT n]: a page of tags by name; a full
		// page may have more, asked for with AFTER its last name.
		after, count, err := listArgs(args[2:])
		var tags []frond.Tag
		if err == nil {
			tags, _, err = s.svc.TagPage(ctx, after, count)
		}
		if err != nil {
			s.writeErr(c, err)
			return
		}
		c.WriteArray(len(tags))
		for _, t := range tags {
			writeTag(c, t)
		}
		return
	}
	if len(args) < 3 {
		c.WriteError(fmt.Sprintf("ERR wrong number of arguments for 'tag|%s' command", strings.ToLower(quote(args[1]))))
		return
	}
	name := string(args[2])
	var t frond.Tag
	var err error
	switch sub {
	case "GET":
		if len(args) != 3 {
			c.WriteError("ERR wrong number of arguments for 'tag|get' command")
			return
		}
		t, err = s.svc.Tag(ctx, name)
	case "CREATE", "UPDATE":
		var u frond.TagUpdate
		var mode string
		if u, mode, err = tagOptions(args[3:], sub == "CREATE"); err != nil {
			break
		}
		if sub == "UPDATE" {
			t, err = s.svc.UpdateTag(ctx, name, u)
			break
		}
		if u.Step == nil {
			err = fmt.Errorf("%w: STEP is required", frond.ErrInvalidArgument)
			break
		}
		t = frond.Tag{Name: name, MaxID: 1, Step: *u.Step, Mode: mode}
		if u.Mapping != nil {
			t.Mapping = *u.Mapping
		}
		if u.MaxID != nil {
			t.MaxID = *u.MaxID
		}
		if u.Description != nil {
			t.Description = *u.Description
		}
		t, err = s.svc.CreateTag(ctx, t)
	case "DELETE":
		if len(args) != 3 {
			c.WriteError("ERR wrong number of arguments for 'tag|delete' command")
			return
		}
		if err = s.svc.DeleteTag(ctx, name); err == nil {
			c.WriteString("OK")
			return
		}
	default:
		c.WriteError(fmt.Sprintf("ERR unknown subcommand '%s': LIST, GET, CREATE, UPDATE or DELETE", quote(args[1])))
		return
	}
	if err != nil {
		s.writeErr(c, err)
		return
	}
	writeTag(c, t)
}

// tagOptions reads STEP, MAXID, DESCRIPTION and MAPPING, and MODE when
// creating (a tag's mode is fixed for its life).
func tagOptions(args [][]byte, create bool) (frond.TagUpdate, string, error) {
	var u frond.TagUpdate
	allowed := []string{"STEP", "MAXID", "DESCRIPTION", "MAPPING"}
	if create {
		allowed = append(allowed, "MODE")
	}
	opts, err := options(args, allowed...)
	if err != nil {
		return u, "", err
	}
	for _, k := range []string{"STEP", "MAXID"} {
		v, ok := opts[k]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return u, "", fmt.Errorf("%w: %s %q: a whole number", frond.ErrInvalidArgument, k, quote([]byte(v)))
		}
		if k == "STEP" {
			u.Step = &n
		} else {
			u.MaxID = &n
		}
	}
	if d, ok := opts["DESCRIPTION"]; ok {
		u.Description = &d
	}
	if m, ok := opts["MAPPING"]; ok {
		m = strings.ToLower(m)
		u.Mapping = &m
	}
	return u, strings.ToLower(opts["MODE"]), nil
}

// writeTag answers a tag as field-value pairs, as HGETALL does.
func writeTag(c redcon.Conn, t frond.Tag) {
	c.WriteArray(14)
	c.WriteBulkString("name")
	c.WriteBulkString(t.Name)
	c.WriteBulkString("max_id")
	c.WriteInt64(t.MaxID)
	c.WriteBulkString("step")
	c.WriteInt64(t.Step)
	c.WriteBulkString("description")
	c.WriteBulkString(t.Description)
	c.WriteBulkString("updated_at")
	c.WriteBulkString(t.UpdatedAt.UTC().Format(time.RFC3339Nano))
	c.WriteBulkString("mode")
	c.WriteBulkString(t.ModeName())
	c.WriteBulkString("mapping")
	c.WriteBulkString(t.MappingName())
}

// reveal runs REVEAL kind form value [key_version] [PREFIX p] [TAG t]: the
// ID behind a formatted one, under the obfuscation key of that version
// (default: the current key), as an integer; a TypeID's UUID (kind uuid)
// as a bulk string.
func (s *Server) reveal(c redcon.Conn, args [][]byte) {
	if !s.admitted(c) {
		return
	}
	in := service.RevealRequest{Kind: string(args[1]), Form: string(args[2]), Value: string(args[3])}
	rest := args[4:]
	if len(rest)%2 == 1 {
		v, err := strconv.Atoi(string(rest[0]))
		if err != nil || v < 0 {
			s.writeErr(c, fmt.Errorf("%w: key version %s: a whole number, 0 for the current key", frond.ErrInvalidArgument, service.Quote(string(rest[0]))))
			return
		}
		in.KeyVersion, rest = v, rest[1:]
	}
	opts, err := options(rest, "PREFIX", "TAG")
	if err != nil {
		s.writeErr(c, err)
		return
	}
	in.Prefix, in.Tag = opts["PREFIX"], opts["TAG"]
	out, err := s.svc.Reveal(in)
	if err != nil {
		s.writeErr(c, err)
		return
	}
	if out.UUID != "" {
		c.WriteBulkString(out.UUID)
		return
	}
	c.WriteInt64(out.ID)
}

// listArgs reads TAG LIST's options: AFTER name (the page after that name)
// and COUNT n (1 to service.MaxTagPage; service.DefaultTagPage when absent).
func listArgs(args [][]byte) (after string, count int, err error) {
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return "", 0, fmt.Errorf("%w: TAG LIST [AFTER name] [COUNT n]: %s needs a value", frond.ErrInvalidArgument, quote(args[i]))
		}
		switch strings.ToUpper(string(args[i])) {
		case "AFTER":
			after = string(args[i+1])
		case "COUNT":
			n, ok := service.Digits(string(args[i+1]))
			if !ok || n < 1 || n > service.MaxTagPage {
				return "", 0, fmt.Errorf("%w: COUNT %s: must be a whole number from 1 to %d", frond.ErrInvalidArgument, quote(args[i+1]), service.MaxTagPage)
			}
			count = int(n)
		default:
			return "", 0, fmt.Errorf("%w: TAG LIST [AFTER name] [COUNT n]: unknown option %s", frond.ErrInvalidArgument, quote(args[i]))
		}
	}
	return after, count, nil
}

// space: SPACE CREATE name [STEP s] [SECTIONS n] [SLOTS n] | SPACE LIST
// (admin): keyed sequence spaces. CREATE answers the space as a flat map
// (name, step, sections, slots); LIST one per space, with this node's
// view (held: the sections it serves; members: the nodes sharing it).
func (s *Server) space(c redcon.Conn, args [][]byte) {
	if !s.admitted(c) {
		return
	}
	ctx, cancel := s.ctx()
	defer cancel()
	switch sub := strings.ToUpper(string(args[1])); {
	case sub == "LIST" && len(args) == 2:
		list, err := s.svc.ListSpaces(ctx)
		if err != nil {
			s.writeErr(c, err)
			return
		}
		c.WriteArray(len(list))
		for _, st := range list {
			writeSpace(c, st.Space, len(st.Held), st.Members)
		}
	case sub == "CREATE" && len(args) >= 3:
		opts, err := options(args[3:], "STEP", "SECTIONS", "SLOTS")
		sp := keyseq.Space{Name: string(args[2])}
		for k, v := range opts {
			n, ok := service.Digits(v)
			if !ok || n < 1 {
				err = fmt.Errorf("%w: %s %q: a whole number from 1", frond.ErrInvalidArgument, k, quote([]byte(v)))
				break
			}
			switch k {
			case "STEP":
				sp.Step = n
			case "SECTIONS":
				sp.Sections = int(min(n, 1<<30))
			case "SLOTS":
				sp.Slots = int(min(n, 1<<30))
			}
		}
		if err == nil {
			sp, err = s.svc.CreateSpace(ctx, sp)
		}
		if err != nil {
			s.writeErr(c, err)
			return
		}
		writeSpace(c, sp, -1, -1)
	default:
		c.WriteError(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for 'space|%s': SPACE CREATE name [STEP s] [SECTIONS n] [SLOTS n] | SPACE LIST", strings.ToLower(quote(args[1]))))
	}
}

// writeSpace writes a space as a flat map; held and members (this node's
// view) when not negative.
func writeSpace(c redcon.Conn, sp keyseq.Space, held, members int) {
	n := 8
	if held >= 0 {
		n = 12
	}
	c.WriteArray(n)
	c.WriteBulkString("name")
	c.WriteBulkString(sp.Name)
	c.WriteBulkString("step")
	c.WriteInt64(sp.Step)
	c.WriteBulkString("sections")
	c.WriteInt(sp.Sections)
	c.WriteBulkString("slots")
	c.WriteInt(sp.Slots)
	if held >= 0 {
		c.WriteBulkString("held")
		c.WriteInt(held)
		c.WriteBulkString("members")
		c.WriteInt(members)
	}
}
