package wshub

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
)

// smallBuffers hands the websocket smaller buffers than net/http's 4 KB
// pair: browsers send nearly nothing, most views send small messages, and
// on a thousand idle connections the buffers are most of the memory. The
// write buffer is sized by the caller. It keeps the hijacked connection,
// for write deadlines.
type smallBuffers struct {
	http.ResponseWriter
	writeBuffer int
	conn        net.Conn
}

// Hijack implements http.Hijacker.
func (w *smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.conn = conn
	// Keep whatever the browser sent after its handshake.
	var r io.Reader = conn
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		r = io.MultiReader(bytes.NewReader(bytes.Clone(b)), conn)
	}
	return conn, bufio.NewReadWriter(bufio.NewReaderSize(r, 512), bufio.NewWriterSize(conn, w.writeBuffer)), nil
}
