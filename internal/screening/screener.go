package screening

import (
	"errors"
	"sync/atomic"
)

// ErrNoList is returned by Screener.Screen while no index is loaded.
var ErrNoList = errors.New("screening: no sanctions list loaded")

// Screener holds the current Index and replaces it atomically: readers
// never block and always see a complete index.
type Screener struct {
	cur atomic.Pointer[Index]
}

// NewScreener returns a Screener without an index.
func NewScreener() *Screener { return &Screener{} }

// Current returns the current index, nil when no list is loaded.
func (s *Screener) Current() *Index { return s.cur.Load() }

// Swap installs ix and returns the previous index (nil if none).
func (s *Screener) Swap(ix *Index) (old *Index) { return s.cur.Swap(ix) }

// Screen screens q against the current index and also returns that
// index's Version, to be stored with the result. It fails with ErrNoList
// when no index is loaded: a check must never pass silently for lack of a
// list.
func (s *Screener) Screen(q Query) (hits []Hit, version string, err error) {
	ix := s.Current()
	if ix == nil {
		return nil, "", ErrNoList
	}
	return ix.Screen(q), ix.Version(), nil
}
