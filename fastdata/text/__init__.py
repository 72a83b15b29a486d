"""Token sequences: memory-mapped Arrow token shards -> length-bucketed or packed PyTorch batches."""
