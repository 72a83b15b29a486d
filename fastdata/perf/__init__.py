"""Measuring loaders: process-tree resource use, throughput, a settings search, and the input-bound doctor."""
