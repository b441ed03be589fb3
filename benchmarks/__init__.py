"""Benchmarks: measured figures with the hardware and the command that produced them."""
