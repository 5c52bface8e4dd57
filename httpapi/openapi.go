package httpapi

import _ "embed"

// openAPI is the OpenAPI 3.1 document of the whole API (every route of the
// router, its schemas, headers and errors). TestOpenAPIDocumentsEveryRoute
// fails when a route is added without documenting it here.
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document (JSON), served at
// GET /openapi.json. The caller gets its own copy.
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }
