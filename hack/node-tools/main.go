// Command node-tools is the only program of the local kubelet node's helper
// image, named by how it is called:
//
//	pause         holds a pod's namespaces until SIGTERM or SIGINT (the
//	              node's sandbox image, and the holder of the node's own
//	              network namespace)
//	http-get URL  prints the body of a GET of URL; exits 1 unless the
//	              status is 200 (for reaching a Service from inside a pod)
//
// It uses the standard library only, so it builds offline and statically.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	switch name := filepath.Base(os.Args[0]); name {
	case "pause":
		pause()
	case "http-get":
		os.Exit(httpGet(os.Args[1:]))
	default:
		fmt.Fprintf(os.Stderr, "%s: call me as pause or http-get\n", name)
		os.Exit(2)
	}
}

func pause() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}

func httpGet(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: http-get URL")
		return 2
	}
	// Bounded, so a pod that cannot reach the URL ends instead of hanging.
	client := http.Client{Timeout: 10 * time.Second}
	response, err := client.Get(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "http-get: %v\n", err)
		return 1
	}
	defer response.Body.Close()
	if _, err := io.Copy(os.Stdout, response.Body); err != nil {
		fmt.Fprintf(os.Stderr, "http-get: reading the body: %v\n", err)
		return 1
	}
	if response.StatusCode != http.StatusOK {
		fmt.Fprintf(os.Stderr, "http-get: %s\n", response.Status)
		return 1
	}
	return 0
}
