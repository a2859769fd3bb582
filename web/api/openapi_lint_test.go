package api_test

import (
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	yaml "github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi"

	"emi/internal/app/apptest"
	"emi/web/api"
)

// The strict YAML lint of openapi.yaml: Redocly's "struct" and
// "no-unknown-keys" checks, in Go. A comma inside an unquoted value of a
// YAML inline mapping ({ type: string, description: Date, YYYY-MM-DD })
// ends the value and makes the rest a key, so the description is cut short
// and the schema gains a keyword nobody wrote. Every OpenAPI 3.1 object is
// checked against the keys its type allows (x- extensions aside), and a key
// without a value is refused.

// oasObject is what an OpenAPI object may hold: its fixed fields, each
// with the kind of object its value is.
type oasObject map[string]string

// oasKinds: the object kinds used below. A kind "map:K" is a map of any
// keys to objects of kind K; "list:K" a list; "any" is not checked (an
// example value, an enum); "text" a scalar.
var oasKinds = func() map[string]oasObject {
	schemaList := "list:schema"
	return map[string]oasObject{
		"root": {"openapi": "text", "info": "info", "jsonSchemaDialect": "text", "servers": "list:server", "paths": "map:pathItem",
			"webhooks": "map:pathItem", "components": "components", "security": "any", "tags": "list:tag", "externalDocs": "externalDocs"},
		"info":           {"title": "text", "summary": "text", "description": "text", "termsOfService": "text", "contact": "contact", "license": "license", "version": "text"},
		"contact":        {"name": "text", "url": "text", "email": "text"},
		"license":        {"name": "text", "identifier": "text", "url": "text"},
		"server":         {"url": "text", "description": "text", "variables": "map:serverVariable"},
		"serverVariable": {"enum": "any", "default": "text", "description": "text"},
		"externalDocs":   {"description": "text", "url": "text"},
		"tag":            {"name": "text", "description": "text", "externalDocs": "externalDocs"},
		"pathItem": {"$ref": "text", "summary": "text", "description": "text", "get": "operation", "put": "operation", "post": "operation",
			"delete": "operation", "options": "operation", "head": "operation", "patch": "operation", "trace": "operation",
			"servers": "list:server", "parameters": "list:parameter"},
		"operation": {"tags": "any", "summary": "text", "description": "text", "externalDocs": "externalDocs", "operationId": "text",
			"parameters": "list:parameter", "requestBody": "requestBody", "responses": "map:response", "callbacks": "any",
			"deprecated": "text", "security": "any", "servers": "list:server"},
		"parameter": {"$ref": "text", "name": "text", "in": "text", "description": "text", "required": "text", "deprecated": "text",
			"allowEmptyValue": "text", "style": "text", "explode": "text", "allowReserved": "text", "schema": "schema",
			"example": "any", "examples": "map:example", "content": "map:mediaType"},
		"requestBody": {"$ref": "text", "description": "text", "content": "map:mediaType", "required": "text"},
		"mediaType":   {"schema": "schema", "example": "any", "examples": "map:example", "encoding": "any"},
		"response":    {"$ref": "text", "description": "text", "headers": "map:header", "content": "map:mediaType", "links": "any"},
		"header": {"$ref": "text", "description": "text", "required": "text", "deprecated": "text", "schema": "schema", "example": "any",
			"examples": "map:example", "content": "map:mediaType", "style": "text", "explode": "text"},
		"example": {"$ref": "text", "summary": "text", "description": "text", "value": "any", "externalValue": "text"},
		"components": {"schemas": "map:schema", "responses": "map:response", "parameters": "map:parameter", "examples": "map:example",
			"requestBodies": "map:requestBody", "headers": "map:header", "securitySchemes": "map:securityScheme", "links": "any",
			"callbacks": "any", "pathItems": "map:pathItem"},
		"securityScheme": {"type": "text", "description": "text", "name": "text", "in": "text", "scheme": "text", "bearerFormat": "text",
			"flows": "any", "openIdConnectUrl": "text"},
		// JSON Schema 2020-12 as OpenAPI 3.1 uses it.
		"schema": {"$ref": "text", "$id": "text", "$schema": "text", "$comment": "text", "$defs": "map:schema", "type": "any",
			"enum": "any", "const": "any", "title": "text", "description": "text", "default": "any", "examples": "any",
			"example": "any", "deprecated": "text", "readOnly": "text", "writeOnly": "text", "format": "text", "pattern": "text",
			"minLength": "text", "maxLength": "text", "minimum": "text", "maximum": "text", "exclusiveMinimum": "text",
			"exclusiveMaximum": "text", "multipleOf": "text", "items": "schema", "prefixItems": schemaList, "minItems": "text",
			"maxItems": "text", "uniqueItems": "text", "contains": "schema", "properties": "map:schema",
			"patternProperties": "map:schema", "additionalProperties": "schema", "unevaluatedProperties": "schema",
			"unevaluatedItems": "schema", "propertyNames": "schema", "required": "any", "minProperties": "text",
			"maxProperties": "text", "allOf": schemaList, "anyOf": schemaList, "oneOf": schemaList, "not": "schema",
			"if": "schema", "then": "schema", "else": "schema", "dependentRequired": "any", "dependentSchemas": "map:schema",
			"discriminator": "any", "xml": "any", "externalDocs": "externalDocs", "contentEncoding": "text", "contentMediaType": "text"},
	}
}()

