package api

import _ "embed"

// OpenAPI is the OpenAPI 3.1 description of the partner API, served at
// /openapi.yaml. The API tests validate every response against it, so it
// cannot drift from what the server does.
//
//go:embed openapi.yaml
var OpenAPI []byte
