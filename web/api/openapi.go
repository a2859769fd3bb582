package api

import (
	"bytes"
	_ "embed" // openapi.yaml
	"encoding/json"
	"strings"
)

// OpenAPI is the OpenAPI 3.1 description of the partner API, served at
// /openapi.yaml. The API tests validate every response against it, so it
// cannot drift from what the server does.
//
//go:embed openapi.yaml
var OpenAPI []byte

// defaultPublicURL is EMI_PUBLIC_URL's default.
const defaultPublicURL = "http://localhost:8080"

// The file names no real host: its servers entry is a template of an
// installation's address with standard server variables (scheme, host,
// each with a default under the reserved .example), and its contact URL
// is /docs at the template's default address.
const (
	serverTemplate  = `  - url: "{scheme}://{host}"` + "\n"
	contactTemplate = `    url: "https://emi.example/docs"` + "\n"
)

// ServedOpenAPI is the document as /openapi.yaml serves it: the servers
// entry names publicURL (EMI_PUBLIC_URL, its default when empty), without
// the variables of the template, and the contact address its /docs, so a
// client generated from a sandbox's document calls that sandbox.
func ServedOpenAPI(doc []byte, publicURL string) []byte {
	publicURL = strings.TrimRight(publicURL, "/")
	if publicURL == "" {
		publicURL = defaultPublicURL
	}
	quoted, _ := json.Marshal(publicURL) // a JSON string is a YAML double-quoted scalar
	out := servedServer(doc, quoted)
	docs, _ := json.Marshal(publicURL + "/docs")
	return bytes.Replace(out, []byte(contactTemplate), append(append([]byte("    url: "), docs...), '\n'), 1)
}

// servedServer replaces the URL template of doc's servers entry with url
// and leaves out the entry's variables block (its lines indented deeper
// than "    variables:"); the entry's other fields stay.
func servedServer(doc, url []byte) []byte {
	i := bytes.Index(doc, []byte(serverTemplate))
	if i < 0 {
		return doc
	}
	rest := doc[i+len(serverTemplate):]
	var kept []byte
	n, variables := 0, false
	for n < len(rest) {
		end := bytes.IndexByte(rest[n:], '\n')
		if end < 0 {
			end = len(rest) - n - 1
		}
		line := rest[n : n+end+1]
		if !bytes.HasPrefix(line, []byte("    ")) {
			break // the next entry or the next top-level key
		}
		switch {
		case bytes.Equal(bytes.TrimRight(line, "\n"), []byte("    variables:")):
			variables = true
		case !bytes.HasPrefix(line, []byte("      ")):
			variables = false
		}
		if !variables {
			kept = append(kept, line...)
		}
		n += len(line)
	}
	out := make([]byte, 0, len(doc))
	out = append(out, doc[:i]...)
	out = append(out, "  - url: "...)
	out = append(out, url...)
	out = append(out, '\n')
	out = append(out, kept...)
	return append(out, rest[n:]...)
}
