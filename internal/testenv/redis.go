package testenv

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RedisServer is a redis-server of a test's own, with an AOF synced on
// every write (the shared test Redis runs without persistence, and its
// configuration is not a test's to change), that the test may stop, empty
// or put back and start again on the same port (Stop, Start). A test that
// uses one opts in as the real-server tests do (FROND_TEST_REDIS_URL).
type RedisServer struct {
	t    testing.TB
	bin  string
	Port int
	Dir  string // its data directory (the AOF's)
	args []string
	cmd  *exec.Cmd
}

// StartRedis starts a RedisServer; args are more of redis-server's
// ("--replicaof", "127.0.0.1", "6380"). It is stopped when t ends.
func StartRedis(t testing.TB, args ...string) *RedisServer {
	t.Helper()
	Getenv(t, "FROND_TEST_REDIS_URL") // real-server tests opt in
	r := &RedisServer{t: t, bin: Tool(t, "apt-get install redis-server", "redis-server"), Dir: t.TempDir(), args: args}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// Addr is the server's host:port.
func (r *RedisServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port)) }

// URL is a redis:// URL of database 0.
func (r *RedisServer) URL() string { return "redis://" + r.Addr() + "/0" }

// Start starts the server on its port and directory (again, after Stop)
// and waits until it answers PING.
func (r *RedisServer) Start() {
	r.t.Helper()
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		r.t.Fatal(err)
	}
	args := append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(r.Port), "--dir", r.Dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "always"}, r.args...)
	r.cmd = exec.Command(r.bin, args...)
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !r.answers(); {
		if time.Now().After(deadline) {
			r.t.Fatalf("the test's redis-server on %s did not answer within 10 s", r.Addr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answers reports whether the server answers PING (while it loads its
// data it answers -LOADING).
func (r *RedisServer) answers() bool {
	c, err := net.DialTimeout("tcp", r.Addr(), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := fmt.Fprint(c, "PING\r\n"); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

// Stop kills the server (its AOF, synced on every write, keeps every
// acknowledged write).
func (r *RedisServer) Stop() {
	if r.cmd != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
		r.cmd = nil
	}
}
