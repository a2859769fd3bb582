package postgres

import "testing"

func TestWithBinaryParameters(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// URLs: added after the user's options, which stay as written.
		{"postgres://u:p%40ss@h:5432/db", "postgres://u:p%40ss@h:5432/db?binary_parameters=yes"},
		{"postgresql://h/db?sslmode=disable", "postgresql://h/db?sslmode=disable&binary_parameters=yes"},
		{"postgres://h/db?", "postgres://h/db?binary_parameters=yes"},
		{"postgres://h/db?sslmode=disable&application_name=a%20b#x", "postgres://h/db?sslmode=disable&application_name=a%20b&binary_parameters=yes#x"},
		// The user's own setting wins, whatever it is.
		{"postgres://h/db?binary_parameters=no", "postgres://h/db?binary_parameters=no"},
		{"postgres://h/db?sslmode=disable&binary_parameters=yes", "postgres://h/db?sslmode=disable&binary_parameters=yes"},
		// key=value strings.
		{"", "binary_parameters=yes"},
		{"host=h dbname=db sslmode=disable", "host=h dbname=db sslmode=disable binary_parameters=yes"},
		{"host=h binary_parameters=no", "host=h binary_parameters=no"},
		{"host=h binary_parameters = off", "host=h binary_parameters = off"},
		// The option's name inside a quoted value is not the option.
		{`host=h password='a binary_parameters=no \' b'`, `host=h password='a binary_parameters=no \' b' binary_parameters=yes`},
		// Malformed strings are left for lib/pq to report.
		{"host=h password='open", "host=h password='open"},
		{"host", "host"},
		{"postgres://h/db?%zz", "postgres://h/db?%zz"},
	} {
		if got := withBinaryParameters(tc.in); got != tc.want {
			t.Errorf("withBinaryParameters(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestJSONText(t *testing.T) {
	if v := jsonText(nil); v != nil {
		t.Errorf("jsonText(nil) = %#v, want nil (NULL)", v)
	}
	if v := jsonText([]byte(`{"a":1}`)); v != `{"a":1}` {
		t.Errorf("jsonText = %#v, want the JSON as a string", v)
	}
}
