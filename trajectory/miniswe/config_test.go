package miniswe

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
)

// TestCheckRebuildRefuses: what the replay cannot render exactly is refused
// before any command runs, with a message saying why.
func TestCheckRebuildRefuses(t *testing.T) {
	v2 := func(cfg string) *trajectory.Trajectory {
		return &trajectory.Trajectory{Format: FormatV11, Config: json.RawMessage(cfg)}
	}
	for _, tc := range []struct {
		name string
		t    *trajectory.Trajectory
		err  string
	}{
		{"bare list", &trajectory.Trajectory{Format: FormatBare}, "bare message list"},
		{"no template", v2(`{"model":{}}`), "has no observation_template"},
		{"v1 no timeout template", &trajectory.Trajectory{Format: FormatV1, Config: json.RawMessage(`{"agent":{"action_observation_template":"{{output.output}}"}}`)}, "has no timeout_template"},
		{"singularity", v2(`{"environment_type":"minisweagent.environments.singularity.SingularityEnvironment","model":{"observation_template":"x"}}`), "is not replayable"},
		{"template outside the subset", v2(`{"model":{"observation_template":"{% for l in output.output.splitlines() %}{{l}}{% endfor %}"}}`), "{% for %} is not supported"},
		{"env not strings", v2(`{"environment":{"env":{"N":1}},"model":{"observation_template":"x"}}`), "is not a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Format.(trajectory.RebuildChecker).CheckRebuild(tc.t)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("err = %v, want %q", err, tc.err)
			}
		})
	}
	ok := v2(`{"environment_type":"minisweagent.environments.docker.DockerEnvironment","environment":{"cwd":"/testbed","timeout":60,"interpreter":["bash","-c"],"env":{"PAGER":"cat"}},"model":{"observation_template":"{{output.returncode}}"}}`)
	cfg, err := loadConfig(ok)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.shell, " ") != "bash -c" || cfg.timeoutSecs != 60 || cfg.cwd != "/testbed" || cfg.env["PAGER"] != "cat" {
		t.Errorf("docker config read as %+v", cfg)
	}
	if env := cfg.environ([]string{"PAGER=less", "HOME=/h"}); strings.Join(env, " ") != "HOME=/h PAGER=cat" {
		t.Errorf("environ = %v: the config's env must override mini's own", env)
	}
}

// TestDecodeReplace: invalid UTF-8 becomes U+FFFD per maximal subpart, as
// Python's errors="replace" does; text mode turns \r\n and \r into \n.
func TestDecodeReplace(t *testing.T) {
	for in, want := range map[string]string{
		"ok é":              "ok é",
		"a\xffb":            "a\ufffdb",
		"\xe2\x82x":         "\ufffdx", // a truncated 3-byte sequence is one subpart
		"\xe2\x82":          "\ufffd",
		"\xf0\x9f\x98":      "\ufffd",
		"\xed\xa0\x80":      "\ufffd\ufffd\ufffd", // a surrogate: ED then two stray continuations
		"\xc0\xaf":          "\ufffd\ufffd",
		"x\r\ny\rz\n\r\r\n": "x\ny\nz\n\n\n",
	} {
		if got := pyText([]byte(in)); got != want {
			t.Errorf("pyText(%q) = %q, want %q", in, got, want)
		}
	}
}
