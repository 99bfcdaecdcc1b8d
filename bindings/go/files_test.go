//go:build unix

package hetreward_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	hetreward "github.com/hetreward/hetreward/bindings/go"
)

// TestFifoInputsAreRefusedAtOnce: LoadDataset and LoadModel given a FIFO with no writer, named
// like an input, return an I/O error naming it at once (they blocked forever in open). A call
// still blocked after the limit fails the test and is released by opening the FIFO's other
// end, so nothing is left hanging.
func TestFifoInputsAreRefusedAtOnce(t *testing.T) {
	const limit = 30 * time.Second
	for _, c := range []struct {
		name string
		load func(string) error
	}{
		{"data.csv", func(p string) error { _, err := hetreward.LoadDataset(p); return err }},
		{"data.safetensors", func(p string) error { _, err := hetreward.LoadDataset(p); return err }},
		{"model.hrm", func(p string) error { _, err := hetreward.LoadModel(p); return err }},
	} {
		path := filepath.Join(t.TempDir(), c.name)
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.load(path) }()
		select {
		case err := <-done:
			statusOf(t, err, hetreward.StatusIO, c.name)
			statusOf(t, err, hetreward.StatusIO, "is a FIFO (named pipe), not a regular file")
		case <-time.After(limit):
			if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			<-done
			t.Fatalf("loading %s blocked for %v", c.name, limit)
		}
	}
}

// TestClusterIdsAbove2Pow53AreExact: eight annotators 2^53 + 0..7 (five if the ids went
// through a double) from the caller's int64 slice and from a CSV file; a value no 64-bit id
// can be is refused quoting it as written.
func TestClusterIdsAbove2Pow53AreExact(t *testing.T) {
	m := sharedModel(t)
	d := makeData(1000, 1) // the shared model's data
	const big = int64(1) << 53
	for i := range d.cluster {
		d.cluster[i] = big + int64(i%8)
	}
	clusters := func(ds *hetreward.Dataset) int {
		t.Helper()
		h, err := m.Heterogeneity(ds)
		if err != nil {
			t.Fatal(err)
		}
		return h.Clusters
	}
	if g := clusters(mustDataset(t, d)); g != 8 {
		t.Fatalf("NewDataset: %d clusters, want 8", g)
	}
	var b strings.Builder
	b.WriteString("cluster,y,psi0,z1,z2,z3,z4,psi1,psi2\n")
	row := func(i int, id string) string {
		cells := []string{id, fmt.Sprint(d.y[i]), fmt.Sprint(d.psi0[i])}
		for _, v := range d.z[i*d1 : (i+1)*d1] {
			cells = append(cells, fmt.Sprint(v))
		}
		for _, v := range d.psi[i*d2 : (i+1)*d2] {
			cells = append(cells, fmt.Sprint(v))
		}
		return strings.Join(cells, ",") + "\n"
	}
	for i := 0; i < d.n; i++ {
		b.WriteString(row(i, fmt.Sprint(d.cluster[i])))
	}
	path := filepath.Join(t.TempDir(), "ids.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := hetreward.LoadDataset(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	if g := clusters(ds); g != 8 {
		t.Fatalf("LoadDataset: %d clusters, want 8", g)
	}
	text := strings.Replace(b.String(), row(3, fmt.Sprint(d.cluster[3])),
		row(3, "-9223372036854775809"), 1)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = hetreward.LoadDataset(path)
	statusOf(t, err, hetreward.StatusBadFormat,
		"column `cluster`, data row 4: cluster id `-9223372036854775809` is outside")
}
