package run

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestExecFinishesBeforeYield(t *testing.T) {
	r := newTestRunner(t, Options{})
	start := time.Now()
	res, err := r.Exec(context.Background(), ExecRequest{
		ShellRequest: ShellRequest{Command: "echo hi; echo err >&2; exit 2", Dir: t.TempDir(), MergeStderr: true},
		Yield:        10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatal("Exec waited for the yield although the process exited")
	}
	if res.Running || res.ExitCode != 2 || res.Combined.String() != "hi\nerr\n" || res.Stderr.String() != "" {
		t.Errorf("got Running=%v ExitCode=%d Combined=%q Stderr=%q", res.Running, res.ExitCode, res.Combined.String(), res.Stderr.String())
	}
	if ids := r.Sessions(); len(ids) != 0 {
		t.Errorf("exited session still listed: %v", ids)
	}
	if _, err := r.WriteStdin(context.Background(), StdinRequest{SessionID: res.SessionID}); KindOf(err) != NoSession {
		t.Errorf("poll after reported exit: %v, want NoSession", err)
	}
}

func TestExecPollsAcrossYields(t *testing.T) {
	r := newTestRunner(t, Options{})
	res, err := r.Exec(context.Background(), ExecRequest{
		ShellRequest: ShellRequest{Command: "echo one; sleep 0.4; echo two", Dir: t.TempDir()},
		SessionID:    48230, // the id the original trajectory used
		Yield:        150 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Running || res.SessionID != 48230 || res.Combined.String() != "one\n" {
		t.Fatalf("first chunk: Running=%v id=%d out=%q", res.Running, res.SessionID, res.Combined.String())
	}
	if res.Wall < 150*time.Millisecond {
		t.Errorf("Wall %v shorter than the yield", res.Wall)
	}
	if got := r.Sessions(); len(got) != 1 || got[0] != 48230 {
		t.Errorf("Sessions() = %v", got)
	}
	// The same id cannot be started twice while it runs.
	if _, err := r.Exec(context.Background(), ExecRequest{ShellRequest: ShellRequest{Command: "true", Dir: "/"}, SessionID: 48230}); KindOf(err) != SessionExists {
		t.Errorf("duplicate id: %v", err)
	}
	// Writing to a session without stdin is refused, as Codex refuses it.
	if _, err := r.WriteStdin(context.Background(), StdinRequest{SessionID: 48230, Data: []byte("x")}); KindOf(err) != StdinClosed {
		t.Errorf("write without stdin: %v", err)
	}
	res, err = r.WriteStdin(context.Background(), StdinRequest{SessionID: 48230, UntilExit: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Running || res.ExitCode != 0 || res.Combined.String() != "two\n" {
		t.Errorf("second chunk: Running=%v code=%d out=%q", res.Running, res.ExitCode, res.Combined.String())
	}
}

func TestExecStdinRoundTrip(t *testing.T) {
	r := newTestRunner(t, Options{})
	tests := []struct {
		name      string
		req       ExecRequest
		write     string
		wantChunk string // output after the write
		close     StdinRequest
		wantFinal string
	}{
		{
			name:      "pipe cat",
			req:       ExecRequest{ShellRequest: ShellRequest{Command: "cat"}, StdinPipe: true},
			write:     "hello\n",
			wantChunk: "hello\n",
			close:     StdinRequest{CloseStdin: true, UntilExit: true},
			wantFinal: "",
		},
		{
			// The terminal echoes the input and translates \n to \r\n.
			name:      "tty cat",
			req:       ExecRequest{ShellRequest: ShellRequest{Command: "cat"}, TTY: true},
			write:     "hello\n",
			wantChunk: "hello\r\nhello\r\n",
			close:     StdinRequest{Data: []byte("\x04"), UntilExit: true},
			wantFinal: "",
		},
		{
			name:      "tty shell sees a terminal",
			req:       ExecRequest{ShellRequest: ShellRequest{Command: "read -r line; [ -t 1 ] && echo \"tty:$line\""}, TTY: true},
			write:     "abc\n",
			wantChunk: "abc\r\ntty:abc\r\n",
			close:     StdinRequest{UntilExit: true},
			wantFinal: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Dir = t.TempDir()
			tt.req.Yield = 100 * time.Millisecond
			res, err := r.Exec(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Running || res.Combined.String() != "" {
				t.Fatalf("start: Running=%v out=%q", res.Running, res.Combined.String())
			}
			id := res.SessionID
			var got strings.Builder
			deadline := time.Now().Add(5 * time.Second)
			req := StdinRequest{SessionID: id, Data: []byte(tt.write), Yield: 100 * time.Millisecond}
			for res.Running && got.Len() < len(tt.wantChunk) && time.Now().Before(deadline) {
				res, err = r.WriteStdin(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				got.WriteString(res.Combined.String())
				req.Data = nil
			}
			if got.String() != tt.wantChunk {
				t.Errorf("after write: %q, want %q", got.String(), tt.wantChunk)
			}
			if !res.Running { // it finished on its own with the last chunk
				if res.ExitCode != 0 {
					t.Errorf("exit code %d", res.ExitCode)
				}
				return
			}
			tt.close.SessionID = id
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res, err = r.WriteStdin(ctx, tt.close)
			if err != nil {
				t.Fatal(err)
			}
			if res.Running || res.ExitCode != 0 || strings.TrimLeft(res.Combined.String(), "^D\b") != tt.wantFinal {
				t.Errorf("final: Running=%v code=%d out=%q", res.Running, res.ExitCode, res.Combined.String())
			}
		})
	}
}

func TestExecSessionsDieOnClose(t *testing.T) {
	r := newTestRunner(t, Options{})
	var pids []int
	for _, tty := range []bool{false, true} {
		res, err := r.Exec(context.Background(), ExecRequest{
			ShellRequest: ShellRequest{Command: "sleep 300", Dir: t.TempDir()},
			TTY:          tty,
		})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Running {
			t.Fatalf("tty=%v: session ended at once", tty)
		}
		pids = append(pids, res.Pid)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if !waitDead(pid, 2*time.Second) {
			t.Errorf("session process %d survived Close", pid)
		}
	}
}

func TestKillSessionAndLifetimeTimeout(t *testing.T) {
	r := newTestRunner(t, Options{})
	res, err := r.Exec(context.Background(), ExecRequest{ShellRequest: ShellRequest{Command: "echo up; sleep 300", Dir: t.TempDir()}, Yield: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res, err = r.KillSession(context.Background(), res.SessionID)
	if err != nil || res.Running || res.Signal == 0 {
		t.Errorf("KillSession: err=%v Running=%v Signal=%v", err, res.Running, res.Signal)
	}
	res, err = r.Exec(context.Background(), ExecRequest{
		ShellRequest: ShellRequest{Command: "sleep 300", Dir: t.TempDir(), Timeout: 100 * time.Millisecond},
		UntilExit:    true,
	})
	if err != nil || res.Running || !res.TimedOut {
		t.Errorf("lifetime timeout: err=%v Running=%v TimedOut=%v", err, res.Running, res.TimedOut)
	}
}
