"""Cross-framework conformance suite for gradient and regularization semantics."""