// lintOpenAPI returns every problem of doc: unknown keys, keys without a
// value, objects of the wrong shape.
func lintOpenAPI(doc []byte) ([]string, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, err
	}
	var out []string
	if len(root.Content) != 1 {
		return nil, fmt.Errorf("not one YAML document")
	}
	lintNode(root.Content[0], "root", "", &out)
	return out, nil
}

func lintNode(n *yaml.Node, kind, path string, out *[]string) {
	for n.Kind == yaml.AliasNode { // a YAML anchor reused (*webhookHeaders)
		n = n.Alias
	}
	bad := func(format string, args ...any) {
		*out = append(*out, fmt.Sprintf("line %d: %s: ", n.Line, path)+fmt.Sprintf(format, args...))
	}
	switch {
	case kind == "any":
		return
	case kind == "text":
		if n.Kind != yaml.ScalarNode {
			bad("must be a scalar")
		}
		return
	case strings.HasPrefix(kind, "list:"):
		if n.Kind != yaml.SequenceNode {
			bad("must be a list")
			return
		}
		for i, c := range n.Content {
			lintNode(c, kind[5:], fmt.Sprintf("%s[%d]", path, i), out)
		}
		return
	case strings.HasPrefix(kind, "map:"):
		if n.Kind != yaml.MappingNode {
			bad("must be a mapping")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if strings.HasPrefix(k.Value, "x-") {
				continue
			}
			lintNode(v, kind[4:], path+"/"+k.Value, out)
		}
		return
	}
	if kind == "schema" && n.Kind == yaml.ScalarNode && (n.Value == "true" || n.Value == "false") {
		return // a boolean schema
	}
	if n.Kind != yaml.MappingNode {
		bad("must be a %s object, got %q", kind, n.Value)
		return
	}
	fields := oasKinds[kind]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if strings.HasPrefix(k.Value, "x-") {
			continue
		}
		sub, ok := fields[k.Value]
		if !ok {
			*out = append(*out, fmt.Sprintf("line %d: %s: %q is not a field of a %s object (a comma in an inline mapping?)", k.Line, path, k.Value, kind))
			continue
		}
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" && sub != "any" {
			*out = append(*out, fmt.Sprintf("line %d: %s: %q has no value", k.Line, path, k.Value))
			continue
		}
		lintNode(v, sub, path+"/"+k.Value, out)
	}
}

