package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	v1 "kubevirt.io/api/core/v1"
)

type vmiT = v1.VirtualMachineInstance

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
