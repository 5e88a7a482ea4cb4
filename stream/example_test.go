package stream_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"strings"

	"github.com/vmi2libvirt/vmi2libvirt/stream"
)

// A Server gives each client a stream of its own: here an echo of what
// the client sends, in upper case, where a program would open a VMI's VNC
// display or console (launcher.Launcher.VNC, Console).
func Example() {
	srv := &stream.Server{Open: func(ctx context.Context) (io.ReadWriteCloser, error) {
		ours, theirs := net.Pipe()
		go func() {
			defer theirs.Close()
			sc := bufio.NewScanner(theirs)
			for sc.Scan() {
				fmt.Fprintln(theirs, strings.ToUpper(sc.Text()))
			}
		}()
		return ours, nil
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // loopback: clients are not authenticated
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintln(c, "hello")
	line, _ := bufio.NewReader(c).ReadString('\n')
	fmt.Print(line)
	c.Close()
	stop()
	fmt.Println(<-served)
	// Output:
	// HELLO
	// <nil>
}
