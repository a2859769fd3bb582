package kernel

import (
	"fmt"
	"reflect"
	"strings"

	"emi/internal/emi"
)

// Services are built by New<Service>(<Service>Deps): every dependency is a
// named field of one struct, nothing is installed after construction (no
// setters), and the composition root (internal/app) builds the services in
// dependency order. A service that needs another's data through a cycle
// depends on a narrow interface of a store instead of on the service.
//
// MustHave panics, naming the service and the fields, when a required
// dependency in deps (a struct) is nil: a wiring mistake stops emi at
// startup instead of panicking on nil at first use. A pointer, interface,
// func or channel field is required unless tagged `deps:"optional"`, whose
// doc comment says what nil means; other fields (flags, durations,
// configuration structs) are never checked.
func MustHave(service string, deps any) {
	v := reflect.ValueOf(deps)
	t := v.Type()
	var missing []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Tag.Get("deps") == "optional" {
			continue
		}
		switch f.Type.Kind() {
		case reflect.Pointer, reflect.Interface, reflect.Func, reflect.Chan:
			if v.Field(i).IsNil() {
				missing = append(missing, f.Name)
			}
		}
	}
	if len(missing) > 0 {
		area := t.PkgPath()[strings.LastIndex(t.PkgPath(), "/")+1:]
		panic(fmt.Sprintf("%s.New%s: missing %sDeps.%s", area, service, service, strings.Join(missing, ", ")))
	}
}

// StructValidator validates a struct's tags, reporting its problems as
// field errors of the given catalogue error (*validate.Validator).
type StructValidator interface {
	Struct(any, *emi.Error) error
}
