package emi

import "testing"

func TestTransferSettlementRules(t *testing.T) {
	for _, c := range []struct {
		status             string
		complete, returnIt bool
	}{
		{TransferPending, true, true},
		{TransferCompleted, false, true},
		{TransferReturned, false, false},
	} {
		tr := Transfer{Type: TransferOutgoing, Status: c.status}
		if tr.CanComplete() != c.complete || tr.CanReturn() != c.returnIt {
			t.Errorf("%s: CanComplete %v, CanReturn %v", c.status, tr.CanComplete(), tr.CanReturn())
		}
	}
}
