package hetreward

import "sync"

// handle guards the C object of a Dataset, Fitter or Model against a Close racing a call.
//
// Every method that passes the C pointer to the library holds a use (acquire/release) for the
// duration of its C call(s). Close marks the handle closed, so that new uses fail with
// ErrClosed, and frees the C object at once if no use is in flight; otherwise the last use
// frees it when its C call returns. Close therefore never waits for a call and never frees an
// object another goroutine is using, whatever the order of the calls. The mutex is held only
// to update the counter, never across a C call; uses nest (a method may call another).
// The finalizer is safe: a use keeps its Go object reachable, so it cannot run during one.
type handle struct {
	mu     sync.Mutex
	uses   int
	closed bool
	free   func() // frees the C object; captures the C pointer only, never its owner
}

// acquire starts a use; false if the handle is closed (the caller returns ErrClosed or zero).
func (h *handle) acquire() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.uses++
	return true
}

// release ends a use; the last use after a Close frees the C object.
func (h *handle) release() {
	h.mu.Lock()
	h.uses--
	last := h.closed && h.uses == 0
	h.mu.Unlock()
	if last {
		h.free()
	}
}

// close marks the handle closed and frees the C object now or at the end of the last use.
// Idempotent.
func (h *handle) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	now := h.uses == 0
	h.mu.Unlock()
	if now {
		h.free()
	}
}
