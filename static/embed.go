// Package static holds the files the back office serves under /static:
// htmx (vendored from the npm package htmx.org, version in the file name,
// licence 0BSD), our CSS and a small script. Embedded, so the binary is
// self-contained.
package static

import "embed"

// FS holds css/ and js/.
//
//go:embed css js
var FS embed.FS
