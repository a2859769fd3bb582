package monitoring

// WindowReader is what the typologies read windows from.
type WindowReader = windowReader

// NewSubjectWindows returns the windows evaluateSubject reads for a batch
// of a subject's movements, for the tests that compare them with the
// store's queries.
func NewSubjectWindows(store Store, s Subject, batch []Movement) WindowReader {
	return newSubjectWindows(store, s, batch)
}

// ReadsFromStore reports whether w answers from the store: it is the
// store, or it read more movements than its budget.
func ReadsFromStore(w WindowReader) bool {
	sw, ok := w.(*subjectWindows)
	return !ok || sw.spent
}

// WindowsFor is windowsFor.
func WindowsFor(store Store, s Subject, batch []Movement) WindowReader {
	return windowsFor(store, s, batch)
}
