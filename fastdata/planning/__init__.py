"""Which samples each rank reads, in which order: weighted mixtures (mixture.py), resuming on another
number of ranks (elastic.py) and subsets of a split (subset.py), shared by every kind."""
