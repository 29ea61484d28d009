"""HTTP routes: thin wrappers over the plain functions (docs/api.md is the contract)."""