// TestOpenAPIStrictLint refuses every key openapi.yaml has that its
// OpenAPI object does not define, and every key without a value.
func TestOpenAPIStrictLint(t *testing.T) {
	t.Parallel()
	problems, err := lintOpenAPI(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestOpenAPILintCatchesTheCommaBug: the lint finds the bug it exists for.
func TestOpenAPILintCatchesTheCommaBug(t *testing.T) {
	t.Parallel()
	doc := `openapi: 3.1.0
info: { title: t, version: "1" }
paths: {}
components:
  schemas:
    A:
      type: object
      properties:
        birthday: { type: string, description: Date of birth, YYYY-MM-DD }
        fine: { type: string, description: "Quoted, so whole" }
`
	problems, err := lintOpenAPI([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], `"YYYY-MM-DD" is not a field of a schema object`) {
		t.Fatalf("problems: %q", problems)
	}
}

// TestServedOpenAPINamesThePublicURL: /openapi.yaml names EMI_PUBLIC_URL in
// servers and contact (it said http://localhost:8080 whatever the
// installation), has licence and contact blocks, and stays a valid,
// lint-clean document.
func TestServedOpenAPINamesThePublicURL(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	res, err := http.Get(env.Server.URL + "/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	doc, _ := io.ReadAll(res.Body)
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Model.Servers) != 1 || m.Model.Servers[0].URL != env.Config.PublicURL {
		t.Errorf("servers: %+v, want %s", m.Model.Servers, env.Config.PublicURL)
	}
	info := m.Model.Info
	if info.Contact == nil || info.Contact.URL != env.Config.PublicURL+"/docs" || info.License == nil || info.License.Name == "" {
		t.Errorf("contact %+v, license %+v", info.Contact, info.License)
	}
	if problems, err := lintOpenAPI(doc); err != nil || len(problems) > 0 {
		t.Errorf("served document: %v %q", err, problems)
	}
	if v := m.Model.Servers[0].Variables; v != nil && v.Len() > 0 {
		t.Errorf("the served servers entry keeps the template's variables: %+v", m.Model.Servers[0])
	}
}

// TestOpenAPIServersAreStandard: the file's servers entry is standard
// OpenAPI (it was "{base_url}", a placeholder no tool knows): every
// {name} of its URL is a server variable with a default (one of its enum
// when it has one), so a tool that reads the file fills the URL in, and a
// generated client's base URL is a URL.
func TestOpenAPIServersAreStandard(t *testing.T) {
	t.Parallel()
	m := openAPIModel(t)
	if len(m.Servers) != 1 {
		t.Fatalf("servers: %+v", m.Servers)
	}
	s := m.Servers[0]
	url := s.URL
	for _, name := range regexp.MustCompile(`\{([^}]*)\}`).FindAllStringSubmatch(s.URL, -1) {
		v := s.Variables.GetOrZero(name[1])
		if v == nil || v.Default == "" {
			t.Errorf("%s: {%s} is not a server variable with a default", s.URL, name[1])
			continue
		}
		if len(v.Enum) > 0 && !slices.Contains(v.Enum, v.Default) {
			t.Errorf("%s: {%s}'s default %q is not one of %q", s.URL, name[1], v.Default, v.Enum)
		}
		url = strings.ReplaceAll(url, name[0], v.Default)
	}
	if u, err := neturl.Parse(url); err != nil || u.Scheme != "https" || u.Host == "" || u.Path != "" {
		t.Errorf("%s with its defaults is %q, not an https URL of a host", s.URL, url)
	}
	for name := range s.Variables.KeysFromOldest() {
		if !strings.Contains(s.URL, "{"+name+"}") {
			t.Errorf("%s: variable %s is not in the URL", s.URL, name)
		}
	}
	if c := m.Info.Contact; c == nil || c.URL != url+"/docs" {
		t.Errorf("contact %+v, want the /docs of %s", c, url)
	}
}

// TestEveryWriteOperationHasARequestExample: twelve write operations had
// none; TestOpenAPIExamplesMatchTheirSchemas checks each against its
// schema.
func TestEveryWriteOperationHasARequestExample(t *testing.T) {
	t.Parallel()
	for _, o := range documentedOperations(t, openAPIModel(t)) {
		if o.op.RequestBody == nil {
			continue
		}
		mt := o.op.RequestBody.Content.GetOrZero("application/json")
		if mt == nil || mt.Examples == nil || mt.Examples.Len() == 0 {
			t.Errorf("%s %s (%s): no request example", o.method, o.path, o.name)
		}
	}
}
