package main

import (
	"bytes"
	"io"
)

// homeEndKeys rewrites the Home and End keys that the line editor
// (chzyer/readline) does not know into the ones it does. xterm sends
// ESC [ H and ESC [ F, which it reads; tmux and screen (TERM=screen or
// tmux), the Linux console and rxvt send ESC [ 1 ~ / ESC [ 4 ~ and
// ESC [ 7 ~ / ESC [ 8 ~, which it drops, so Home and End did nothing in
// `veil chat` under tmux.
type homeEndKeys struct {
	r   io.Reader
	buf []byte // read but not yet returned
}

var homeEndRewrites = []struct{ from, to []byte }{
	{[]byte("\x1b[1~"), []byte("\x1b[H")},
	{[]byte("\x1b[7~"), []byte("\x1b[H")},
	{[]byte("\x1b[4~"), []byte("\x1b[F")},
	{[]byte("\x1b[8~"), []byte("\x1b[F")},
}

func (h *homeEndKeys) Read(p []byte) (int, error) {
	if len(h.buf) == 0 {
		chunk := make([]byte, len(p))
		n, err := h.r.Read(chunk)
		if n == 0 {
			return 0, err
		}
		h.buf = rewriteHomeEnd(chunk[:n])
	}
	n := copy(p, h.buf)
	h.buf = h.buf[n:]
	return n, nil
}

// Close closes the reader below when it can be closed (the prompt's
// cancelable stdin must still be ended by the prompt's Close).
func (h *homeEndKeys) Close() error {
	if c, ok := h.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// rewriteHomeEnd rewrites the sequences of one read. A terminal writes a
// key's sequence in one piece, so a sequence split across two reads is
// left as it is (the editor then ignores it, as before).
func rewriteHomeEnd(b []byte) []byte {
	if !bytes.Contains(b, []byte("\x1b[")) {
		return b
	}
	for _, rw := range homeEndRewrites {
		b = bytes.ReplaceAll(b, rw.from, rw.to)
	}
	return b
}
