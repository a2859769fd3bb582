// Package people is the customers and their screening: users (Users),
// AML checks and sanctions screening, re-screening on list updates and the
// two-person false-positive rule (AML), the watch list (Watchlist), the
// ongoing screening of onboarded merchants (MerchantScreening), KYC sessions
// (KYC) and identity documents. It imports the kernel and staff (controls).
package people
