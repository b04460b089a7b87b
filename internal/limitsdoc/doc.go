// Package limitsdoc keeps docs/limits.md honest: its test checks each row's value against
// the constant the row names (and with -update writes them), and that every exported Max…
// and Min… constant of the module is documented. It has no code of its own.
package limitsdoc
