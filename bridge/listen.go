package bridge

import (
	"errors"
	"fmt"
	"net"
	"net/http"
)

// ServeAlso serves l as well, until Close: the bridge's own port inside
// another network namespace (a continued agent CLI that has only its own
// loopback), so the CLI reaches the bridge at the same URL. l must be on
// the loopback address and port the bridge listens on: requests are
// checked against that Host as on the first listener.
func (s *Server) ServeAlso(l net.Listener) error {
	if l.Addr().String() != s.addr {
		return fmt.Errorf("bridge: an extra listener must be on %s, the bridge's address, not %s", s.addr, l.Addr())
	}
	go func() {
		// Close (http.Server.Close) closes every listener Serve was given.
		if err := s.srv.Serve(coalescingListener{l}); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("extra listener ended", "addr", l.Addr().String(), "error", err.Error())
		}
	}()
	return nil
}
