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

// basePlaceholder stands for the public address in openapi.yaml's servers
// entry and contact URL, as "{base_url}" does in the guides and pages of
// /docs: the file names no host of its own.
const basePlaceholder = "{base_url}"

// ServedOpenAPI is the document as /openapi.yaml serves it: the servers
// entry and the contact address name publicURL (EMI_PUBLIC_URL, its
// default when empty), so a client generated from a sandbox's document
// calls that sandbox.
func ServedOpenAPI(doc []byte, publicURL string) []byte {
	publicURL = strings.TrimRight(publicURL, "/")
	if publicURL == "" {
		publicURL = defaultPublicURL
	}
	quoted, _ := json.Marshal(publicURL) // a JSON string is a YAML double-quoted scalar
	out := bytes.Replace(doc, []byte(`  - url: "`+basePlaceholder+`"`+"\n"), append(append([]byte("  - url: "), quoted...), '\n'), 1)
	docs, _ := json.Marshal(publicURL + "/docs")
	return bytes.Replace(out, []byte(`    url: "`+basePlaceholder+`/docs"`+"\n"), append(append([]byte("    url: "), docs...), '\n'), 1)
}
