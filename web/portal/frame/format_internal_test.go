package frame

import "testing"

func TestCSVCellDefusesFormulas(t *testing.T) {
	for in, want := range map[string]string{
		"=1+1": "'=1+1", "+44 20": "'+44 20", "-2": "'-2", "@SUM(A1)": "'@SUM(A1)", "\t=x": "'\t=x", "\r=x": "'\r=x",
		"Sandbox Ltd": "Sandbox Ltd", "": "", "a=b": "a=b", "'=x": "'=x",
		"-12.50": "-12.50", "12.50": "12.50", "-12.5": "'-12.5", "-1.00+2": "'-1.00+2",
	} {
		if got := csvCell(in); got != want {
			t.Errorf("csvCell(%q) = %q, want %q", in, got, want)
		}
	}
}
