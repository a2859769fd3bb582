package api

import (
	"bytes"
	_ "embed" // openapi.yaml
	"encoding/json"
)

// OpenAPI is the OpenAPI 3.1 description of the partner API, served at
// /openapi.yaml. The API tests validate every response against it, so it
// cannot drift from what the server does.
//
//go:embed openapi.yaml
var OpenAPI []byte

// defaultPublicURL is the address openapi.yaml names, EMI_PUBLIC_URL's
// default.
const defaultPublicURL = "http://localhost:8080"

// ServedOpenAPI is the document as /openapi.yaml serves it: the servers
// entry and the contact address name publicURL (EMI_PUBLIC_URL), so a
// client generated from a sandbox's document calls that sandbox.
func ServedOpenAPI(doc []byte, publicURL string) []byte {
	if publicURL == "" || publicURL == defaultPublicURL {
		return doc
	}
	quoted, _ := json.Marshal(publicURL) // a JSON string is a YAML double-quoted scalar
	out := bytes.Replace(doc, []byte("  - url: "+defaultPublicURL+"\n"), append(append([]byte("  - url: "), quoted...), '\n'), 1)
	docs, _ := json.Marshal(publicURL + "/docs")
	return bytes.Replace(out, []byte("    url: "+defaultPublicURL+"/docs\n"), append(append([]byte("    url: "), docs...), '\n'), 1)
}
