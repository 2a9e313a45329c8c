// Package e2e drives the real agent CLIs (Claude Code, Codex, OpenCode, Pi) against
// the scripted fake model in a loopback-only network namespace and records the
// native sessions they write into testdata/e2e/sessions. Its tests carry the build
// tag e2e: install the CLIs with testdata/e2e/install-clis.sh, then run
//
//	go test -tags e2e ./replay/e2e -run TestRecordSessions -v           (check)
//	go test -tags e2e ./replay/e2e -run TestRecordSessions -v -record   (rewrite testdata)
package e2e
