"""The n-gram channel (the wide part): NB ratios, n-gram features, cross-fitting and the mix."""
