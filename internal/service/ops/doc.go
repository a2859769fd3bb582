// Package ops works across the areas: the compliance alert queue over
// applications' and AML checks' hits (Alerts), scheduled maintenance
// (Maintenance), re-sealing every secret under a new key (Rekeyer), and the
// sandbox's scripted outcomes (SandboxOutcomes). It may import every area;
// no area imports it.
package ops
