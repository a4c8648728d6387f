"""Reference engine: a small DSA + MTP model in PyTorch and its MRV2-style speculative decoder."""
