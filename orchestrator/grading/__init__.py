"""Phase 7: running the tests, parsing their logs, classifying and aggregating results."""
