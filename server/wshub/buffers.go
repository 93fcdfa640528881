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
	// Keep whatever the browser sent after its handshake, often its first
	// message, and keep it buffered in the reader handed back: the
	// websocket library rebuilds its reader from the bytes that reader
	// reports Buffered and the bare connection, so bytes still pending in
	// an io.Reader under it would be dropped, and the browser's next frame
	// read from its middle.
	n := brw.Reader.Buffered()
	var r io.Reader = conn
	if n > 0 {
		b, _ := brw.Reader.Peek(n)
		r = io.MultiReader(bytes.NewReader(bytes.Clone(b)), conn)
	}
	br := bufio.NewReaderSize(r, max(512, n))
	if n > 0 {
		// One read of r: the bytes above, all of them, as the reader is at
		// least n long.
		if _, err := br.Peek(n); err != nil {
			conn.Close()
			return nil, nil, err
		}
	}
	return conn, bufio.NewReadWriter(br, bufio.NewWriterSize(conn, w.writeBuffer)), nil
}
