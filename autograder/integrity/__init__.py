"""Integrity: the clean re-verification, the prediction record's rules, the hub's ledger, possible copies."""
