"""Which samples each rank reads, in which order: weighted mixtures (mixture.py) and resuming on another
number of ranks (elastic.py), shared by every kind."""
