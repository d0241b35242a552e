//go:build chaos

package chaos

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// errNoWorkerID: the node exited at start because every worker ID was held
// by a live node (a lease of a killed process had not expired yet). The
// harness starts it again a second later.
var errNoWorkerID = errors.New("no worker ID free at start")

// node is one frond serve process slot: its data directory, identity and
// proxies stay while the process is killed and started again.
type node struct {
	h          *harness
	idx        int
	offsetFile string // FROND_TEST_CLOCK_OFFSET=@offsetFile
	stores     []*cutter
	reg        *cutter
	busy       sync.Mutex // one node fault at a time

	mu       sync.Mutex
	dataDir  string
	identity int // worker.port: the node's identity host:port in the registry
	life     int // number of starts so far; IDs are attributed to a life
	url      string
	cmd      *exec.Cmd
	done     chan struct{}
	exitErr  error
	tail     []string // last log lines of the current life
	pauses   []interval
	pausedAt time.Time
	worker   int64 // the worker ID the node's log last said it holds
	heldLife int   // the life that said so
}

// held returns the worker ID the node's current life holds, or -1.
func (n *node) held() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.heldLife != n.life {
		return -1
	}
	return n.worker
}

// interval is a span of wall time.
type interval struct{ from, to time.Time }

func (iv interval) overlaps(from, to time.Time) bool {
	return !to.Before(iv.from) && !from.After(iv.to)
}

// current is the URL and life to send a request to; "" while down.
func (n *node) current() (string, int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.url, n.life
}

// pausedDuring reports whether the process was stopped (SIGSTOP) at any
// time between from and to: a request then may take as long as the pause.
func (n *node) pausedDuring(from, to time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.pausedAt.IsZero() && !to.Before(n.pausedAt) {
		return true
	}
	for _, p := range n.pauses {
		if p.overlaps(from, to) {
			return true
		}
	}
	return false
}

// start runs a new life of the node and waits until it listens. It returns
// errNoWorkerID when the process refused to start for want of a worker ID.
func (n *node) start() error {
	h := n.h
	n.mu.Lock()
	n.life++
	life, dir, identity := n.life, n.dataDir, n.identity
	n.mu.Unlock()
	logPath := filepath.Join(h.logDir, fmt.Sprintf("node%d-life%02d.log", n.idx, life))
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	storeURLs := make([]string, len(n.stores))
	for i, c := range n.stores {
		storeURLs[i] = h.storeURL(i, c.p.Addr())
	}
	if n.idx%2 == 1 {
		slices.Reverse(storeURLs) // the order of a node's list does not matter: the place is the store's
	}
	cmd := exec.Command(h.binary, "serve", "--data-dir", dir, "--http-addr", "127.0.0.1:0", "--log-format", "json",
		"--store", strings.Join(storeURLs, " "), "--registry", h.registryURL(n.reg.p.Addr()))
	cmd.Env = append(os.Environ(),
		"FROND_CONFIG=",
		"FROND_TEST_CLOCK_OFFSET=@"+n.offsetFile,
		"FROND_LAYOUT="+layout,
		"FROND_WORKER__HOST=127.0.0.1",
		"FROND_WORKER__PORT="+strconv.Itoa(identity),
		"FROND_WORKER__LEASE_TTL="+leaseTTL.String(),
		"FROND_WORKER__RECYCLE_AFTER="+recycleAfter.String(),
		"FROND_SEGMENT__MAX_STEP=2000",
		"FROND_SHUTDOWN_TIMEOUT=5s",
	)
	if h.space != "" {
		// Keyed sequences on the first store's database, through this
		// node's proxy: a store cut cuts them too.
		cmd.Env = append(cmd.Env, "FROND_SEQUENCES__STORE="+h.storeURL(0, n.stores[0].p.Addr()))
	}
	cmd.Stdout = logf
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logf.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	addr := make(chan string, 1)
	n.mu.Lock()
	n.cmd, n.done, n.exitErr, n.tail = cmd, done, nil, nil
	n.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			n.mu.Lock()
			if n.tail = append(n.tail, line); len(n.tail) > 40 {
				n.tail = n.tail[1:]
			}
			n.mu.Unlock()
			var rec struct {
				Msg, Addr, Owner, Err string
				Worker                *int64
			}
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			switch {
			case rec.Msg == "frond listening":
				addr <- rec.Addr
			case strings.HasPrefix(rec.Msg, "worker ID held in ") && rec.Worker != nil:
				h.held(*rec.Worker, rec.Owner)
				n.mu.Lock()
				n.worker, n.heldLife = *rec.Worker, life
				n.mu.Unlock()
			case strings.HasPrefix(rec.Msg, "snowflake IDs unavailable") && strings.HasPrefix(rec.Err, "worker ID not held: worker ID "):
				// A held ID lost: lease expired, taken, or not found at
				// SIGCONT.
				h.lostID()
			}
		}
		err := cmd.Wait()
		logf.Close()
		n.mu.Lock()
		n.exitErr, n.url = err, ""
		n.mu.Unlock()
		close(done)
	}()
	select {
	case a := <-addr:
		n.mu.Lock()
		n.url = "http://" + a
		n.mu.Unlock()
		return nil
	case <-done:
		tail := n.logTail()
		if strings.Contains(tail, "no_worker_id") || strings.Contains(tail, "no worker ID") {
			return errNoWorkerID
		}
		return fmt.Errorf("node %d life %d exited at start (%v); log %s:\n%s", n.idx, life, n.exitStatus(), logPath, tail)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("node %d life %d did not listen within 30 s; log %s:\n%s", n.idx, life, logPath, n.logTail())
	}
}

// startRetry starts the node, again every second while no worker ID is
// free, for at most 30 s.
func (n *node) startRetry() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := n.start()
		if !errors.Is(err, errNoWorkerID) {
			return err
		}
		n.h.count(&n.h.startRetries)
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d: no worker ID for 30 s: %s", n.idx, n.logTail())
		}
		time.Sleep(time.Second)
	}
}

func (n *node) logTail() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.tail, "\n")
}

func (n *node) exitStatus() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.exitErr
}

// signal sends sig to the running process.
func (n *node) signal(sig syscall.Signal) {
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		cmd.Process.Signal(sig)
	}
}

// stop sends sig (SIGKILL or SIGTERM) and waits for the process to exit;
// it returns the exit status.
func (n *node) stop(sig syscall.Signal) error {
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return n.exitStatus() // already gone
	default:
	}
	n.signal(sig)
	select {
	case <-done:
		return n.exitStatus()
	case <-time.After(20 * time.Second):
		n.signal(syscall.SIGKILL)
		<-done
		return fmt.Errorf("node %d did not exit within 20 s of %v", n.idx, sig)
	}
}

// pause stops the process (SIGSTOP); resume continues it (SIGCONT).
func (n *node) pause() {
	n.mu.Lock()
	n.pausedAt = time.Now()
	n.mu.Unlock()
	n.signal(syscall.SIGSTOP)
}

func (n *node) resume() {
	n.signal(syscall.SIGCONT)
	n.mu.Lock()
	n.pauses = append(n.pauses, interval{n.pausedAt, time.Now()})
	n.pausedAt = time.Time{}
	n.mu.Unlock()
}

// setOffset steps the node's clock (the process re-reads the file every
// 50 ms).
func (n *node) setOffset(d time.Duration) error {
	return os.WriteFile(n.offsetFile, []byte(d.String()), 0o644)
}
