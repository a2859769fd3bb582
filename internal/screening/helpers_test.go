package screening

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// sanctionsDir is the shared data directory: EMI_SANCTIONS_DIR, or
// ../../../shared/data/sanctions relative to this package. The tests fail
// (they do not skip) when it is missing: CI has it.
func sanctionsDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("EMI_SANCTIONS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "data", "sanctions")
	}
	for _, f := range []string{FileSDN, FileALT, FileUN} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			tb.Fatalf("sanctions data missing (set EMI_SANCTIONS_DIR): %v", err)
		}
	}
	return dir
}

var (
	fullOnce sync.Once
	fullIx   *Index
	fullErr  error
)

// fullIndex loads the shared lists once per test binary.
func fullIndex(tb testing.TB) *Index {
	tb.Helper()
	dir := sanctionsDir(tb)
	fullOnce.Do(func() { fullIx, fullErr = LoadDir(dir) })
	if fullErr != nil {
		tb.Fatalf("LoadDir: %v", fullErr)
	}
	return fullIx
}
