// Command kstatus reads one Kubernetes object as JSON on stdin and prints,
// as JSON, how the kstatus library of sigs.k8s.io/cli-utils reads its
// status: the library Argo CD's and Flux's health checks follow. The test
// suite asks it of ClusterMirrors and Mirrors as the controller wrote them.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

func main() {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	// Read as the API machinery reads objects: integers stay integers.
	object := &unstructured.Unstructured{}
	if err := object.UnmarshalJSON(data); err != nil {
		fail("stdin is not a Kubernetes object: %v", err)
	}
	result, err := status.Compute(object)
	if err != nil {
		fail("kstatus: %v", err)
	}
	out := map[string]string{"status": result.Status.String(), "message": result.Message}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail("writing stdout: %v", err)
	}
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
